package server

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ref "k8s.io/client-go/tools/reference"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// TestEventSchemeReferencesEveryKindWithEvents checks that the recorder's
// scheme can make an object reference of each kind the controller records
// events about; without one, the recorder drops the event ("no kind is
// registered for the type v1.Pod").
func TestEventSchemeReferencesEveryKindWithEvents(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "x", Namespace: "ns", UID: "uid-x"}
	cases := []struct {
		name           string
		obj            runtime.Object
		wantAPIVersion string
		wantKind       string
	}{
		{"a pod, told why it stays gated", &corev1.Pod{ObjectMeta: meta}, "v1", "Pod"},
		{"a PodGroup, told it was admitted", &v1alpha1.PodGroup{ObjectMeta: meta}, v1alpha1.SchemeGroupVersion.String(), "PodGroup"},
	}
	scheme := eventScheme()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ref.GetReference(scheme, tc.obj)
			if err != nil {
				t.Fatalf("GetReference: %v", err)
			}
			if r.APIVersion != tc.wantAPIVersion || r.Kind != tc.wantKind || r.Name != "x" || r.Namespace != "ns" || r.UID != "uid-x" {
				t.Errorf("reference %+v, want %s %s ns/x uid-x", r, tc.wantAPIVersion, tc.wantKind)
			}
		})
	}
}
