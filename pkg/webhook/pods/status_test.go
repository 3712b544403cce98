package pods

import (
	"bytes"
	"context"
	"encoding/pem"
	"net/http/httptest"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionv1beta1 "k8s.io/api/admission/v1beta1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/klog/v2"

	"github.com/muster-dev/muster/pkg/manifests"
)

// TestRefusalsReachTheUser calls the handler through kube-apiserver's own
// webhook client (k8s.io/apiserver's ClientManager, as the admission
// plugins build it): a request refused before any review comes back as an
// error whose message says why, which is what the user whose pod create
// failed reads.
func TestRefusalsReachTheUser(t *testing.T) {
	srv := httptest.NewTLSServer(NewHandler(klog.Background()))
	defer srv.Close()
	cm, err := webhookutil.NewClientManager(
		[]schema.GroupVersion{admissionv1beta1.SchemeGroupVersion, admissionv1.SchemeGroupVersion},
		admissionv1beta1.AddToScheme, admissionv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	resolver, err := webhookutil.NewDefaultAuthenticationInfoResolver("")
	if err != nil {
		t.Fatal(err)
	}
	cm.SetAuthenticationInfoResolver(resolver)
	cm.SetServiceResolver(webhookutil.NewDefaultServiceResolver())
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	tests := []struct {
		name string
		path string
		body []byte
		want string
	}{
		{"a body over the limit", manifests.MutatePath, bytes.Repeat([]byte(" "), MaxRequestBytes+1), "request body is larger than"},
		{"a review of another version", manifests.ValidatePath, []byte(`{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"x"}}`), "unsupported AdmissionReview version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, err := cm.HookClient(webhookutil.ClientConfig{Name: "test", URL: srv.URL + tt.path, CABundle: ca})
			if err != nil {
				t.Fatal(err)
			}
			var out admissionv1.AdmissionReview
			err = client.Post().SetHeader("Content-Type", "application/json").Body(tt.body).Do(context.Background()).Into(&out)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("the webhook client says %v, want the refusal's reason %q", err, tt.want)
			}
		})
	}
}
