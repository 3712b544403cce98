package podgroup

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// disruptedAt marks a pod with DisruptionTarget of reason at time at.
func disruptedAt(reason string, at time.Time) podMod {
	return func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
			Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: reason, LastTransitionTime: metav1.NewTime(at),
		})
	}
}

// TestSyncCompletesPartialPreemption: when kube-scheduler preempted a pod
// of an admitted gang, Muster preempts the rest of it, so that the gang does
// not run on short; any other disruption, or one of an earlier admission,
// changes nothing.
func TestSyncCompletesPartialPreemption(t *testing.T) {
	admittedHourAgo := t0.Add(-time.Hour)
	tests := []struct {
		name      string
		hit       podMod
		unbound   bool
		preempted bool // the group is preempted and r0, r1 are evicted
	}{
		{name: "kube-scheduler preempted one pod: the rest are evicted and the gang waits whole",
			hit: disruptedAt(corev1.PodReasonPreemptionByScheduler, t0), preempted: true},
		{name: "in the second of the admission: of this admission",
			hit: disruptedAt(corev1.PodReasonPreemptionByScheduler, admittedHourAgo.Truncate(time.Second)), preempted: true},
		{name: "a preemption from before the gang was last admitted changes nothing",
			hit: disruptedAt(corev1.PodReasonPreemptionByScheduler, admittedHourAgo.Add(-time.Minute))},
		{name: "an eviction through the Eviction API is not a preemption",
			hit: disruptedAt("EvictionByEvictionAPI", t0)},
		{name: "a pod deleted without a disruption changes nothing",
			hit: func(*corev1.Pod) {}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pg := newGroup(3, admittedAt(admittedHourAgo), scheduledAt(admittedHourAgo))
			h := newHarness(t, nil, objects(pg,
				newPod("r0", ungated, onNode("n"), running), newPod("r1", ungated, onNode("n"), running),
				newPod("hit", ungated, onNode("n"), running, tc.hit, deletedAt(t0.Add(30*time.Second))))...)
			h.sync()
			calls := h.mutations()
			for _, name := range []string{"r0", "r1"} {
				status, del := slices.Index(calls, "patch pods/status "+name), slices.Index(calls, "delete pods "+name)
				evicted := status >= 0 && del > status
				if evicted != tc.preempted {
					t.Errorf("%s evicted (marked, then deleted) = %v, want %v; calls %q", name, evicted, tc.preempted, calls)
				}
			}
			if slices.Contains(calls, "patch pods/status hit") {
				t.Errorf("calls %q: the pod kube-scheduler preempted is left to it", calls)
			}
			got := h.group()
			c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionPreempted)
			admitted := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionAdmitted)
			if tc.preempted {
				if c == nil || c.Status != metav1.ConditionTrue || c.Reason != corev1.PodReasonPreemptionByScheduler {
					t.Errorf("Preempted = %+v, want True/%s", c, corev1.PodReasonPreemptionByScheduler)
				}
				if admitted == nil || admitted.Status != metav1.ConditionFalse {
					t.Errorf("Admitted = %+v, want False while the gang is evicted", admitted)
				}
				if !slices.ContainsFunc(h.events(), func(e string) bool { return e == "Warning Preempted "+c.Message }) {
					t.Errorf("events %q: want a Preempted event saying why", h.events())
				}
			} else {
				if c != nil {
					t.Errorf("Preempted = %+v, want none", c)
				}
				if admitted == nil || admitted.Status != metav1.ConditionTrue {
					t.Errorf("Admitted = %+v, want still True", admitted)
				}
			}
		})
	}
}
