package pods

import (
	"fmt"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/validation"
)

// validateRoles checks the role label and the annotations that describe a
// gang with roles (KEP-976), as the controller parses them: the role is a
// DNS label, the number of roles is 1 to 8, a role's count is a positive
// integer of at most MaxRolePods, a roles template lists valid roles (validation.RolesFromTemplate),
// and a pod that announces roles, a count or a template names its own role.
func validateRoles(labels, ann map[string]string) field.ErrorList {
	var allErrs field.ErrorList
	rolePath := labelsPath.Key(scheduling.RoleLabel)
	role, hasRole := labels[scheduling.RoleLabel]
	if hasRole {
		allErrs = append(allErrs, validation.ValidateName(role, rolePath, apivalidation.NameIsDNSLabel, "must name the pod's role, a DNS label")...)
	}
	if v, ok := ann[scheduling.RolesAnnotation]; ok {
		if _, valid := scheduling.ParseRoles(v); !valid {
			allErrs = append(allErrs, field.Invalid(annotationsPath.Key(scheduling.RolesAnnotation), v, fmt.Sprintf("must be the number of roles of the group, an integer from 1 to %d", scheduling.MaxRoles)))
		}
	}
	if v, ok := ann[scheduling.RoleCountAnnotation]; ok {
		switch n, valid := scheduling.RoleCount(ann); {
		case !valid:
			allErrs = append(allErrs, field.Invalid(annotationsPath.Key(scheduling.RoleCountAnnotation), v, "must be a positive 32-bit integer in base 10, such as \"4\""))
		case n > scheduling.MaxRolePods:
			allErrs = append(allErrs, field.Invalid(annotationsPath.Key(scheduling.RoleCountAnnotation), v,
				fmt.Sprintf("must be at most %d: a gang never has more pods placed at once", scheduling.MaxRolePods)))
		}
	}
	if v, ok := ann[scheduling.RolesTemplateAnnotation]; ok && hasRole {
		if count, valid := scheduling.RoleCount(ann); valid {
			_, errs := validation.RolesFromTemplate(v, role, count, annotationsPath.Key(scheduling.RolesTemplateAnnotation))
			allErrs = append(allErrs, errs...)
		}
	}
	for _, key := range []string{scheduling.RolesAnnotation, scheduling.RoleCountAnnotation, scheduling.RolesTemplateAnnotation} {
		if _, ok := ann[key]; ok && !hasRole {
			allErrs = append(allErrs, field.Required(rolePath, fmt.Sprintf("must be set when annotation %s is set", key)))
		}
	}
	return allErrs
}
