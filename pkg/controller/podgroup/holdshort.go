package podgroup

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/controller/admission"
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
// end is released rather than stranded.
//
// A release that was cut short (the leader died between the gate patches
// of one decision) is carried out in full: the pods the group had when it
// was admitted, created no later than status.admissionTime, were released
// by that decision, so for them the pods that ran and failed count too.
// Else a gang whose released part ended, one pod failing, before the next
// leader took over would keep its last pods gated for ever. A release is
// cut short only while fewer than minCount pods were released: once
// minCount were, the gang went whole, and a pod the group had at admission
// that is still gated was left out of the decision (a pod beyond minCount
// that did not fit). It is a joiner like any other, never a gang of its own
// after the admitted pods failed.
//
// Running pods of an instance that is being torn down do not count
// (goneInstancePods): a LeaderWorkerSet group restarted by its controller
// runs whole again, not its new leader first beside the old workers.
//
// It returns the pods among ready that it holds, and tells each of them
// once why.
func (c *Controller) holdShort(ctx context.Context, pg *v1alpha1.PodGroup, v *podView, ready []*corev1.Pod) []*corev1.Pod {
	key := groupKey(pg.Namespace, pg.Name)
	need := minCount(pg)
	have := c.gangHas(key, pg, v, ready)
	if have >= need {
		gone := c.goneInstancePods(ctx, v)
		if have-gone >= need {
			return nil
		}
		have -= gone
	}
	held, waiting := ready, activeGated(v)
	if decided := admittedWith(pg, ready); len(decided) > 0 && c.releasedSoFar(key, pg, v) < need &&
		c.gangHas(key, pg, v, decided)+c.finishedSoFar(key, pg, v, resultFailed) >= need {
		held = slices.DeleteFunc(slices.Clone(ready), func(p *corev1.Pod) bool { return slices.Contains(decided, p) })
		waiting = held
	}
	for _, p := range waiting {
		c.warnOnce(p.UID, scheduling.EventWaitingForGang, func() {
			c.recorder.Eventf(p, corev1.EventTypeNormal, scheduling.EventWaitingForGang,
				"PodGroup %s has %d of the %d pods a release needs (succeeded, running, or gated and ready to go); this pod stays gated until enough pods exist to be released together",
				pg.Name, have, need)
		})
	}
	return held
}

// gangHas is how many pods the group has if going are released now: every
// active pod but those that stay gated after this release, every pod that
// succeeded, and every place reserved for a pod of a createdLater role:
// admission placed the gang with them, so a driver's workers that arrive
// one by one each go at once (capacityadmission/reservations.go). With count admission
// nothing is reserved, and such pods are not waited for.
func (c *Controller) gangHas(key scheduling.GroupKey, pg *v1alpha1.PodGroup, v *podView, going []*corev1.Pod) int32 {
	goingNow := sets.New[types.UID]()
	for _, p := range going {
		goingNow.Insert(p.UID)
	}
	have := v.active + c.finishedSoFar(key, pg, v, resultSucceeded) + admission.ReservedPlaces(pg) + c.admitter.UnreservedLater(admissionGroup(key, pg, v))
	for _, p := range activeGated(v) {
		if !goingNow.Has(p.UID) && !c.memory.expecting(key, gatesRemoved, p.UID) {
			have--
		}
	}
	return have
}

// admittedWith are the pods among ready that the group had when it was
// admitted: created before status.admissionTime. Both are stored to the
// second, and a gang's last pod is typically created in the very second it
// is admitted, so a pod of that second counts too, but only while the
// group is not Scheduled: once minCount of its pods were bound the decision
// was carried out, and a pod of that second is a replacement (a whole gang
// restarted within a second of its admission) that must not count the
// gang's failed pods and go alone.
func admittedWith(pg *v1alpha1.PodGroup, ready []*corev1.Pod) []*corev1.Pod {
	at := pg.Status.AdmissionTime
	if at == nil {
		return nil
	}
	sameSecond := !meta.IsStatusConditionTrue(pg.Status.Conditions, v1alpha1.ConditionScheduled)
	var out []*corev1.Pod
	for _, p := range ready {
		if p.CreationTimestamp.Before(at) || (sameSecond && p.CreationTimestamp.Equal(at)) {
			out = append(out, p)
		}
	}
	return out
}

// releasedSoFar is how many of the group's pods were released: those that
// run or wait to be bound without the admission gate, and those that ended.
// Pods that ended include any replacement that ran and failed, so it may
// overstate the decision's released part, never understate it: a release
// is then taken as carried out, and its gated pods wait as joiners.
func (c *Controller) releasedSoFar(key scheduling.GroupKey, pg *v1alpha1.PodGroup, v *podView) int32 {
	return v.active - int32(len(activeGated(v))) + c.finishedSoFar(key, pg, v, resultSucceeded) + c.finishedSoFar(key, pg, v, resultFailed)
}

// finishedSoFar is how many pods of the group have ended with result:
// those counted, those recorded and not counted yet, and those this sync
// saw finish but has not recorded (batching). A pod whose finalizer removal
// the cache does not show yet may be counted already, so it is skipped.
func (c *Controller) finishedSoFar(key scheduling.GroupKey, pg *v1alpha1.PodGroup, v *podView, result podResult) int32 {
	n := pg.Status.Succeeded
	var uncounted []types.UID
	if u := pg.Status.UncountedTerminatedPods; u != nil {
		uncounted = u.Succeeded
	}
	if result == resultFailed {
		n = pg.Status.Failed
		uncounted = nil
		if u := pg.Status.UncountedTerminatedPods; u != nil {
			uncounted = u.Failed
		}
	}
	recorded := sets.New(uncounted...)
	n += int32(len(uncounted))
	for uid, r := range v.finished {
		if r == result && !recorded.Has(uid) && !c.memory.expecting(key, finalizersRemoved, uid) {
			n++
		}
	}
	return n
}
