package podgroup

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// maxNamedPods bounds how many pods a condition message names.
const maxNamedPods = 5

// markOtherGates is part of step 7, for an admitted group not yet bound:
// the scheduler binds a pod only once every scheduling gate is gone, so a
// released pod that another tool still gates holds the whole gang back.
// Scheduled=False says which pods and gates; the condition goes away once
// no such pod is left, and Scheduled turns True once the gang is bound.
func markOtherGates(pg *v1alpha1.PodGroup, v *podView, now time.Time) {
	if meta.IsStatusConditionTrue(pg.Status.Conditions, v1alpha1.ConditionScheduled) {
		return
	}
	if len(v.otherGated) == 0 {
		if c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.ConditionScheduled); c != nil && c.Reason == scheduling.ReasonOtherSchedulingGates {
			meta.RemoveStatusCondition(&pg.Status.Conditions, v1alpha1.ConditionScheduled)
		}
		return
	}
	named := make([]string, 0, maxNamedPods)
	for _, p := range v.otherGated {
		if len(named) == maxNamedPods {
			break
		}
		gates := make([]string, len(p.Spec.SchedulingGates))
		for i, g := range p.Spec.SchedulingGates {
			gates[i] = g.Name
		}
		named = append(named, fmt.Sprintf("%s (%s)", p.Name, strings.Join(gates, ", ")))
	}
	more := ""
	if n := len(v.otherGated) - len(named); n > 0 {
		more = fmt.Sprintf(" and %d more", n)
	}
	msg := fmt.Sprintf("%d released pods still carry other scheduling gates, and the scheduler binds none of them until every gate is gone: %s%s",
		len(v.otherGated), strings.Join(named, "; "), more)
	setCondition(pg, v1alpha1.ConditionScheduled, metav1.ConditionFalse, scheduling.ReasonOtherSchedulingGates, truncate(msg), now)
}
