package podgroup

import (
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/controller/admission"
)

// statusUpdateOptions name the controller as the manager of what it writes.
var statusUpdateOptions = metav1.UpdateOptions{FieldManager: scheduling.ControllerName}

func equalStatus(a, b *v1alpha1.PodGroup) bool {
	return apiequality.Semantic.DeepEqual(a.Status, b.Status)
}

// decisionChanged reports whether b records a decision that a differs in.
// Only what decisionsOf lists, and a pod placed that a does not place, is a
// decision; everything else in status
// (the counters of existing pods, messages, observedGeneration and the
// derived phase) is a refresh that may wait for the batch period.
func decisionChanged(a, b *v1alpha1.PodGroup) bool {
	return !apiequality.Semantic.DeepEqual(decisionsOf(&a.Status), decisionsOf(&b.Status)) || placementsAdded(a, b)
}

// decisions are the parts of a status that record a decision, and must be
// written before any pod write acts on them. A new status field is a refresh
// until it is listed here; TestEveryStatusFieldIsClassified makes its author
// choose.
type decisions struct {
	// Conditions are admission, scheduling and finishing (with the start of
	// a replacement wait), without their messages and times.
	Conditions []conditionDecision
	// Succeeded, Failed, Preempted and Uncounted are the accounting counts
	// and lists.
	Succeeded, Failed, Preempted int32
	Uncounted                    *v1alpha1.UncountedTerminatedPods
	// Preemption is a preemption decided for the group, written before any
	// victim is touched (preemption.go).
	Preemption *v1alpha1.PodGroupPreemption
	// The timestamps are set once, when their decision is made.
	AdmissionTime, StartTime, CompletionTime *metav1.Time
	// Roles are each role's accounting (roles.go); its active pods are a refresh.
	Roles []roleDecision
	// Reservations are capacity held for pods not yet created
	// (capacityadmission/reservations.go), claimed in the write that places a pod.
	Reservations []v1alpha1.RoleReservation
	// TopologyDomain is the domain the gang was admitted in, where its
	// joiners are placed (capacityadmission/topology.go).
	TopologyDomain *v1alpha1.TopologyDomain
}

// conditionDecision is what of a condition is a decision.
type conditionDecision struct {
	Type, Reason string
	Status       metav1.ConditionStatus
}

func decisionsOf(s *v1alpha1.PodGroupStatus) decisions {
	d := decisions{
		Succeeded:      s.Succeeded,
		Failed:         s.Failed,
		Preempted:      s.Preempted,
		Uncounted:      s.UncountedTerminatedPods,
		Preemption:     s.Preemption,
		AdmissionTime:  s.AdmissionTime,
		StartTime:      s.StartTime,
		CompletionTime: s.CompletionTime,
	}
	for _, c := range s.Conditions {
		d.Conditions = append(d.Conditions, conditionDecision{Type: c.Type, Reason: c.Reason, Status: c.Status})
	}
	d.Roles = roleDecisions(s.Roles)
	d.Reservations = s.Reservations
	d.TopologyDomain = s.TopologyDomain
	return d
}

// setCounters is step 4: it copies the counts of existing pods into status.
func setCounters(pg *v1alpha1.PodGroup, v *podView) {
	s := &pg.Status
	s.Pods, s.Gated, s.Active, s.Scheduled, s.Ready = v.pods, v.gated, v.active, v.scheduled, v.ready
	setRoleCounters(pg, v)
}

// setCondition sets a condition, keeping lastTransitionTime when the status
// does not change, and reports whether anything changed.
func setCondition(pg *v1alpha1.PodGroup, typ string, status metav1.ConditionStatus, reason, message string, now time.Time) bool {
	return meta.SetStatusCondition(&pg.Status.Conditions, metav1.Condition{
		Type:               typ,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: pg.Generation,
		LastTransitionTime: metav1.NewTime(now),
	})
}

func isAdmitted(pg *v1alpha1.PodGroup) bool { return admission.IsAdmitted(pg) }

func isStalled(pg *v1alpha1.PodGroup) bool {
	return meta.IsStatusConditionTrue(pg.Status.Conditions, v1alpha1.ConditionStalled)
}

func isFinished(pg *v1alpha1.PodGroup) bool { return admission.IsFinished(pg) }

// minCount is how many active pods admit the group: gang.minCount, or 1.
func minCount(pg *v1alpha1.PodGroup) int32 { return admission.MinCount(pg) }
