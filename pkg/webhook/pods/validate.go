package pods

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/validation"
)

var (
	labelsPath      = field.NewPath("metadata", "labels")
	annotationsPath = field.NewPath("metadata", "annotations")
)

// validateCreate checks Muster's labels and annotations on a new pod, and
// the size of what the pod cache keeps of it (scheduling.go).
func validateCreate(pod *corev1.Pod) field.ErrorList {
	allErrs := validateNames(pod, nil)
	allErrs = append(allErrs, validateSchedulingInputs(pod)...)
	allErrs = append(allErrs, validateLabelSize(pod)...)
	allErrs = append(allErrs, validateContainerCount(pod)...)
	allErrs = append(allErrs, validateListCounts(pod)...)
	return append(allErrs, validateMusterAnnotations(pod)...)
}

// validateUpdate checks a pod update: the group and managed labels never
// change, and Muster's annotations stay well formed.
func validateUpdate(pod, old *corev1.Pod) field.ErrorList {
	allErrs := validateNames(pod, old)
	allErrs = append(allErrs, validateLabelImmutable(pod.Labels, old.Labels, scheduling.PodGroupLabel,
		"a pod joins a gang only when it is created; create a new pod with the label instead")...)
	allErrs = append(allErrs, validateLabelImmutable(pod.Labels, old.Labels, scheduling.ManagedLabel,
		"only Muster's webhook sets it, when it adds the admission gate and tracking finalizer at creation")...)
	return allErrs
}

// validateNames checks the format of the group label and the creation
// annotations. On update (old != nil) a value that did not change is not
// checked again: a pod stored before the webhook was installed must stay
// updatable, or the removal of its finalizer could be refused and leave it
// stuck Terminating.
func validateNames(pod, old *corev1.Pod) field.ErrorList {
	var oldLabels, oldAnnotations map[string]string
	if old != nil {
		oldLabels, oldAnnotations = old.Labels, old.Annotations
	}
	isNew := func(m, oldM map[string]string, keys ...string) bool {
		if old == nil {
			return true
		}
		for _, k := range keys {
			v, ok := m[k]
			ov, had := oldM[k]
			if ok != had || v != ov {
				return true
			}
		}
		return false
	}

	var allErrs field.ErrorList
	if group, ok := pod.Labels[scheduling.PodGroupLabel]; ok && isNew(pod.Labels, oldLabels, scheduling.PodGroupLabel) {
		allErrs = append(allErrs, validation.ValidateName(group, labelsPath.Key(scheduling.PodGroupLabel), apivalidation.NameIsDNSSubdomain, scheduling.PodGroupLabelRule)...)
	}

	ann := pod.Annotations
	if v, ok := ann[scheduling.MinCountAnnotation]; ok && isNew(ann, oldAnnotations, scheduling.MinCountAnnotation) {
		allErrs = append(allErrs, validateMinCount(v, annotationsPath.Key(scheduling.MinCountAnnotation))...)
	}
	if isNew(ann, oldAnnotations, scheduling.WorkloadAnnotation, scheduling.TemplateAnnotation) {
		allErrs = append(allErrs, validateWorkloadRef(ann)...)
	}
	if isNew(ann, oldAnnotations, scheduling.TopologyAnnotations...) {
		// By the rules of spec.schedulingConstraints, which they give the
		// group the controller creates.
		allErrs = append(allErrs, validation.ValidateTopologyAnnotations(ann, annotationsPath)...)
	}
	if isNew(pod.Labels, oldLabels, scheduling.RoleLabel) || isNew(ann, oldAnnotations, scheduling.RolesAnnotation, scheduling.RoleCountAnnotation, scheduling.RolesTemplateAnnotation) {
		allErrs = append(allErrs, validateRoles(pod.Labels, ann)...) // roles.go
	}
	return allErrs
}

// validateMinCount accepts what the controller parses into gang.minCount,
// up to the largest gang it can admit.
func validateMinCount(v string, fldPath *field.Path) field.ErrorList {
	if n, ok := scheduling.ParseMinCount(v); !ok || n > scheduling.MaxGangMinCount {
		return field.ErrorList{field.Invalid(fldPath, v, scheduling.MinCountRule)}
	}
	return nil
}

// validateWorkloadRef checks the pair of annotations that becomes the created
// PodGroup's workloadRef: a workload and a template, or neither.
func validateWorkloadRef(ann map[string]string) field.ErrorList {
	workloadPath := annotationsPath.Key(scheduling.WorkloadAnnotation)
	templatePath := annotationsPath.Key(scheduling.TemplateAnnotation)
	workload, template, _, missing := scheduling.WorkloadRefAnnotations(ann)

	var allErrs field.ErrorList
	if _, has := ann[scheduling.WorkloadAnnotation]; has {
		allErrs = append(allErrs, validation.ValidateName(workload, workloadPath, apivalidation.NameIsDNSSubdomain, "must be the name of a Workload in the pod's namespace")...)
	}
	if _, has := ann[scheduling.TemplateAnnotation]; has {
		allErrs = append(allErrs, validation.ValidateName(template, templatePath, apivalidation.NameIsDNSLabel, "must be the name of a pod-group template of the Workload")...)
	}
	switch missing {
	case scheduling.TemplateAnnotation:
		allErrs = append(allErrs, field.Required(templatePath, fmt.Sprintf("must be set when %s is set", scheduling.WorkloadAnnotation)))
	case scheduling.WorkloadAnnotation:
		allErrs = append(allErrs, field.Required(workloadPath, fmt.Sprintf("must be set when %s is set", scheduling.TemplateAnnotation)))
	}
	return allErrs
}

// validateLabelImmutable forbids adding, changing or removing the label key on
// update; why says why it cannot be added.
func validateLabelImmutable(labels, oldLabels map[string]string, key, why string) field.ErrorList {
	fldPath := labelsPath.Key(key)
	v, has := labels[key]
	ov, had := oldLabels[key]
	switch {
	case had && !has:
		return field.ErrorList{field.Forbidden(fldPath, fmt.Sprintf("cannot be removed: the label is immutable once set (it was %q)", ov))}
	case !had && has:
		return field.ErrorList{field.Forbidden(fldPath, "cannot be added to an existing pod: "+why)}
	case had && v != ov:
		return field.ErrorList{field.Invalid(fldPath, v, fmt.Sprintf("field is immutable: the label cannot change once set (it was %q)", ov))}
	}
	return nil
}
