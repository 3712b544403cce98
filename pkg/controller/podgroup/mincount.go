package podgroup

import (
	corev1 "k8s.io/api/core/v1"

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
