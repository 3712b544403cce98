package podgroup

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// markScheduled is step 7: it sets Scheduled=True, and startTime, once
// minCount pods are bound to nodes. The condition never goes back.
func markScheduled(pg *v1alpha1.PodGroup, v *podView, now time.Time) {
	if !isAdmitted(pg) {
		return
	}
	if v.scheduled < minCount(pg) {
		markOtherGates(pg, v, now)
		return
	}
	if setCondition(pg, v1alpha1.ConditionScheduled, metav1.ConditionTrue, scheduling.ReasonMinCountBound,
		fmt.Sprintf("at least %d pods were bound to nodes", minCount(pg)), now) && pg.Status.StartTime == nil {
		t := metav1.NewTime(now)
		pg.Status.StartTime = &t
	}
}
