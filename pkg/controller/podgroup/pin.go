package podgroup

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/jsonpatch"
)

const requiredAffinityPath = "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution"

// pinOps narrow a gated pod's required node affinity to the node admission
// reserved for it: a metadata.name requirement is added to every term (terms
// are ORed, so each must carry it). KEP-3521 allows exactly this while the
// pod is gated, so the pin and the gate removal are one patch. Where a new
// member is added in place of an absent one, the resourceVersion test makes
// the patch fail rather than replace what another writer set meanwhile.
func pinOps(p *corev1.Pod, node string) []jsonpatch.Op {
	req := scheduling.PinRequirement(node)
	term := corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{req}}
	selector := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term}}
	guard := jsonpatch.Test("/metadata/resourceVersion", p.ResourceVersion)
	a := p.Spec.Affinity
	switch {
	case a == nil:
		return []jsonpatch.Op{guard, jsonpatch.Add("/spec/affinity", corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: selector}})}
	case a.NodeAffinity == nil:
		return []jsonpatch.Op{guard, jsonpatch.Add("/spec/affinity/nodeAffinity", corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: selector})}
	case a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil ||
		len(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) == 0:
		return []jsonpatch.Op{guard, jsonpatch.Add(requiredAffinityPath, selector)}
	}
	ops := []jsonpatch.Op{guard}
	for i, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		ops = append(ops, jsonpatch.Append(fmt.Sprintf("%s/nodeSelectorTerms/%d/matchFields", requiredAffinityPath, i), len(t.MatchFields), req))
	}
	return ops
}
