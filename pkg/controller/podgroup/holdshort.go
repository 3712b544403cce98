package podgroup

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// holdShort is step 9's rule for an admitted group: its gated pods go only
// if, with them, at least minCount of its pods have succeeded, run (or
// were released) or go now. A group that fell short (a pod deleted while
// the cache still showed it, a whole gang restarted by its framework)
// therefore never releases new pods one at a time, which would let a part
// of a gang hold nodes that the rest may never get; it waits until enough
// pods exist again and, with capacity-aware admission, are placed. Pods
// that join a complete gang (replacements, scale-up beyond minCount) still
// go at once. Succeeded pods count, so that a pod that joins as the others
// end is released rather than stranded. It reports whether to hold, and
// tells each held pod once why.
func (c *Controller) holdShort(pg *v1alpha1.PodGroup, v *podView, ready []*corev1.Pod) bool {
	key := groupKey(pg.Namespace, pg.Name)
	readyNow := sets.New[types.UID]()
	for _, p := range ready {
		readyNow.Insert(p.UID)
	}
	// Every active pod counts but those that stay gated after this release,
	// and so does every place reserved for a pod of a createdLater role:
	// admission placed the gang with them, so a driver's workers that
	// arrive one by one each go at once (reservations.go). With count
	// admission nothing is reserved, and such pods are not waited for.
	have := v.active + c.succeededSoFar(key, pg, v) + reservedPlaces(pg)
	if c.capacity == nil {
		have += sumCounts(laterMissing(pg, v))
	}
	for _, p := range activeGated(v) {
		if !readyNow.Has(p.UID) && !c.ungated.pending(key, p.UID) {
			have--
		}
	}
	need := minCount(pg)
	if have >= need {
		return false
	}
	for _, p := range activeGated(v) {
		c.warnOnce(p.UID, reasonWaitingForGang, func() {
			c.recorder.Eventf(p, corev1.EventTypeNormal, reasonWaitingForGang,
				"PodGroup %s has %d of the %d pods a release needs (succeeded, running, or gated and ready to go); this pod stays gated until enough pods exist to be released together",
				pg.Name, have, need)
		})
	}
	return true
}

// succeededSoFar is how many pods of the group have succeeded: those
// counted, those recorded and not counted yet, and those this sync saw
// finish but has not recorded (batching). A pod whose finalizer removal
// the cache does not show yet may be counted already, so it is skipped.
func (c *Controller) succeededSoFar(key string, pg *v1alpha1.PodGroup, v *podView) int32 {
	n := pg.Status.Succeeded
	recorded := sets.New[types.UID]()
	if u := pg.Status.UncountedTerminatedPods; u != nil {
		recorded.Insert(u.Succeeded...)
		n += int32(len(u.Succeeded))
	}
	for uid, r := range v.finished {
		if r == resultSucceeded && !recorded.Has(uid) && !c.expectations.pending(key, uid) {
			n++
		}
	}
	return n
}
