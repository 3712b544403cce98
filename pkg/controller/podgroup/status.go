package podgroup

import (
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// statusUpdateOptions name the controller as the manager of what it writes.
var statusUpdateOptions = metav1.UpdateOptions{FieldManager: scheduling.ControllerName}

func equalStatus(a, b *v1alpha1.PodGroup) bool {
	return apiequality.Semantic.DeepEqual(a.Status, b.Status)
}

// decisionChanged reports whether b records a decision that a differs in:
// admission, scheduling, finishing (with the start of a replacement wait),
// the accounting lists and counts, or the timestamps. Counters of existing
// pods, messages and the derived phase are not decisions.
func decisionChanged(a, b *v1alpha1.PodGroup) bool {
	return !apiequality.Semantic.DeepEqual(decisions(&a.Status), decisions(&b.Status))
}

func decisions(s *v1alpha1.PodGroupStatus) *v1alpha1.PodGroupStatus {
	d := s.DeepCopy()
	d.Pods, d.Gated, d.Active, d.Scheduled, d.Ready = 0, 0, 0, 0, 0
	d.Phase, d.ObservedGeneration = "", 0
	for i := range d.Conditions {
		d.Conditions[i].Message = ""
		d.Conditions[i].ObservedGeneration = 0
		d.Conditions[i].LastTransitionTime = metav1.Time{}
	}
	return d
}

// setCounters copies the counts of existing pods into status.
func setCounters(pg *v1alpha1.PodGroup, v *podView) {
	s := &pg.Status
	s.Pods, s.Gated, s.Active, s.Scheduled, s.Ready = v.pods, v.gated, v.active, v.scheduled, v.ready
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

func isAdmitted(pg *v1alpha1.PodGroup) bool {
	return meta.IsStatusConditionTrue(pg.Status.Conditions, v1alpha1.ConditionAdmitted)
}

func isFinished(pg *v1alpha1.PodGroup) bool {
	return meta.IsStatusConditionTrue(pg.Status.Conditions, v1alpha1.ConditionFinished)
}

// minCount is how many active pods admit the group: gang.minCount, or 1.
func minCount(pg *v1alpha1.PodGroup) int32 {
	if g := pg.Spec.SchedulingPolicy.Gang; g != nil {
		return g.MinCount
	}
	return 1
}
