package manifests

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// TestUpdateBoundsInBytes runs muster-pod-labels on updates of a gated,
// labelled pod: Muster's annotations and the required node affinity are
// measured in bytes of UTF-8, so that characters of several bytes cannot
// pass the bounds, and only an update that makes them larger is held to
// them.
func TestUpdateBoundsInBytes(t *testing.T) {
	base := func() *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p",
				Labels:      map[string]string{scheduling.PodGroupLabel: "g", scheduling.ManagedLabel: "true"},
				Annotations: map[string]string{scheduling.MinCountAnnotation: "2"}},
			Spec: corev1.PodSpec{
				SchedulingGates: []corev1.PodSchedulingGate{{Name: scheduling.AdmissionGate}},
				Containers:      []corev1.Container{{Name: "c", Image: "i"}},
			},
		}
	}
	// 4-byte characters: within the bound in code points, 4 times over it in bytes.
	wide := strings.Repeat("\U0001F600", scheduling.MaxPodMusterAnnotationBytes/2)
	template := func(pad string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Annotations[scheduling.RolesTemplateAnnotation] = `[{"name":"w","count":1,"template":{}}]` + pad
		}
	}
	// hosts is a required node affinity to n hosts, each named by a value
	// of size characters.
	hosts := func(n, size int) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			values := make([]string, n)
			for i := range values {
				values[i] = fmt.Sprintf("%0*d", size, i)
			}
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: values}}}},
			}}}
		}
	}
	tests := []struct {
		name        string
		old, change func(*corev1.Pod)
		want        string
	}{
		{name: "a short roles template is allowed", change: template("")},
		{name: "a roles template of 32Ki 4-byte characters is refused", change: template(wide),
			want: "metadata.annotations: Too long: Muster's annotations are 131"},
		{name: "annotations stored over the bound may stay", old: template(wide), change: func(p *corev1.Pod) { p.Annotations[scheduling.MinCountAnnotation] = "3" }},
		{name: "annotations stored over the bound may not grow", old: template(wide), change: template(wide + "x"), want: "metadata.annotations: Too long"},
		{name: "a node affinity to 20 hosts is allowed", change: hosts(20, 10)},
		{name: "a node affinity to 20,000 one-character hosts is refused", change: hosts(20000, 1),
			want: "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution: Too long: about"},
		{name: "a node affinity stored over the bound may be narrowed", old: hosts(20000, 1), change: hosts(100, 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := base()
			if tt.old != nil {
				tt.old(old)
			}
			pod := old.DeepCopy()
			tt.change(pod)
			_, denied := evalPolicy(t, LabelsPolicy(), policyRequest{op: admission.Update, object: pod, oldObject: old, user: &user.DefaultInfo{Name: "tenant"}})
			switch {
			case tt.want == "" && len(denied) > 0:
				t.Errorf("denied: %v", denied)
			case tt.want != "" && (len(denied) != 1 || !strings.HasPrefix(denied[0], tt.want)):
				t.Errorf("denied with %q, want one denial starting %q", denied, tt.want)
			}
		})
	}
}
