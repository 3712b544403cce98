package validation

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// RolesFromTemplate reads the roles-template annotation of a pod of role
// own, whose role has ownCount pods (KEP-976 story 4, as Kueue's
// pod-group-sets): a JSON list of roles as in spec.roles, such as
// [{"name":"worker","count":8,"template":{"requests":{"cpu":"3"}}}]. Every
// listed role but the pod's own is created later by the pod, so it needs a
// template and is marked createdLater; the pod's own role may be listed,
// with its count. It returns the group's roles, sorted by name, or errors
// that name the annotation, the list index and the field.
func RolesFromTemplate(value, own string, ownCount int32, fldPath *field.Path) ([]v1alpha1.PodGroupRole, field.ErrorList) {
	var listed []v1alpha1.PodGroupRole
	dec := json.NewDecoder(bytes.NewReader([]byte(value)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&listed); err != nil {
		return nil, field.ErrorList{field.Invalid(fldPath, value, fmt.Sprintf("must be a JSON list of roles, as in spec.roles: %v", err))}
	}
	if len(listed) == 0 {
		return nil, field.ErrorList{field.Required(fldPath, "must list the roles the pod creates later")}
	}
	var allErrs field.ErrorList
	hasOwn := false
	for i := range listed {
		r := &listed[i]
		if r.Name == own {
			hasOwn = true
			if r.CreatedLater || r.Template != nil {
				allErrs = append(allErrs, field.Invalid(fldPath.Index(i), r.Name, "the pod's own role exists already: it takes neither createdLater nor a template"))
			}
			if r.Count != ownCount {
				allErrs = append(allErrs, field.Invalid(fldPath.Index(i).Child("count"), r.Count,
					fmt.Sprintf("must equal the pod's %s (%d) for its own role", scheduling.RoleCountAnnotation, ownCount)))
			}
			continue
		}
		r.CreatedLater = true
	}
	if !hasOwn {
		listed = append(listed, v1alpha1.PodGroupRole{Name: own, Count: ownCount})
	}
	internal := make([]scheduling.PodGroupRole, len(listed))
	var sum int64
	for i := range listed {
		if err := v1alpha1.Convert_v1alpha1_PodGroupRole_To_scheduling_PodGroupRole(&listed[i], &internal[i], nil); err != nil {
			return nil, append(allErrs, field.Invalid(fldPath.Index(i), listed[i].Name, err.Error()))
		}
		sum += int64(listed[i].Count)
	}
	if sum > math.MaxInt32 {
		return nil, append(allErrs, field.Invalid(fldPath, sum, "the roles' counts must add up to at most 2147483647, the largest gang.minCount"))
	}
	gang := &scheduling.PodGroupSchedulingPolicy{Gang: &scheduling.GangSchedulingPolicy{MinCount: int32(sum)}}
	allErrs = append(allErrs, validateRoles(internal, gang, fldPath, fldPath)...)
	allErrs = append(allErrs, validateRoleBounds(internal, nil, fldPath)...)
	if len(allErrs) > 0 {
		return nil, allErrs
	}
	sort.Slice(listed, func(i, j int) bool { return listed[i].Name < listed[j].Name })
	return listed, nil
}
