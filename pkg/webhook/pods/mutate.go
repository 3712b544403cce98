package pods

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// patchOp is one RFC 6902 operation. The webhook only ever adds: it never
// removes or rewrites what the pod's author or another webhook wrote.
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// mutate returns the patch that prepares a new pod of a gang for admission:
// the admission gate holds it, the tracking finalizer keeps it until it is
// counted, and the managed label tells the controller both are in place. A pod
// without the group label gets nothing.
func mutate(pod *corev1.Pod) (ops []patchOp, warnings []string) {
	group := pod.Labels[scheduling.PodGroupLabel]
	if group == "" {
		return nil, nil
	}
	// The API rejects a pod that has both nodeName and schedulingGates, so a
	// pod bound at creation cannot be held. Failing its creation would break
	// tools that bind pods themselves; tell the user instead.
	if pod.Spec.NodeName != "" {
		return nil, []string{fmt.Sprintf(
			"pod sets spec.nodeName %q, so Muster cannot hold it behind the %s gate: it starts without waiting for the rest of PodGroup %q and is not tracked",
			pod.Spec.NodeName, scheduling.AdmissionGate, group)}
	}

	if !slices.ContainsFunc(pod.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == scheduling.AdmissionGate }) {
		gate := corev1.PodSchedulingGate{Name: scheduling.AdmissionGate}
		ops = append(ops, appendOp("/spec/schedulingGates", len(pod.Spec.SchedulingGates), gate))
	}
	if !slices.Contains(pod.Finalizers, scheduling.TrackingFinalizer) {
		ops = append(ops, appendOp("/metadata/finalizers", len(pod.Finalizers), scheduling.TrackingFinalizer))
	}
	if v, ok := pod.Labels[scheduling.ManagedLabel]; !ok || v != "true" {
		ops = append(ops, setKeyOp("/metadata/labels", pod.Labels, scheduling.ManagedLabel, "true"))
	}
	return ops, nil
}

// appendOp adds item at the end of the list at path. An empty list may be
// absent or null in the JSON the API server patches, and "/-" fails on both,
// so it is replaced by a whole one-item list instead.
func appendOp[T any](path string, n int, item T) patchOp {
	if n == 0 {
		return patchOp{Op: "add", Path: path, Value: []T{item}}
	}
	return patchOp{Op: "add", Path: path + "/-", Value: item}
}

// setKeyOp sets key in the map at path; a nil map is absent from the JSON, so
// the whole map is added.
func setKeyOp(path string, m map[string]string, key, value string) patchOp {
	if len(m) == 0 {
		return patchOp{Op: "add", Path: path, Value: map[string]string{key: value}}
	}
	return patchOp{Op: "add", Path: path + "/" + escapePointer(key), Value: value}
}

// pointerEscaper escapes a JSON Pointer reference token (RFC 6901), so that a
// label key such as "scheduling.muster.dev/managed" is one token, not two. A
// Replacer works in one pass, so the '~' of a "~1" it writes is not escaped again.
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

func escapePointer(token string) string { return pointerEscaper.Replace(token) }
