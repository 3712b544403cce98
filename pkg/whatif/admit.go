package whatif

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	corev1defaults "k8s.io/kubernetes/pkg/apis/core/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/webhook/pods"
)

// admitPods returns w's pods as kube-apiserver would admit them, in
// order, each as it goes through a create: the API's defaults (requests
// from limits among them, which placement reads), then the mutating
// admission that precedes Muster's webhook, the Priority plugin
// (priority.go), then Muster's webhooks (pods.Prepare). A pod whose name
// would be generated is given its Names entry as its name afterwards, as
// kube-apiserver names a pod after admission has mutated it. The errors
// are each pod's refusals under the path of what it is made from; the
// pods of one template, refused alike, are refused once. warnings are
// the webhook's, each once.
func (r *reviewer) admitPods(w *workload) (admitted []*corev1.Pod, warnings []string, errs field.ErrorList) {
	admitted = make([]*corev1.Pod, 0, len(w.pods))
	for _, m := range w.pods {
		pod := m.pod.DeepCopy()
		pod.Namespace = r.namespace
		corev1defaults.SetObjectDefaults_Pod(pod)
		if podErrs := r.priorities.admit(pod, m.path.Child("spec")); len(podErrs) > 0 {
			errs = append(errs, podErrs...)
			continue
		}
		out, podWarnings, podErrs := pods.Prepare(pod)
		if len(podErrs) > 0 {
			errs = append(errs, under(m.path, podErrs)...)
			continue
		}
		if out.Name == "" {
			out.Name = m.name
		}
		admitted = append(admitted, out)
		warnings = append(warnings, podWarnings...)
	}
	if len(errs) > 0 {
		return nil, nil, dedupe(errs)
	}
	return admitted, sets.List(sets.New(warnings...)), nil
}

// groupOf returns the group that every pod names by its group label once
// admitted: a review asks about one gang. A pod without the label, or with
// an empty one, is not part of a gang (the webhook leaves it alone), and
// is refused; a pod that names another group than the first pod's is
// refused, naming both.
func groupOf(w *workload, admitted []*corev1.Pod) (string, field.ErrorList) {
	var errs field.ErrorList
	for i, p := range admitted {
		if p.Labels[scheduling.PodGroupLabel] == "" {
			errs = append(errs, field.Required(labelPath(w.pods[i].path),
				"every pod of a review must carry the label, naming its group (or with the annotation "+scheduling.GroupByAnnotation+", a placeholder for it), as the pods of a gang do"))
		}
	}
	if len(errs) > 0 {
		return "", dedupe(errs)
	}
	group := admitted[0].Labels[scheduling.PodGroupLabel]
	for i, p := range admitted {
		if g := p.Labels[scheduling.PodGroupLabel]; g != group {
			return "", field.ErrorList{field.Invalid(labelPath(w.pods[i].path), g,
				fmt.Sprintf("pod %s names group %q, but pod %s names %q: a review asks about one gang, so all its pods must name the same group",
					w.pods[i].name, g, w.pods[0].name, group))}
		}
	}
	return group, nil
}

// labelPath is the path of the group label of a pod made from path.
func labelPath(path *field.Path) *field.Path {
	return path.Child("metadata", "labels").Key(scheduling.PodGroupLabel)
}

// under moves errs, whose paths are a pod's, under path, where the pod is
// made from.
func under(path *field.Path, errs field.ErrorList) field.ErrorList {
	out := make(field.ErrorList, len(errs))
	prefix := path.String()
	for i, e := range errs {
		moved := *e
		switch {
		case moved.Field == "":
			moved.Field = prefix
		case !strings.HasPrefix(moved.Field, "["):
			moved.Field = prefix + "." + moved.Field
		default:
			moved.Field = prefix + moved.Field
		}
		out[i] = &moved
	}
	return out
}

// dedupe keeps the first of errors that say the same of the same field:
// the pods of one template are refused alike, once each.
func dedupe(errs field.ErrorList) field.ErrorList {
	seen := sets.New[string]()
	var out field.ErrorList
	for _, e := range errs {
		key := string(e.Type) + "\x00" + e.Field + "\x00" + e.Detail
		if seen.Has(key) {
			continue
		}
		seen.Insert(key)
		out = append(out, e)
	}
	return out
}
