package capacityadmission

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-dev/muster/pkg/controller/capacity"
)

// unmodelled says why placement cannot check where a pod may run, or "".
// Such a pod is never pinned: a pin that the scheduler disagrees with
// leaves the pod Pending for ever. It is admitted with its gang and
// released unpinned, so the gang keeps Muster's all-present guarantee but
// not the all-fit one (docs/controller.md, "What placement checks").
//   - A pod for another scheduler is placed by rules Muster cannot see.
//   - A pod with resource claims, on a cluster that does not serve
//     resource.k8s.io/v1 (before 1.34), needs the DRA of that release.
func (a *Mode) unmodelled(p *corev1.Pod) string {
	if name := p.Spec.SchedulerName; name != "" && name != capacity.DefaultSchedulerName {
		return fmt.Sprintf("schedulerName %s is not kube-scheduler's default profile", name)
	}
	if len(p.Spec.ResourceClaims) > 0 && a.filters != nil && !a.filters.DRA {
		return "resource claims need resource.k8s.io/v1, which this cluster does not serve"
	}
	return ""
}

// splitUnmodelled takes the pods that placement cannot check out of pods,
// and says why, for the group's condition.
func (a *Mode) splitUnmodelled(pods []*corev1.Pod) (modelled []*corev1.Pod, free int, why string) {
	var reasons []string
	for _, p := range pods {
		r := a.unmodelled(p)
		if r == "" {
			modelled = append(modelled, p)
			continue
		}
		free++
		if len(reasons) < 2 && !slices.Contains(reasons, r) {
			reasons = append(reasons, r)
		}
	}
	return modelled, free, strings.Join(reasons, "; ")
}

// unpinnedNote is what the group's Admitted message adds for pods
// released unpinned.
func unpinnedNote(free int, why string) string {
	if free == 0 {
		return ""
	}
	return fmt.Sprintf("; %d pods are released unpinned, since placement cannot check where they may run (%s)", free, why)
}
