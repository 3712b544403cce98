package admission

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// Group is what a mode reads of one group in a sync: the group as the sync
// has decided it so far, and its pods as the sync classified them. A mode
// never changes it.
type Group struct {
	Key      scheduling.GroupKey
	PodGroup *v1alpha1.PodGroup
	// Pods are all the group's pods, as the sync read them.
	Pods []*corev1.Pod
	// Gated are the pods that still carry the admission gate.
	Gated []*corev1.Pod
	// Present and Active count the group's pods, and those that count
	// toward minCount.
	Present, Active int32
	// RoleActive counts the active pods of each role.
	RoleActive map[string]int32
}

// ActiveGated are the gated pods that can still run.
func (g Group) ActiveGated() []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range g.Gated {
		if !scheduling.IsEnding(p) {
			out = append(out, p)
		}
	}
	return out
}

// LaterMissing is how many pods of each createdLater role do not exist
// yet (as active pods): the places capacity admission reserves for them.
func (g Group) LaterMissing() map[string]int32 {
	var out map[string]int32
	for _, r := range g.PodGroup.Spec.Roles {
		if !r.CreatedLater || r.Template == nil {
			continue
		}
		if n := r.Count - g.RoleActive[r.Name]; n > 0 {
			if out == nil {
				out = map[string]int32{}
			}
			out[r.Name] = n
		}
	}
	return out
}

// SumCounts is the sum of counts by name.
func SumCounts(m map[string]int32) int32 {
	var n int32
	for _, c := range m {
		n += c
	}
	return n
}
