// Package validation checks Muster's objects. Every error names the field it
// is about and the rule that was broken.
package validation

import (
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
