package podgroup

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
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

// withPriority gives the pod a resolved priority, as admission does.
func withPriority(prio int32) podMod {
	return func(p *corev1.Pod) { p.Spec.Priority = &prio }
}

// TestSyncCompletesPartialPreemption: when kube-scheduler preempted a pod
// of an admitted gang, Muster preempts the rest of it, so that the gang does
// not run on short, as --complete-scheduler-preemption allows: by default
// only when the pod preempted for is one Muster released (pinned to the
// node, unbound, of higher priority, of another group). Any other
// disruption, or one of an earlier admission, changes nothing.
func TestSyncCompletesPartialPreemption(t *testing.T) {
	admittedHourAgo := t0.Add(-time.Hour)
	scheduler := disruptedAt(corev1.PodReasonPreemptionByScheduler, t0)
	// waiting is a released pod of another group, pinned to the gang's
	// node (running puts a pod on node-1) and unbound.
	waiting := func(prio int32) *corev1.Pod {
		return newPod("preemptor", inGroup("other"), ungated, pinnedTo("node-1"), withPriority(prio))
	}
	tests := []struct {
		name      string
		policy    string // --complete-scheduler-preemption; "" is the default
		hit       podMod
		others    []*corev1.Pod // pods beside the group's
		preempted bool          // the group is preempted and r0, r1 are evicted
		partly    bool          // a PartlyPreempted event says the gang is left short
	}{
		{name: "kube-scheduler preempted one pod for a pod Muster released: the rest are evicted and the gang waits whole",
			hit: scheduler, others: []*corev1.Pod{waiting(1000)}, preempted: true},
		{name: "for a pod Muster did not release: the gang is left running, and told so",
			hit: scheduler, others: []*corev1.Pod{newPod("theirs", onNode("other"), withPriority(1000), func(p *corev1.Pod) { delete(p.Labels, scheduling.PodGroupLabel) })}, partly: true},
		{name: "a released pod pinned there at no higher priority is not what it was preempted for",
			hit: scheduler, others: []*corev1.Pod{waiting(0)}, partly: true},
		{name: "Always: for any pod",
			policy: CompleteAlways, hit: scheduler, preempted: true},
		{name: "Never: not even for a pod Muster released",
			policy: CompleteNever, hit: scheduler, others: []*corev1.Pod{waiting(1000)}, partly: true},
		{name: "in the second of the admission: of this admission",
			policy: CompleteAlways, hit: disruptedAt(corev1.PodReasonPreemptionByScheduler, admittedHourAgo.Truncate(time.Second)), preempted: true},
		{name: "a preemption from before the gang was last admitted changes nothing",
			policy: CompleteAlways, hit: disruptedAt(corev1.PodReasonPreemptionByScheduler, admittedHourAgo.Add(-time.Minute))},
		{name: "an eviction through the Eviction API is not a preemption",
			policy: CompleteAlways, hit: disruptedAt("EvictionByEvictionAPI", t0)},
		{name: "a pod deleted without a disruption changes nothing",
			policy: CompleteAlways, hit: func(*corev1.Pod) {}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pg := newGroup(3, admittedAt(admittedHourAgo), scheduledAt(admittedHourAgo))
			objs := append(objects(pg,
				newPod("r0", running), newPod("r1", running),
				newPod("hit", running, tc.hit, deletedAt(t0.Add(30*time.Second)))),
				newNode("node-1", "64"), newNode("other", "64"))
			for _, p := range tc.others {
				objs = append(objs, p)
			}
			h := newHarness(t, func(c *Config) {
				c.Admission = AdmissionCapacity // the mode that knows which pods it released
				if tc.policy != "" {
					c.CompleteSchedulerPreemption = tc.policy
				}
			}, objs...)
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
			partly := slices.ContainsFunc(h.events(), func(e string) bool {
				return strings.HasPrefix(e, "Warning "+scheduling.EventPartlyPreempted+" kube-scheduler preempted its pod hit, which ran on node node-1, for a pod of higher priority that Muster did not release")
			})
			if partly != tc.partly {
				t.Errorf("a %s event = %v, want %v; events %q", scheduling.EventPartlyPreempted, partly, tc.partly, h.events())
			}
		})
	}
}
