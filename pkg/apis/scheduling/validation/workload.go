package validation

import (
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// nameRequired is the message for a missing name.
const nameRequired = "name is required"

// ValidateWorkload checks a Workload on create.
func ValidateWorkload(w *scheduling.Workload) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&w.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	allErrs = append(allErrs, validateWorkloadSpec(&w.Spec, field.NewPath("spec"))...)
	for i, t := range w.Spec.PodGroupTemplates {
		tplPath := field.NewPath("spec", "podGroupTemplates").Index(i)
		allErrs = append(allErrs, validateMinCountBound(&t.SchedulingPolicy, nil, t.Roles, tplPath.Child("schedulingPolicy"))...)
		allErrs = append(allErrs, validateRoleBounds(t.Roles, nil, tplPath.Child("roles"))...)
	}
	return allErrs
}

// ValidateWorkloadUpdate checks a Workload update: the template set is fixed
// and only a template's schedulingPolicy may change.
func ValidateWorkloadUpdate(w, old *scheduling.Workload) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&w.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	specPath := field.NewPath("spec")
	allErrs = append(allErrs, validateWorkloadSpec(&w.Spec, specPath)...)

	if old.Spec.ControllerRef != nil && !apiequality.Semantic.DeepEqual(w.Spec.ControllerRef, old.Spec.ControllerRef) {
		allErrs = append(allErrs, field.Invalid(specPath.Child("controllerRef"), w.Spec.ControllerRef, "field is immutable once set"))
	}

	oldByName := make(map[string]*scheduling.PodGroupTemplate, len(old.Spec.PodGroupTemplates))
	for i := range old.Spec.PodGroupTemplates {
		oldByName[old.Spec.PodGroupTemplates[i].Name] = &old.Spec.PodGroupTemplates[i]
	}
	tplPath := specPath.Child("podGroupTemplates")
	seen := sets.New[string]()
	for i := range w.Spec.PodGroupTemplates {
		t := &w.Spec.PodGroupTemplates[i]
		seen.Insert(t.Name)
		o, ok := oldByName[t.Name]
		if !ok {
			allErrs = append(allErrs, field.Forbidden(tplPath.Index(i), "templates cannot be added after creation"))
			continue
		}
		// Everything but the scheduling policy and the roles' counts is
		// fixed, schedulingConstraints included (empty ones are none).
		tc, oc := *t, *o
		tc.SchedulingPolicy, oc.SchedulingPolicy = scheduling.PodGroupSchedulingPolicy{}, scheduling.PodGroupSchedulingPolicy{}
		tc.Roles, oc.Roles = nil, nil
		for _, c := range []*scheduling.PodGroupTemplate{&tc, &oc} {
			if !scheduling.HasSchedulingConstraints(c.SchedulingConstraints) {
				c.SchedulingConstraints = nil
			}
		}
		if !apiequality.Semantic.DeepEqual(tc, oc) {
			allErrs = append(allErrs, field.Forbidden(tplPath.Index(i), "only schedulingPolicy and the roles' counts may change after creation"))
		}
		allErrs = append(allErrs, validateRolesUpdate(t.Roles, o.Roles, tplPath.Index(i).Child("roles"))...)
		allErrs = append(allErrs, validateRoleBounds(t.Roles, o.Roles, tplPath.Index(i).Child("roles"))...)
		allErrs = append(allErrs, validateMinCountBound(&t.SchedulingPolicy, &o.SchedulingPolicy, t.Roles, tplPath.Index(i).Child("schedulingPolicy"))...)
	}
	for name := range oldByName {
		if !seen.Has(name) {
			allErrs = append(allErrs, field.Forbidden(tplPath, "template "+name+" cannot be removed after creation"))
		}
	}
	return allErrs
}

// ValidateWorkloadStatusUpdate checks a write to workloads/status.
func ValidateWorkloadStatusUpdate(w, old *scheduling.Workload) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&w.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	statusPath := field.NewPath("status")
	allErrs = append(allErrs, metav1validation.ValidateConditions(w.Status.Conditions, statusPath.Child("conditions"))...)
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(w.Status.ObservedGeneration, statusPath.Child("observedGeneration"))...)
	return allErrs
}

func validateWorkloadSpec(spec *scheduling.WorkloadSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if ref := spec.ControllerRef; ref != nil {
		allErrs = append(allErrs, validateControllerRef(ref, fldPath.Child("controllerRef"))...)
	}
	tplPath := fldPath.Child("podGroupTemplates")
	switch n := len(spec.PodGroupTemplates); {
	case n == 0:
		allErrs = append(allErrs, field.Required(tplPath, "at least one template is required"))
	case n > scheduling.MaxPodGroupTemplates:
		allErrs = append(allErrs, field.TooMany(tplPath, n, scheduling.MaxPodGroupTemplates))
	}
	names := sets.New[string]()
	for i := range spec.PodGroupTemplates {
		t := &spec.PodGroupTemplates[i]
		p := tplPath.Index(i)
		allErrs = append(allErrs, ValidateName(t.Name, p.Child("name"), apivalidation.NameIsDNSLabel, nameRequired)...)
		if names.Has(t.Name) {
			allErrs = append(allErrs, field.Duplicate(p.Child("name"), t.Name))
		}
		names.Insert(t.Name)
		allErrs = append(allErrs, validateSchedulingPolicy(&t.SchedulingPolicy, p.Child("schedulingPolicy"))...)
		allErrs = append(allErrs, validateRoles(t.Roles, &t.SchedulingPolicy, p.Child("roles"), p.Child("schedulingPolicy"))...)
		allErrs = append(allErrs, ValidateSchedulingConstraints(t.SchedulingConstraints, p.Child("schedulingConstraints"))...)
	}
	return allErrs
}

func validateControllerRef(ref *scheduling.TypedLocalObjectReference, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if ref.APIGroup != "" {
		for _, msg := range utilvalidation.IsDNS1123Subdomain(ref.APIGroup) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("apiGroup"), ref.APIGroup, msg))
		}
	}
	allErrs = append(allErrs, ValidateName(ref.Kind, fldPath.Child("kind"), path.ValidatePathSegmentName, "kind is required")...)
	allErrs = append(allErrs, ValidateName(ref.Name, fldPath.Child("name"), path.ValidatePathSegmentName, "name is required")...)
	return allErrs
}
