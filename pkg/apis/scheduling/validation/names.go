package validation

import (
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateName checks that name is set, saying required when it is not, and
// that isName accepts it (apivalidation.NameIsDNSSubdomain,
// apivalidation.NameIsDNSLabel, path.ValidatePathSegmentName). The server's
// validation and the pod webhook both check names with it.
func ValidateName(name string, fldPath *field.Path, isName apivalidation.ValidateNameFunc, required string) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath, required)}
	}
	var allErrs field.ErrorList
	for _, msg := range isName(name, false) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, msg))
	}
	return allErrs
}
