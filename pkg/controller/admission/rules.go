package admission

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// The rules on a group's status that both the controller and the modes
// read: one definition each.

// IsAdmitted reports Admitted=True.
func IsAdmitted(pg *v1alpha1.PodGroup) bool {
	return meta.IsStatusConditionTrue(pg.Status.Conditions, v1alpha1.ConditionAdmitted)
}

// IsFinished reports Finished=True.
func IsFinished(pg *v1alpha1.PodGroup) bool {
	return meta.IsStatusConditionTrue(pg.Status.Conditions, v1alpha1.ConditionFinished)
}

// MinCount is how many active pods admit the group: gang.minCount, or 1.
func MinCount(pg *v1alpha1.PodGroup) int32 {
	if g := pg.Spec.SchedulingPolicy.Gang; g != nil {
		return g.MinCount
	}
	return 1
}

// PlacementsByUID maps each placed pod's UID to its node.
func PlacementsByUID(pg *v1alpha1.PodGroup) map[types.UID]string {
	if len(pg.Status.Placements) == 0 {
		return nil
	}
	out := make(map[types.UID]string, len(pg.Status.Placements))
	for _, p := range pg.Status.Placements {
		out[p.UID] = p.Node
	}
	return out
}

// ReservedPlaces is how many places status.reservations holds.
func ReservedPlaces(pg *v1alpha1.PodGroup) int32 {
	var n int32
	for _, r := range pg.Status.Reservations {
		n += r.Count
	}
	return n
}

// TemplatePod is a pod with what a role's template says of its pods: one
// container with the requests, and the node selection and tolerations.
func TemplatePod(t *v1alpha1.PodGroupRoleTemplate) *corev1.Pod {
	p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "template"}}}}
	if t == nil {
		return p
	}
	p.Spec.Containers[0].Resources.Requests = t.Requests
	p.Spec.NodeSelector = t.NodeSelector
	if t.NodeAffinity != nil {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: t.NodeAffinity}
	}
	p.Spec.Tolerations = t.Tolerations
	return p
}

// MaxConditionMessage is the API's limit on a condition's message.
const MaxConditionMessage = 32768

// Truncate keeps a condition message within the API's limit.
func Truncate(s string) string {
	const max = MaxConditionMessage
	if len(s) <= max {
		return s
	}
	return s[:max-3] + "..."
}

// Soonest returns the smallest positive duration, or 0 if there is none.
func Soonest(ds ...time.Duration) time.Duration {
	var min time.Duration
	for _, d := range ds {
		if d > 0 && (min == 0 || d < min) {
			min = d
		}
	}
	return min
}
