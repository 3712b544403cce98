package pods

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

var specPath = field.NewPath("spec")

// validateSchedulingInputs bounds what a new labelled pod's scheduling
// inputs cost Muster's cache, which keeps them whole for placement: the
// affinity, tolerations and topology spread constraints together are at
// most scheduling.MaxPodSchedulingBytes of JSON. The error names the largest
// of the three, and the rule.
func validateSchedulingInputs(pod *corev1.Pod) field.ErrorList {
	if _, ok := pod.Labels[scheduling.PodGroupLabel]; !ok {
		return nil
	}
	sizes := []struct {
		path  *field.Path
		bytes int
	}{
		{specPath.Child("nodeSelector"), jsonSize(pod.Spec.NodeSelector, len(pod.Spec.NodeSelector) == 0)},
		{specPath.Child("affinity"), jsonSize(pod.Spec.Affinity, pod.Spec.Affinity == nil)},
		{specPath.Child("tolerations"), jsonSize(pod.Spec.Tolerations, len(pod.Spec.Tolerations) == 0)},
		{specPath.Child("topologySpreadConstraints"), jsonSize(pod.Spec.TopologySpreadConstraints, len(pod.Spec.TopologySpreadConstraints) == 0)},
	}
	total, largest := 0, 0
	for i, s := range sizes {
		total += s.bytes
		if s.bytes > sizes[largest].bytes {
			largest = i
		}
	}
	if total <= scheduling.MaxPodSchedulingBytes {
		return nil
	}
	return field.ErrorList{&field.Error{
		Type:     field.ErrorTypeTooLong,
		Field:    sizes[largest].path.String(),
		BadValue: field.OmitValueType{},
		Detail: fmt.Sprintf("spec.nodeSelector, spec.affinity, spec.tolerations and spec.topologySpreadConstraints are %d bytes of JSON together (this field %d); "+
			"a pod with the %s label may carry at most %d, which Muster keeps in memory while the pod waits",
			total, sizes[largest].bytes, scheduling.PodGroupLabel, scheduling.MaxPodSchedulingBytes),
	}}
}

// validateMusterAnnotations bounds the Muster annotations that the pod cache
// keeps: at most scheduling.MaxPodMusterAnnotationBytes, keys and values
// together. Only the roles template can be long, and a pod that carries it
// is always sent to the validating webhook (manifests.RolesExpression).
func validateMusterAnnotations(pod *corev1.Pod) field.ErrorList {
	if _, ok := pod.Labels[scheduling.PodGroupLabel]; !ok {
		return nil
	}
	total, largest, largestKey := 0, 0, ""
	for _, k := range scheduling.PodAnnotationKeys {
		v, ok := pod.Annotations[k]
		if !ok {
			continue
		}
		total += len(k) + len(v)
		if len(v) > largest {
			largest, largestKey = len(v), k
		}
	}
	if total <= scheduling.MaxPodMusterAnnotationBytes {
		return nil
	}
	return field.ErrorList{&field.Error{
		Type:     field.ErrorTypeTooLong,
		Field:    annotationsPath.Key(largestKey).String(),
		BadValue: field.OmitValueType{},
		Detail: fmt.Sprintf("Muster's annotations are %d bytes together (this one %d); a pod with the %s label may carry at most %d, which Muster keeps in memory while the pod waits",
			total, largest, scheduling.PodGroupLabel, scheduling.MaxPodMusterAnnotationBytes),
	}}
}

// validateLabelSize bounds the labels that the pod cache keeps whole: at most
// scheduling.MaxPodLabelBytes, keys and values together.
func validateLabelSize(pod *corev1.Pod) field.ErrorList {
	if _, ok := pod.Labels[scheduling.PodGroupLabel]; !ok {
		return nil
	}
	total := 0
	for k, v := range pod.Labels {
		total += len(k) + len(v)
	}
	if total <= scheduling.MaxPodLabelBytes {
		return nil
	}
	return field.ErrorList{&field.Error{
		Type:     field.ErrorTypeTooLong,
		Field:    labelsPath.String(),
		BadValue: field.OmitValueType{},
		Detail: fmt.Sprintf("the %d labels are %d bytes together; a pod with the %s label may carry at most %d, which Muster keeps in memory while the pod waits",
			len(pod.Labels), total, scheduling.PodGroupLabel, scheduling.MaxPodLabelBytes),
	}}
}

// jsonSize is the length of v as JSON, 0 when empty.
func jsonSize(v any, empty bool) int {
	if empty {
		return 0
	}
	b, err := json.Marshal(v)
	if err != nil {
		// Unreachable for API types; count it as over the bound rather
		// than let it through unmeasured.
		return scheduling.MaxPodSchedulingBytes + 1
	}
	return len(b)
}

// validateContainerCount bounds the containers of a new labelled pod, init
// containers included, to scheduling.MaxPodContainers: the pod cache keeps
// each one's requests and ports.
func validateContainerCount(pod *corev1.Pod) field.ErrorList {
	if _, ok := pod.Labels[scheduling.PodGroupLabel]; !ok {
		return nil
	}
	n := len(pod.Spec.Containers) + len(pod.Spec.InitContainers)
	if n <= scheduling.MaxPodContainers {
		return nil
	}
	path := specPath.Child("containers")
	if len(pod.Spec.InitContainers) > len(pod.Spec.Containers) {
		path = specPath.Child("initContainers")
	}
	return field.ErrorList{&field.Error{
		Type:     field.ErrorTypeTooMany,
		Field:    path.String(),
		BadValue: n,
		Detail: fmt.Sprintf("spec.containers and spec.initContainers are %d together; a pod with the %s label may have at most %d, whose requests Muster keeps in memory while the pod waits",
			n, scheduling.PodGroupLabel, scheduling.MaxPodContainers),
	}}
}

// validateListCounts bounds the scheduling gates and finalizers of a new
// labelled pod, Muster's own included (scheduling.MaxPodSchedulingGates,
// MaxPodFinalizers), as muster-pod-labels does: Muster's admission
// policies look through both on every write of the pod.
func validateListCounts(pod *corev1.Pod) field.ErrorList {
	if _, ok := pod.Labels[scheduling.PodGroupLabel]; !ok {
		return nil
	}
	var allErrs field.ErrorList
	for _, l := range []struct {
		path      *field.Path
		n, most   int
		boundName string
	}{
		{specPath.Child("schedulingGates"), len(pod.Spec.SchedulingGates), scheduling.MaxPodSchedulingGates, "MaxPodSchedulingGates"},
		{field.NewPath("metadata", "finalizers"), len(pod.Finalizers), scheduling.MaxPodFinalizers, "MaxPodFinalizers"},
	} {
		if l.n > l.most {
			allErrs = append(allErrs, &field.Error{
				Type: field.ErrorTypeTooMany, Field: l.path.String(), BadValue: l.n,
				Detail: fmt.Sprintf("must have at most %d items on a pod with the %s label, and an update may not add past that; "+
					"Muster's admission policies look through them on every write of the pod (%s)", l.most, scheduling.PodGroupLabel, l.boundName),
			})
		}
	}
	return allErrs
}
