package pods

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/jsonpatch"
)

// nameByInstance names the group of a new pod that carries
// scheduling.GroupByAnnotation after its workload instance: the values of
// the labels the annotation lists, or that its framework puts on its pods
// (scheduling.InstanceLabels). It returns the name and the patch that sets
// the group label to it, or no patch when the label already holds it (a
// pod created again from a stored copy, or the webhook called twice). A
// pod without the annotation keeps its label as its author wrote it. The
// errors name the annotation and its rule, or the labels it needs.
func nameByInstance(pod *corev1.Pod) (string, *jsonpatch.Op, field.ErrorList) {
	groupBy, ok := pod.Annotations[scheduling.GroupByAnnotation]
	if !ok {
		return "", nil, nil
	}
	keys, err := scheduling.ParseGroupBy(groupBy)
	if err != nil {
		return "", nil, field.ErrorList{field.Invalid(annotationsPath.Key(scheduling.GroupByAnnotation), groupBy, err.Error())}
	}
	name, err := scheduling.GroupNameByKeys(keys, pod.Labels)
	if err != nil {
		return "", nil, field.ErrorList{field.Required(labelsPath, err.Error())}
	}
	if pod.Labels[scheduling.PodGroupLabel] == name {
		return name, nil, nil
	}
	op := jsonpatch.SetKey("/metadata/labels", pod.Labels, scheduling.PodGroupLabel, name)
	return name, &op, nil
}
