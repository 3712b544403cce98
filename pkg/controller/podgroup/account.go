package podgroup

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// removeFinalizers is step 10: the finalizer comes off every pod whose UID is
// recorded in status, and off deleted pods that never ran. It returns the
// UIDs whose finalizer is now gone.
func (c *Controller) removeFinalizers(ctx context.Context, pg *v1alpha1.PodGroup, v *podView) (sets.Set[types.UID], error) {
	var targets []*corev1.Pod
	// results are the counted ones among targets, with what they count
	// as: their patch labels them so (recoverCounts).
	results := map[types.UID]corev1.PodPhase{}
	if u := pg.Status.UncountedTerminatedPods; u != nil {
		for result, uids := range map[corev1.PodPhase][]types.UID{corev1.PodSucceeded: u.Succeeded, corev1.PodFailed: u.Failed} {
			for _, uid := range uids {
				if p, ok := v.withFinalizer[uid]; ok {
					targets = append(targets, p)
					results[uid] = result
				}
			}
		}
		// A stable order keeps retries identical.
		slices.SortFunc(targets, func(a, b *corev1.Pod) int { return strings.Compare(string(a.UID), string(b.UID)) })
	}
	// A recorded pod whose finalizer is off is counted (now, or by the next
	// write of step 11): its UID is remembered while it exists, so that a
	// finalizer put back on it is never counted again (refuseRecounts).
	key := groupKey(pg.Namespace, pg.Name)
	recorded := slices.Clone(targets)
	gone := sets.New[types.UID]()
	defer func() {
		for _, p := range recorded {
			if gone.Has(p.UID) {
				c.memory.expect(key, uidsCounted, p.UID)
			}
		}
	}()
	targets = append(targets, v.released...)
	targets = append(targets, v.recounted...)
	// A removal the cache does not show yet is done: patching again would
	// fail its test, and the pod counts as removed.
	targets = slices.DeleteFunc(targets, func(p *corev1.Pod) bool {
		if c.memory.expecting(key, finalizersRemoved, p.UID) {
			gone.Insert(p.UID)
			return true
		}
		return false
	})
	if len(targets) == 0 {
		return gone, nil
	}
	done, errs := c.patchPods(ctx, targets, func(p *corev1.Pod) ([]byte, bool) {
		return removeCountedFinalizerPatch(p, pg.UID, results[p.UID])
	}, true)
	c.memory.expect(key, finalizersRemoved, done...)
	gone.Insert(done...)
	if len(errs) > 0 {
		// Step 11 still counts the pods whose finalizer did come off.
		return gone, fmt.Errorf("removing tracking finalizers: %w", errors.Join(errs...))
	}
	return gone, nil
}

// countRemoved is step 11: a recorded UID whose pod has lost its finalizer,
// or is gone, moves from uncountedTerminatedPods into the counters, in the
// same write. That write is what makes the count exactly-once.
func (c *Controller) countRemoved(pg *v1alpha1.PodGroup, v *podView, removed sets.Set[types.UID]) {
	u := pg.Status.UncountedTerminatedPods
	if u == nil {
		return
	}
	counted := func(uid types.UID) bool {
		_, stillTracked := v.withFinalizer[uid]
		return !stillTracked || removed.Has(uid)
	}
	countRoleRemoved(pg, counted)
	// move counts the UIDs whose pods are counted into counter, and keeps the rest.
	move := func(uids []types.UID, counter *int32, result string) (keep []types.UID) {
		for _, uid := range uids {
			if counted(uid) {
				*counter++
				v.onceWritten(c.metrics.podsAccounted.WithLabelValues(result).Inc)
			} else {
				keep = append(keep, uid)
			}
		}
		return keep
	}
	// A preempted UID is also a failed one: it is counted in preempted in
	// the same write that counts it in failed.
	var keepP []types.UID
	for _, uid := range u.Preempted {
		if counted(uid) {
			pg.Status.Preempted++
		} else {
			keepP = append(keepP, uid)
		}
	}
	keepS := move(u.Succeeded, &pg.Status.Succeeded, "succeeded")
	keepF := move(u.Failed, &pg.Status.Failed, "failed")
	if len(keepS) == 0 && len(keepF) == 0 {
		pg.Status.UncountedTerminatedPods = nil
		return
	}
	pg.Status.UncountedTerminatedPods = &v1alpha1.UncountedTerminatedPods{Succeeded: keepS, Failed: keepF, Preempted: keepP}
}

// accountingDone reports whether every finished pod is in the counters: a
// group cannot finish before its counts are exact.
func (c *Controller) accountingDone(pg *v1alpha1.PodGroup, v *podView, removed sets.Set[types.UID]) bool {
	if u := pg.Status.UncountedTerminatedPods; u != nil && len(u.Succeeded)+len(u.Failed) > 0 {
		return false
	}
	if v.terminating > 0 {
		return false
	}
	for uid := range v.finished {
		if !removed.Has(uid) && !c.memory.expecting(groupKey(pg.Namespace, pg.Name), finalizersRemoved, uid) {
			return false
		}
	}
	return true
}
