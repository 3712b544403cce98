package podgroup

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// refuseRecounts is step 5a (issue 21, item 7): a finished pod that carries
// the tracking finalizer is counted only if its finalizer was never taken
// off. Muster adds the finalizer only to a pod that has not ended (the
// webhook at creation, the patches that release or adopt a running pod), so
// a finished pod that shows it again after Muster took it off was given it
// by someone else, and counting it would forge the group's counts. Such a
// pod is:
//   - any finished pod of a finished group: the group finished only with
//     every finished pod counted (accountingDone) and no pod active, and a
//     finished group releases and adopts nobody, so no pod of it can end
//     with the finalizer Muster gave it. This holds across restarts, since
//     it reads only the group's status;
//   - a pod whose finalizer this controller took off after recording it
//     (uidsCounted, memory.go), for as long as the pod exists.
//
// Its UID is kept out of step 5, and step 10 takes the finalizer off again
// without counting it, so that nothing is left stuck. A UID already in
// uncountedTerminatedPods is recorded, not counted yet, and is left alone.
func (c *Controller) refuseRecounts(key scheduling.GroupKey, pg *v1alpha1.PodGroup, v *podView) {
	recorded := map[types.UID]bool{}
	if u := pg.Status.UncountedTerminatedPods; u != nil {
		for _, uid := range slices.Concat(u.Succeeded, u.Failed) {
			recorded[uid] = true
		}
	}
	finished := isFinished(pg)
	for uid := range v.finished {
		if recorded[uid] || (!finished && !c.memory.expecting(key, uidsCounted, uid)) {
			continue
		}
		delete(v.finished, uid)
		if p, ok := v.withFinalizer[uid]; ok {
			v.recounted = append(v.recounted, p)
		}
	}
	// A stable order keeps the patches of retries identical.
	slices.SortFunc(v.recounted, func(a, b *corev1.Pod) int { return cmp.Compare(a.UID, b.UID) })
	c.warnRecounted(pg, v)
}

// warnRecounted tells each pod whose finalizer was put back, once, that it
// is not counted again.
func (c *Controller) warnRecounted(pg *v1alpha1.PodGroup, v *podView) {
	for _, p := range v.recounted {
		c.warnOnce(p.UID, scheduling.EventFinalizerReadded, func() {
			c.recorder.Eventf(p, corev1.EventTypeWarning, scheduling.EventFinalizerReadded,
				"finalizer %s was added back after this pod ended and was counted in PodGroup %s; it is removed again and the pod is not counted twice",
				scheduling.TrackingFinalizer, pg.Name)
		})
	}
}
