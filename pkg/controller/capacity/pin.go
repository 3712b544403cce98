package capacity

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeNameField is the node field a pin matches, as the DaemonSet
// controller pins its pods: required node affinity on metadata.name.
const NodeNameField = "metadata.name"

// PinRequirement is the node selector requirement that pins a pod to node.
// Admission adds it to every term of the pod's required node affinity, in
// the same patch that removes the admission gate; KEP-3521 lets a gated pod's
// node selection be narrowed that way.
func PinRequirement(node string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: NodeNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}
}

// PinnedNode returns the node a pod is pinned to by a PinRequirement, or "".
// A pod pinned to one node in every term can run nowhere else.
func PinnedNode(p *corev1.Pod) string {
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	node := ""
	for _, term := range terms {
		found := ""
		for _, r := range term.MatchFields {
			if r.Key == NodeNameField && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
				found = r.Values[0]
			}
		}
		if found == "" || (node != "" && found != node) {
			return ""
		}
		node = found
	}
	return node
}

// Unschedulable returns when a pod was last found unschedulable by the
// scheduler, and its message, or ok=false when it is not.
func Unschedulable(p *corev1.Pod) (since metav1.Time, message string, ok bool) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return c.LastTransitionTime, c.Message, true
		}
	}
	return metav1.Time{}, "", false
}
