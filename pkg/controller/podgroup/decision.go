package podgroup

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/controller/admission"
)

// admissionGroup is what the admission mode reads of a group in this sync:
// pg as steps 4 to 6 have decided it so far, and its pods as step 2
// classified them.
func admissionGroup(key scheduling.GroupKey, pg *v1alpha1.PodGroup, v *podView) admission.Group {
	return admission.Group{
		Key: key, PodGroup: pg, Pods: v.all, Gated: v.gatedPods,
		Present: v.pods, Active: v.active, RoleActive: v.roleActive,
	}
}

// recordDecision is where step 6 turns what the admission mode decided
// into pg's status, conditions and events; the mode itself writes nothing.
// It reports whether the gang is admitted (admit returns it). In order:
// the placements and reservations, the conditions the decision sets
// (CapacityReserved), a preemption, then the Admitted condition: True,
// with admissionTime, or False with the decision's reason, if it has one.
// Events and metrics follow the status write that records them.
func (c *Controller) recordDecision(pg *v1alpha1.PodGroup, v *podView, d admission.Decision, now time.Time) bool {
	if d.Places != nil {
		pg.Status.Placements, pg.Status.Reservations = d.Places.Placements, d.Places.Reservations
	}
	if d.EndPreemption {
		pg.Status.Preemption = nil
	}
	for _, cond := range d.Conditions {
		setCondition(pg, cond.Type, cond.Status, cond.Reason, cond.Message, now)
	}
	if len(d.Events) > 0 {
		events := d.Events
		v.onceWritten(func() {
			for _, e := range events {
				c.recorder.Event(pg, e.Type, e.Reason, e.Message)
			}
		})
	}
	if d.FromCycle {
		v.decisionApplied = true
	}
	switch {
	case d.Preemption != nil:
		// Carried out once written (preemption.go): no Waiting event, the
		// decision's own says it.
		pg.Status.Preemption = d.Preemption
		setCondition(pg, v1alpha1.ConditionAdmitted, metav1.ConditionFalse, d.Reason, d.Message, now)
		victims := len(d.Preemption.Victims)
		v.onceWritten(func() {
			c.metrics.preemptions.Inc()
			c.metrics.preemptionVictims.Add(float64(victims))
		})
		return false
	case !d.Admitted:
		if d.Reason != "" {
			c.setWaiting(pg, v, d.Reason, d.Message, now)
		}
		return false
	}
	setCondition(pg, v1alpha1.ConditionAdmitted, metav1.ConditionTrue, d.Reason, d.Message, now)
	t := metav1.NewTime(now)
	pg.Status.AdmissionTime = &t
	if meta.IsStatusConditionTrue(pg.Status.Conditions, v1alpha1.ConditionPreempted) {
		// Admitted again after a preemption: admissionTime moves forward,
		// which validation allows only then.
		setCondition(pg, v1alpha1.ConditionPreempted, metav1.ConditionFalse, scheduling.ReasonReadmitted, "admitted again after it was preempted", now)
	}
	msg := d.Message
	v.onceWritten(func() { c.recorder.Event(pg, corev1.EventTypeNormal, scheduling.EventAdmitted, msg) })
	return true
}

// setWaiting records why the group is not admitted: Admitted=False. The condition's message keeps
// the latest count; an event is recorded only when the reason changes, not
// for every pod that arrives.
func (c *Controller) setWaiting(pg *v1alpha1.PodGroup, v *podView, reason, msg string, now time.Time) {
	c.setNotAdmitted(pg, v, reason, msg, corev1.EventTypeNormal, scheduling.EventWaiting, now)
}

// setNotAdmitted is setWaiting with the event's type and reason: a Warning
// when only the user can end the wait.
func (c *Controller) setNotAdmitted(pg *v1alpha1.PodGroup, v *podView, reason, msg, eventType, eventReason string, now time.Time) {
	// The old reason is copied: setCondition changes the condition in place.
	oldReason := ""
	if old := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.ConditionAdmitted); old != nil {
		oldReason = old.Reason
	}
	setCondition(pg, v1alpha1.ConditionAdmitted, metav1.ConditionFalse, reason, msg, now)
	if oldReason != reason {
		v.onceWritten(func() { c.recorder.Event(pg, eventType, eventReason, msg) })
	}
}
