// Package validation checks Muster's objects. Every error names the field it
// is about and the rule that was broken.
package validation

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// validateSchedulingPolicy checks the policy union: exactly one of basic or
// gang, and a gang of at least one pod.
func validateSchedulingPolicy(p *scheduling.PodGroupSchedulingPolicy, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch {
	case p.Basic == nil && p.Gang == nil:
		allErrs = append(allErrs, field.Required(fldPath, "exactly one of `basic` or `gang` must be set"))
	case p.Basic != nil && p.Gang != nil:
		allErrs = append(allErrs, field.Invalid(fldPath, "{basic, gang}", "exactly one of `basic` or `gang` may be set"))
	}
	if p.Gang != nil && p.Gang.MinCount < 1 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("gang", "minCount"), p.Gang.MinCount, "must be greater than or equal to 1"))
	}
	return allErrs
}

// validateMinCountBound caps gang.minCount at MaxGangMinCount: a gang's
// placements are recorded in status.placements in the write that admits it,
// and that list holds MaxPlacements, so a larger gang could never be
// admitted. old is the policy before an update, nil on create: a value
// stored before the bound existed stays valid unless it grows, so that such
// a group can still be updated and lowered; the controller refuses to admit
// it (Admitted=False/MinCountTooLarge). A group with roles is bounded by
// validateRoleBounds instead, since its minCount is their sum.
func validateMinCountBound(p, old *scheduling.PodGroupSchedulingPolicy, roles []scheduling.PodGroupRole, fldPath *field.Path) field.ErrorList {
	if len(roles) > 0 || p.Gang == nil || p.Gang.MinCount <= scheduling.MaxGangMinCount {
		return nil
	}
	if old != nil && old.Gang != nil && p.Gang.MinCount <= old.Gang.MinCount {
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath.Child("gang", "minCount"), p.Gang.MinCount,
		fmt.Sprintf("must be less than or equal to %d (MaxGangMinCount): the placements of a gang are recorded in its status, which holds %d", scheduling.MaxGangMinCount, scheduling.MaxPlacements))}
}
