package apiserver

import (
	"encoding/json"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/manifests"
	"github.com/muster-dev/muster/test/integration/framework"
)

// TestPodWebhookIsServed posts AdmissionReviews to the webhook paths of the
// server's webhook listener over TLS, as kube-apiserver does.
func TestPodWebhookIsServed(t *testing.T) {
	ctx := testContext(t)
	s := framework.StartServer(t)
	webhookConfig := *s.Config
	webhookConfig.Host = s.WebhookURL
	raw, err := (&framework.Server{Config: &webhookConfig}).RawClient()
	if err != nil {
		t.Fatal(err)
	}
	review := func(path string, pod *corev1.Pod) *admissionv1.AdmissionResponse {
		t.Helper()
		podJSON, _ := json.Marshal(pod)
		body, _ := json.Marshal(&admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request: &admissionv1.AdmissionRequest{
				UID: "uid-1", Operation: admissionv1.Create, Namespace: "default", Name: pod.Name,
				Kind:     metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
				Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
				Object:   runtime.RawExtension{Raw: podJSON},
			},
		})
		out, err := raw.Post().AbsPath(path).SetHeader("Content-Type", "application/json").Body(body).DoRaw(ctx)
		if err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
		var resp admissionv1.AdmissionReview
		if err := json.Unmarshal(out, &resp); err != nil || resp.Response == nil {
			t.Fatalf("decoding review from %s: %v: %s", path, err, out)
		}
		if resp.Response.UID != "uid-1" {
			t.Errorf("response UID = %q, want uid-1", resp.Response.UID)
		}
		return resp.Response
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "w-0", Namespace: "default", Labels: map[string]string{scheduling.PodGroupLabel: "gang"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}},
	}
	mutated := review(manifests.MutatePath, pod)
	if !mutated.Allowed || !strings.Contains(string(mutated.Patch), scheduling.AdmissionGate) || !strings.Contains(string(mutated.Patch), scheduling.TrackingFinalizer) {
		t.Errorf("mutate: allowed=%v patch=%s, want the gate and the finalizer added", mutated.Allowed, mutated.Patch)
	}
	// The API's own port no longer serves it: kube-apiserver's calls never
	// share its priority and fairness or its anonymous authentication.
	api, err := s.RawClient()
	if err != nil {
		t.Fatal(err)
	}
	if err := api.Post().AbsPath(manifests.MutatePath).SetHeader("Content-Type", "application/json").Body([]byte("{}")).Do(ctx).Error(); !apierrors.IsNotFound(err) {
		t.Errorf("POST %s on the API's port: %v, want 404", manifests.MutatePath, err)
	}
	pod.Annotations = map[string]string{scheduling.MinCountAnnotation: "zero"}
	denied := review(manifests.ValidatePath, pod)
	if denied.Allowed || denied.Result == nil || !strings.Contains(denied.Result.Message, "metadata.annotations[scheduling.muster.dev/min-count]") {
		t.Errorf("validate: allowed=%v result=%+v, want a denial naming the annotation", denied.Allowed, denied.Result)
	}
}
