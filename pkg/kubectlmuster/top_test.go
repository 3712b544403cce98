package kubectlmuster

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

func TestTopRows(t *testing.T) {
	group := func(ns, name string, phase v1alpha1.PodGroupPhase, admitted *metav1.Condition, placed ...string) v1alpha1.PodGroup {
		pg := v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Status: v1alpha1.PodGroupStatus{Phase: phase}}
		if admitted != nil {
			pg.Status.Conditions = []metav1.Condition{*admitted}
		}
		for _, uid := range placed {
			pg.Status.Placements = append(pg.Status.Placements, v1alpha1.PodPlacement{Pod: uid, UID: types.UID(uid), Node: "n1"})
		}
		return pg
	}
	pod := func(ns, group, name, cpu string, mod func(*corev1.Pod)) corev1.Pod {
		p := corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(name), Labels: map[string]string{scheduling.PodGroupLabel: group}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}},
		}
		mod(&p)
		return p
	}
	bound := func(p *corev1.Pod) { p.Spec.NodeName, p.Status.Phase = "n1", corev1.PodRunning }
	gated := func(p *corev1.Pod) {
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: scheduling.AdmissionGate}}
	}
	done := func(p *corev1.Pod) { p.Spec.NodeName, p.Status.Phase = "n1", corev1.PodSucceeded }
	fits := &metav1.Condition{Type: v1alpha1.ConditionAdmitted, Status: metav1.ConditionTrue, Reason: scheduling.ReasonGangFits}
	short := &metav1.Condition{Type: v1alpha1.ConditionAdmitted, Status: metav1.ConditionFalse, Reason: scheduling.ReasonInsufficientCapacity}

	groups := []v1alpha1.PodGroup{
		group("a", "runs", v1alpha1.PodGroupRunning, fits),
		group("a", "waits", v1alpha1.PodGroupPending, short),
		group("a", "placed", v1alpha1.PodGroupPending, fits, "placed-0"),
		group("a", "old", v1alpha1.PodGroupSucceeded, fits),
		group("b", "fresh", "", nil),
	}
	pods := []corev1.Pod{
		pod("a", "runs", "runs-0", "2", bound), pod("a", "runs", "runs-1", "2", bound),
		pod("a", "waits", "waits-0", "3", gated), pod("a", "waits", "waits-1", "3", gated),
		pod("a", "placed", "placed-0", "1", gated),
		pod("a", "old", "old-0", "5", done),
		pod("b", "fresh", "fresh-0", "1", gated),
	}
	var got []string
	for _, r := range topRows(groups, pods) {
		got = append(got, fmt.Sprintf("%s|%s|%d|%d|%s|%s", r.namespace, r.state, r.groups, r.pods, resources(r.holds), resources(r.wants)))
	}
	want := []string{
		// Placed gated pods hold their room; finished pods hold nothing.
		"a|Admitted|2|3|cpu 5|-",
		"a|Waiting: InsufficientCapacity|1|2|-|cpu 6",
		"a|Finished|1|0|-|-",
		"b|New|1|1|-|-",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("top rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
