package podgroup

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/controller/admission"
	"github.com/muster-dev/muster/pkg/jsonpatch"
)

// activeGated are the gated pods that can still run.
func activeGated(v *podView) []*corev1.Pod {
	return admission.Group{Gated: v.gatedPods}.ActiveGated()
}

// placementsByUID maps each placed pod's UID to its node.
func placementsByUID(pg *v1alpha1.PodGroup) map[types.UID]string {
	return admission.PlacementsByUID(pg)
}

// prunePlacements drops the placements that no longer reserve anything:
// their pod was released (it is pinned now), ended, or is gone, or the
// group has finished. It is a refresh, written with the next write.
func prunePlacements(pg *v1alpha1.PodGroup, v *podView) {
	if len(pg.Status.Placements) == 0 {
		return
	}
	keep := map[types.UID]bool{}
	if !isFinished(pg) {
		for _, p := range activeGated(v) {
			keep[p.UID] = true
		}
	}
	if isFinished(pg) {
		pg.Status.Reservations = nil // a finished group waits for no pod.
	}
	pg.Status.Placements = slices.DeleteFunc(slices.Clone(pg.Status.Placements), func(p v1alpha1.PodPlacement) bool { return !keep[p.UID] })
	if len(pg.Status.Placements) == 0 {
		pg.Status.Placements = nil
	}
}

// placementsAdded reports whether b places a pod that a does not: a
// decision, written before the pod is pinned.
func placementsAdded(a, b *v1alpha1.PodGroup) bool {
	old := placementsByUID(a)
	for _, p := range b.Status.Placements {
		if _, ok := old[p.UID]; !ok {
			return true
		}
	}
	return false
}

// releasePatch is the patch that releases a pod: the gate comes off and, with
// capacity-aware admission, the pod is pinned to its node in the same patch.
// With no node it is removeGatePatch.
func releasePatch(node string) func(*corev1.Pod) ([]byte, bool) {
	if node == "" {
		return removeGatePatch
	}
	return func(p *corev1.Pod) ([]byte, bool) {
		ops, ok := removeGateOps(p)
		if !ok {
			return nil, false
		}
		if node != "" && scheduling.PinnedNode(p) != node {
			ops = append(ops, pinOps(p, node)...)
		}
		return jsonpatch.Marshal(ops), true
	}
}

// truncate keeps a condition message within the API's limit.
func truncate(s string) string { return admission.Truncate(s) }
