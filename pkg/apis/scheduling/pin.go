package scheduling

import (
	corev1 "k8s.io/api/core/v1"
)

// The pin rule. Capacity-aware admission pins a released pod to the node it
// placed the pod on, in the same patch that removes AdmissionGate (KEP-3521
// lets a gated pod's node selection be narrowed): every term of the pod's
// required node affinity gets PinRequirement, a matchFields requirement on
// PinField, as the DaemonSet controller pins its pods. Terms are ORed, so
// each must carry it. A pod that is pinned this way can run on that node
// only; PinnedNode reads the pin back, for the controller and for clients.

// PinField is the node field a pin matches: the node's name, which, unlike
// the kubernetes.io/hostname label, always exists and is unique.
const PinField = "metadata.name"

// PinRequirement is the node selector requirement that pins a pod to node.
func PinRequirement(node string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: PinField, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}
}

// PinnedNode returns the node a pod is pinned to by PinRequirement, or "": a
// pod pinned to one node in every term can run nowhere else, and a pod whose
// terms disagree, or one of which carries no pin, is not pinned.
func PinnedNode(p *corev1.Pod) string {
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	node := ""
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		found := ""
		for _, r := range term.MatchFields {
			if r.Key == PinField && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
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
