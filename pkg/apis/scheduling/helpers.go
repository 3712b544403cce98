package scheduling

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// IsConditionTrue reports whether the condition of type t is present and True.
func IsConditionTrue(conds []metav1.Condition, t string) bool {
	for _, c := range conds {
		if c.Type == t {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

// FindCondition returns the condition of type t, or nil.
func FindCondition(conds []metav1.Condition, t string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

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
	if c := FindCondition(conds, ConditionFinished); c != nil && c.Status == metav1.ConditionTrue {
		if c.Reason == ReasonFailed {
			return PodGroupFailed
		}
		return PodGroupSucceeded
	}
	if IsConditionTrue(conds, ConditionAdmitted) {
		if IsConditionTrue(conds, ConditionScheduled) {
			return PodGroupRunning
		}
		return PodGroupAdmitted
	}
	if len(pg.Spec.SchedulingGates) > 0 {
		return PodGroupGated
	}
	return PodGroupPending
}
