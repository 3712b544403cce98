package scheduling

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MinCount is how many pods the group needs to be admitted: gang.minCount,
// or 1 for a basic policy.
func (s *PodGroupSpec) MinCount() int32 {
	if s.SchedulingPolicy.Gang != nil {
		return s.SchedulingPolicy.Gang.MinCount
	}
	return 1
}

// DerivePhase computes status.phase from the spec and the conditions, so that
// the phase can never disagree with them.
func DerivePhase(pg *PodGroup) PodGroupPhase {
	conds := pg.Status.Conditions
	if c := meta.FindStatusCondition(conds, ConditionFinished); c != nil && c.Status == metav1.ConditionTrue {
		if c.Reason == ReasonFailed {
			return PodGroupFailed
		}
		return PodGroupSucceeded
	}
	if meta.IsStatusConditionTrue(conds, ConditionAdmitted) {
		if meta.IsStatusConditionTrue(conds, ConditionScheduled) {
			return PodGroupRunning
		}
		return PodGroupAdmitted
	}
	if len(pg.Spec.SchedulingGates) > 0 {
		return PodGroupGated
	}
	return PodGroupPending
}
