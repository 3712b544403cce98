package pods

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/jsonpatch"
)

// mutate returns the patch that prepares a new pod of a gang for admission:
// the admission gate holds it, and the tracking finalizer keeps it until it
// is counted. The managed label records, for users and tools, that the
// webhook did both; the controller does not read it. A pod without the
// group label gets nothing. The webhook only ever adds, with one exception
// that the pod's author asks for: a pod with the group-by annotation has
// its group label set to the name of its workload instance (instance.go).
// A pod whose group cannot be named is refused, with the field and rule.
func mutate(pod *corev1.Pod) (ops []jsonpatch.Op, warnings []string, errs field.ErrorList) {
	group, labelled := pod.Labels[scheduling.PodGroupLabel]
	if !labelled {
		return nil, nil, nil
	}
	named, op, errs := nameByInstance(pod) // instance.go
	if len(errs) > 0 {
		return nil, nil, errs
	}
	if op != nil {
		ops, group = append(ops, *op), named
	}
	if group == "" {
		return nil, nil, nil
	}
	// The API rejects a pod that has both nodeName and schedulingGates, so a
	// pod bound at creation cannot be held. Failing its creation would break
	// tools that bind pods themselves; tell the user instead.
	if pod.Spec.NodeName != "" {
		return ops, []string{fmt.Sprintf(
			"pod sets spec.nodeName %q, so Muster cannot hold it behind the %s gate: it starts without waiting for the rest of PodGroup %q and is not tracked",
			pod.Spec.NodeName, scheduling.AdmissionGate, group)}, nil
	}

	if !scheduling.HasGate(pod) {
		gate := corev1.PodSchedulingGate{Name: scheduling.AdmissionGate}
		ops = append(ops, jsonpatch.Append("/spec/schedulingGates", len(pod.Spec.SchedulingGates), gate))
	}
	if !scheduling.HasTrackingFinalizer(pod) {
		ops = append(ops, jsonpatch.Append("/metadata/finalizers", len(pod.Finalizers), scheduling.TrackingFinalizer))
	}
	if v, ok := pod.Labels[scheduling.ManagedLabel]; !ok || v != "true" {
		ops = append(ops, jsonpatch.SetKey("/metadata/labels", pod.Labels, scheduling.ManagedLabel, "true"))
	}
	return ops, nil, nil
}
