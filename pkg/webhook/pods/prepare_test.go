package pods

import (
	"reflect"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/podtest"
	"github.com/muster-dev/muster/pkg/manifests"
)

// TestPrepare checks that Prepare is the webhooks as kube-apiserver meets
// them: the mutating webhook's patch, then the validating webhook on the
// patched pod; and, for every pod admitted, that the pod is the one the
// handler's own answer makes, so that the two cannot drift.
func TestPrepare(t *testing.T) {
	const group, gate, fin, managed = scheduling.PodGroupLabel, scheduling.AdmissionGate, scheduling.TrackingFinalizer, scheduling.ManagedLabel
	tests := []struct {
		name string
		pod  *corev1.Pod
		want prepared
		// wantWarn is a substring of the one warning, when one is expected.
		wantWarn string
		// wantErrs are the refusals, by type and field; the pod is nil.
		wantErrs []want
	}{
		{
			name: "a pod without the group label is admitted unchanged",
			pod:  podtest.Pod(podtest.Label("app", "x")),
			want: prepared{Labels: map[string]string{"app": "x"}},
		},
		{
			name: "a pod of a group gets the gate, the finalizer and the managed label",
			pod:  podtest.Pod(podtest.InGroup("train"), podtest.WithFinalizers("example.com/keep")),
			want: prepared{Labels: map[string]string{group: "train", managed: "true"}, Finalizers: []string{"example.com/keep", fin}, Gates: []string{gate}},
		},
		{
			name: "a pod grouped by instance is named after its Job",
			pod: podtest.Pod(podtest.InGroup("trainer-job"), podtest.Label(jobNameLabel, "trainer-job-2"),
				podtest.Annotation(scheduling.GroupByAnnotation, scheduling.GroupByInstance)),
			want: prepared{Labels: map[string]string{group: "trainer-job-2", jobNameLabel: "trainer-job-2", managed: "true"}, Finalizers: []string{fin}, Gates: []string{gate}},
		},
		{
			name: "validation sees the patched pod: a placeholder group name replaced by the instance's is valid",
			pod: podtest.Pod(podtest.InGroup("Not_A_Name"), podtest.Label(jobNameLabel, "train"),
				podtest.Annotation(scheduling.GroupByAnnotation, scheduling.GroupByInstance)),
			want: prepared{Labels: map[string]string{group: "train", jobNameLabel: "train", managed: "true"}, Finalizers: []string{fin}, Gates: []string{gate}},
		},
		{
			name:     "a pod bound at creation is admitted ungated, with the webhook's warning",
			pod:      podtest.Pod(podtest.InGroup("train"), podtest.OnNode("node-1")),
			want:     prepared{Labels: map[string]string{group: "train"}},
			wantWarn: `spec.nodeName "node-1"`,
		},
		{
			name:     "the mutating webhook's refusal: a pod grouped by labels it lacks",
			pod:      podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.GroupByAnnotation, "example.com/run")),
			wantErrs: []want{required("metadata.labels")},
		},
		{
			name:     "the validating webhook's refusal: a group label that is not a name",
			pod:      podtest.Pod(podtest.InGroup("Not_A_Name")),
			wantErrs: []want{invalid(groupField)},
		},
		{
			name:     "the validating webhook's refusal of an annotation",
			pod:      podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.MinCountAnnotation, "0")),
			wantErrs: []want{invalid(minCountField)},
		},
		{
			name:     "the validating webhook checks what the patch added: the gate past the bound",
			pod:      podtest.Pod(podtest.InGroup("train"), withGatesAndFinalizers(scheduling.MaxPodSchedulingGates, 0)),
			wantErrs: []want{{field.ErrorTypeTooMany, "spec.schedulingGates"}},
		},
	}
	h := NewHandler(klog.Background())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.pod.DeepCopy()
			got, warnings, errs := Prepare(tt.pod)
			if !equality.Semantic.DeepEqual(tt.pod, before) {
				t.Errorf("Prepare changed its input:\n got %+v\nwant %+v", tt.pod, before)
			}
			switch {
			case tt.wantWarn == "" && len(warnings) > 0:
				t.Errorf("unexpected warnings %q", warnings)
			case tt.wantWarn != "" && (len(warnings) != 1 || !strings.Contains(warnings[0], tt.wantWarn)):
				t.Errorf("warnings = %q, want one containing %q", warnings, tt.wantWarn)
			}
			if tt.wantErrs != nil {
				expectErrors(t, errs, tt.wantErrs...)
				if got != nil {
					t.Errorf("a refused pod was returned: %+v", got)
				}
				return
			}
			if len(errs) > 0 {
				t.Fatalf("unexpected refusal: %v", errs)
			}
			if p := preparedOf(got); !reflect.DeepEqual(p, tt.want) {
				t.Errorf("prepared pod:\n got %+v\nwant %+v", p, tt.want)
			}

			// The handler's answer for the same pod makes the same pod.
			resp := response(t, post(h, manifests.MutatePath, "application/json",
				strings.NewReader(string(reviewRequest(t, admissionv1.Create, tt.pod, nil)))))
			if !resp.Allowed {
				t.Fatalf("the handler refused what Prepare admitted: %+v", resp.Result)
			}
			fromHandler := tt.pod
			if resp.Patch != nil {
				fromHandler = applyPatch(t, tt.pod, resp.Patch)
			}
			if !equality.Semantic.DeepEqual(got, fromHandler) {
				t.Errorf("Prepare and the handler disagree:\n Prepare %+v\n handler %+v", got, fromHandler)
			}
		})
	}
}
