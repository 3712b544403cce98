package server

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/cert"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/manifests"
)

// parseWebhookOnly parses, completes and validates args after
// --webhook-only.
func parseWebhookOnly(t *testing.T, args ...string) (*Options, error) {
	t.Helper()
	o := NewOptions()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(append([]string{"--webhook-only"}, args...)); err != nil {
		t.Fatalf("parsing flags: %v", err)
	}
	if err := o.Complete(fs); err != nil {
		return o, err
	}
	return o, o.Validate()
}

// TestWebhookOnlyValidation: webhook-only mode needs a port and a
// certificate in files, and nothing of the API: no etcd, no data dir.
func TestWebhookOnlyValidation(t *testing.T) {
	files := []string{"--tls-cert-file=/c.crt", "--tls-private-key-file=/c.key"}
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "a port and a certificate are all it needs", args: files},
		{name: "no port", args: append([]string{"--webhook-port=0"}, files...), wantErr: "--webhook-port must not be 0"},
		{name: "no certificate", wantErr: "needs --tls-cert-file and --tls-private-key-file"},
		{name: "not standalone", args: append([]string{"--standalone"}, files...), wantErr: "--webhook-only and --standalone exclude each other"},
		{name: "no certificate management of its own", args: append([]string{"--cert-management=internal"}, files...), wantErr: "--cert-management=internal belongs to the API's replicas"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseWebhookOnly(t, tc.args...)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("validate: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("validate = %v, want an error containing %q", err, tc.wantErr)
			}
			if tc.wantErr == "" && (o.Controller.Enabled || o.embeddedEtcdURL != "") {
				t.Errorf("webhook-only mode runs the controller (%v) or an embedded etcd (%q)", o.Controller.Enabled, o.embeddedEtcdURL)
			}
		})
	}
}

// TestWebhookOnlyServesTheWebhook runs webhook-only mode on a certificate
// in files: it is ready at once, gates a labelled pod, serves only a
// caller with a client certificate from --webhook-client-ca-file, and
// serves a certificate written over the old one (a mounted Secret rotated)
// without a restart.
func TestWebhookOnlyServesTheWebhook(t *testing.T) {
	dir := t.TempDir()
	writeCert := func(host string) []byte {
		certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey(host, []net.IP{net.ParseIP("127.0.0.1")}, nil)
		if err != nil {
			t.Fatal(err)
		}
		// Written as the kubelet updates a Secret volume: whole files.
		for name, b := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM} {
			tmp := filepath.Join(dir, name+".tmp")
			if err := os.WriteFile(tmp, b, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}
		return certPEM
	}
	first := writeCert("first.example")
	ca := newTestCA(t, "kube-apiserver-client-ca")
	caFile := filepath.Join(dir, "client-ca.crt")
	if err := os.WriteFile(caFile, ca.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o, err := parseWebhookOnly(t, "--tls-cert-file="+filepath.Join(dir, "tls.crt"), "--tls-private-key-file="+filepath.Join(dir, "tls.key"),
		"--webhook-client-ca-file="+caFile)
	if err != nil {
		t.Fatal(err)
	}
	o.Webhook.Listener = l
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, o) }()
	t.Cleanup(func() { cancel(); <-done })

	client := func(roots []byte, withCert bool) *http.Client {
		pool, err := cert.NewPoolFromBytes(roots)
		if err != nil {
			t.Fatal(err)
		}
		cfg := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
		if withCert {
			cfg.Certificates = []tls.Certificate{ca.client(t, "kube-apiserver")}
		}
		return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
	}
	addr := l.Addr().String()
	if err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		resp, err := client(first, false).Get("https://" + addr + "/readyz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	}); err != nil {
		t.Fatalf("/readyz never answered 200: %v", err)
	}

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{scheduling.PodGroupLabel: "g"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	raw, _ := json.Marshal(pod)
	review, _ := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "u1", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, Namespace: "ns", Name: "p",
			Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw}},
	})
	if code, body, err := post(client(first, false), addr, manifests.MutatePath, string(review)); err != nil || code != http.StatusUnauthorized {
		t.Errorf("a review without a client certificate: %d %s %v, want 401", code, body, err)
	}
	code, body, err := post(client(first, true), addr, manifests.MutatePath, string(review))
	if err != nil || code != http.StatusOK {
		t.Fatalf("kube-apiserver's review: %d %s %v", code, body, err)
	}
	var got admissionv1.AdmissionReview
	if err := json.Unmarshal([]byte(body), &got); err != nil || got.Response == nil {
		t.Fatalf("decoding the answer %s: %v", body, err)
	}
	if !got.Response.Allowed || !strings.Contains(string(got.Response.Patch), scheduling.AdmissionGate) {
		t.Errorf("the labelled pod was not gated: allowed %v, patch %s", got.Response.Allowed, got.Response.Patch)
	}

	// The Secret rotated: the new certificate is served, the old no longer.
	second := writeCert("second.example")
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		resp, err := client(second, false).Get("https://" + addr + "/livez")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return true, nil
	}); err != nil {
		t.Fatalf("the rewritten certificate was never served: %v", err)
	}
}
