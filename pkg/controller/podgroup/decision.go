package podgroup

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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
		recordDomains(pg, d.Places)
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
			c.recordNotAdmitted(pg, v, waiting(d.Reason, d.Message), now)
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

// announce says on a group what the admission mode did for it outside a
// sync (admission.Announce): the mode says what happened, and the
// controller records it as an event on the PodGroup.
func (c *Controller) announce(key scheduling.GroupKey, uid types.UID, e admission.Event) {
	c.recorder.Event(groupRef(key, uid), e.Type, e.Reason, e.Message)
}

// groupRef is the PodGroup an event is about, when only its key and UID
// are at hand.
func groupRef(key scheduling.GroupKey, uid types.UID) *v1alpha1.PodGroup {
	return &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, UID: uid}}
}

// notAdmitted is a finding of step 6's own checks (admit.go) that the
// group is not admitted now, and why: they decide, and recordNotAdmitted
// writes what they decided, as recordDecision writes the mode's.
type notAdmitted struct {
	// reason and message are those of Admitted=False.
	reason, message string
	// eventType and eventReason are the event's, recorded only when the
	// reason changes: Normal/Waiting, or a Warning when only the user can
	// end the wait.
	eventType, eventReason string
	// restart sets Admitted=False anew when its reason changes, so that its
	// lastTransitionTime says when this wait began even if the group was
	// not admitted before (NoPods: the TTL is measured from it).
	restart bool
}

// waiting is a wait that ends by itself: a Normal Waiting event.
func waiting(reason, msg string) *notAdmitted {
	return &notAdmitted{reason: reason, message: msg, eventType: corev1.EventTypeNormal, eventReason: scheduling.EventWaiting}
}

// warning is a wait that only the user can end: a Warning event.
func warning(reason, msg, eventReason string) *notAdmitted {
	return &notAdmitted{reason: reason, message: msg, eventType: corev1.EventTypeWarning, eventReason: eventReason}
}

// recordNotAdmitted writes Admitted=False with n's reason and message. The
// condition's message keeps the latest count; the event is recorded only
// when the reason changes, not for every pod that arrives.
func (c *Controller) recordNotAdmitted(pg *v1alpha1.PodGroup, v *podView, n *notAdmitted, now time.Time) {
	// The old reason is copied: setCondition changes the condition in place.
	oldReason := ""
	if old := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.ConditionAdmitted); old != nil {
		oldReason = old.Reason
	}
	if n.restart && oldReason != "" && oldReason != n.reason {
		// Admitted was False already: only a new condition restarts its
		// lastTransitionTime.
		meta.RemoveStatusCondition(&pg.Status.Conditions, v1alpha1.ConditionAdmitted)
	}
	setCondition(pg, v1alpha1.ConditionAdmitted, metav1.ConditionFalse, n.reason, n.message, now)
	if oldReason != n.reason {
		eventType, eventReason, msg := n.eventType, n.eventReason, n.message
		v.onceWritten(func() { c.recorder.Event(pg, eventType, eventReason, msg) })
	}
}

// recordPreempted writes Preempted=True and Admitted=False, with reason and
// why (Admitted's message adds then), to a group, and drops its placements
// and reservations: its capacity goes to others, and it waits whole again.
// Its own sync then evicts its released pods (step 9c). Step 6b
// (partialpreemption.go) and step 9b (preemption.go) decide it.
func recordPreempted(pg *v1alpha1.PodGroup, reason, why, then string, now time.Time) {
	setCondition(pg, v1alpha1.ConditionPreempted, metav1.ConditionTrue, reason, why, now)
	setCondition(pg, v1alpha1.ConditionAdmitted, metav1.ConditionFalse, reason, why+then, now)
	pg.Status.Placements, pg.Status.Reservations = nil, nil
	if meta.IsStatusConditionTrue(pg.Status.Conditions, v1alpha1.ConditionCapacityReserved) {
		setCondition(pg, v1alpha1.ConditionCapacityReserved, metav1.ConditionFalse, reason, why, now)
	}
}

// recordRecovery writes what step 5b (restored.go) found missing from the
// group's counts: the counters raised to the counted pods that exist, and
// CountsRecovered=True saying by how many. Counted pods ran, so a group
// whose status lost its admission, and that has no group gates, is
// admitted again (reason AdmittedBeforeRestore).
func recordRecovery(pg *v1alpha1.PodGroup, r lostCounts, now time.Time) {
	pg.Status.Succeeded += r.succeeded
	pg.Status.Failed += r.failed
	setCondition(pg, v1alpha1.ConditionCountsRecovered, metav1.ConditionTrue, scheduling.ReasonCountedPodsMissing, fmt.Sprintf(
		"%d succeeded and %d failed pods that Muster had counted for this group were missing from its status, which is older "+
			"than Muster's writes (was Muster's etcd restored from a snapshot?); the counts now include them (%d succeeded, %d failed). "+
			"Pods counted and deleted since cannot be counted again, so the counts may be short",
		r.succeeded, r.failed, pg.Status.Succeeded, pg.Status.Failed), now)
	if r.readmit {
		setCondition(pg, v1alpha1.ConditionAdmitted, metav1.ConditionTrue, scheduling.ReasonAdmittedBeforeRestore,
			"pods Muster counted for this group ran, so it had been admitted before its status was restored", now)
		if pg.Status.AdmissionTime == nil {
			t := metav1.NewTime(now)
			pg.Status.AdmissionTime = &t
		}
	}
}

// recordDomains writes the topology domains a gang is admitted in into
// its status, where the pods that join it later are placed too; a gang
// admitted in none (or readmitted elsewhere) loses the old ones.
func recordDomains(pg *v1alpha1.PodGroup, p *admission.Places) {
	if !p.Domains {
		return
	}
	pg.Status.TopologyDomain = p.TopologyDomain.DeepCopy()
	for i := range pg.Status.Roles {
		pg.Status.Roles[i].TopologyDomain = nil
		if d, ok := p.RoleDomains[pg.Status.Roles[i].Name]; ok {
			pg.Status.Roles[i].TopologyDomain = d.DeepCopy()
		}
	}
}
