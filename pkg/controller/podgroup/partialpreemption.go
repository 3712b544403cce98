package podgroup

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// completePartialPreemption is step 6b: kube-scheduler preempts pod by pod, so
// when it preempted a pod of an admitted gang (DisruptionTarget with
// reason PreemptionByScheduler), the rest of the gang would run on short,
// the very waste a gang exists to prevent. Muster releases gangs only where
// kube-scheduler has no reason to preempt, but a pod Muster does not model,
// or a view of the cluster a moment behind kube-scheduler's, can still let
// it happen. The group is then preempted whole, as if by Muster:
// recordPreempted (decision.go) writes Preempted=True and Admitted=False
// with reason PreemptionByScheduler, dropping its placements and
// reservations, and step 9c evicts its released pods in this same sync. It
// waits whole again, as any preempted gang, and a Preempted event on the
// stored group says why. It reports whether it preempted the group.
//
// Completing is bounded by --complete-scheduler-preemption (completes):
// by default only a pod that Muster released makes a gang go whole, so
// that one pod of any PriorityClass above the gang's, which any tenant
// may create and pin to the gang's node, evicts that one pod and never the
// whole gang, in any namespace. A gang left short is told so once.
func (c *Controller) completePartialPreemption(key scheduling.GroupKey, stored, pg *v1alpha1.PodGroup, v *podView, now time.Time) bool {
	p := preemptedPartly(pg, v)
	if p == nil {
		return false
	}
	if !c.completes(p, key) {
		c.warnOnce(p.UID, scheduling.EventPartlyPreempted, func() {
			c.recorder.Eventf(stored, corev1.EventTypeWarning, scheduling.EventPartlyPreempted,
				"kube-scheduler preempted its pod %s, which ran on node %s, for a pod of higher priority that Muster did not release; "+
					"the rest of the gang is left running (--complete-scheduler-preemption=%s)", p.Name, p.Spec.NodeName, c.cfg.CompleteSchedulerPreemption)
		})
		return false
	}
	why := fmt.Sprintf("kube-scheduler preempted its pod %s, which ran on node %s, for a pod of higher priority", p.Name, p.Spec.NodeName)
	recordPreempted(pg, corev1.PodReasonPreemptionByScheduler, why,
		"; a gang runs whole or not at all, so its other released pods are evicted, and it waits whole again", now) // decision.go
	v.onceWritten(func() { c.recorder.Event(stored, corev1.EventTypeWarning, scheduling.EventPreempted, why) })
	return true
}

// completes is --complete-scheduler-preemption's rule for a pod of the
// group key that kube-scheduler preempted.
func (c *Controller) completes(p *corev1.Pod, key scheduling.GroupKey) bool {
	switch c.cfg.CompleteSchedulerPreemption {
	case CompleteAlways:
		return true
	case CompleteForReleased:
		return c.admitter.PreemptedForReleased(p, key)
	default:
		return false
	}
}

// preemptedPartly is what step 6b looks for: a pod of the admitted,
// unfinished, unpreempted group pg that kube-scheduler preempted since pg
// was last admitted, or nil.
func preemptedPartly(pg *v1alpha1.PodGroup, v *podView) *corev1.Pod {
	if !isAdmitted(pg) || isFinished(pg) || meta.IsStatusConditionTrue(pg.Status.Conditions, v1alpha1.ConditionPreempted) {
		return nil
	}
	return preemptedByScheduler(pg, v)
}

// preemptedByScheduler is a pod of the group that kube-scheduler preempted
// after the group was last admitted, or nil.
func preemptedByScheduler(pg *v1alpha1.PodGroup, v *podView) *corev1.Pod {
	var since time.Time
	if at := pg.Status.AdmissionTime; at != nil {
		since = at.Time
	}
	for _, p := range v.all {
		if p.Spec.NodeName == "" {
			continue // it never ran: its gang is not running short for it
		}
		c := disruption(p)
		if c == nil || c.Reason != corev1.PodReasonPreemptionByScheduler {
			continue
		}
		// Times are in seconds: a mark in the second of the admission is
		// of this admission.
		if !c.LastTransitionTime.Time.Before(since.Truncate(time.Second)) {
			return p
		}
	}
	return nil
}
