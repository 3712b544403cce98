package podgroup

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// checkMinCountAnnotations is step 3: it tells pods whose min-count
// annotation disagrees with their group's minCount: all pods of a group must
// agree.
func (c *Controller) checkMinCountAnnotations(pg *v1alpha1.PodGroup, pods []*corev1.Pod) {
	want := minCount(pg)
	for _, p := range pods {
		v, has := p.Annotations[scheduling.MinCountAnnotation]
		if !has {
			continue
		}
		// Compare numbers: the webhook accepts "08" and "+8" as 8.
		if n, ok := scheduling.ParseMinCount(v); ok && n == want {
			continue
		}
		c.warnOnce(p.UID, scheduling.EventMinCountMismatch, func() {
			c.recorder.Eventf(p, corev1.EventTypeWarning, scheduling.EventMinCountMismatch,
				"annotation %s=%s disagrees with PodGroup %s, whose minCount is %d; all pods of a group must agree", scheduling.MinCountAnnotation, v, pg.Name, want)
		})
	}
}

// minCountTooLarge is step 6's bound on a gang (issue 21, item 3): a gang
// of more than MaxGangMinCount pods could never be admitted, since its
// placements would not fit in status.placements. Such a group gets
// Admitted=False/MinCountTooLarge naming the field and the rule, in both
// admission modes, instead of a decision whose status write is refused.
func minCountTooLarge(pg *v1alpha1.PodGroup) *notAdmitted {
	n := minCount(pg)
	if n <= scheduling.MaxGangMinCount {
		return nil
	}
	err := field.Invalid(field.NewPath("spec", "schedulingPolicy", "gang", "minCount"), n,
		fmt.Sprintf("must be at most %d (MaxGangMinCount): a gang is admitted with its placements recorded in status.placements, which holds at most %d; lower minCount (or the pods' %s annotation) to admit it",
			scheduling.MaxGangMinCount, scheduling.MaxPlacements, scheduling.MinCountAnnotation))
	return warning(scheduling.ReasonMinCountTooLarge, err.Error(), scheduling.EventWaiting)
}
