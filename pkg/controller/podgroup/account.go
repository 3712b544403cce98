package podgroup

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// recordFinished is step 5 of docs/controller.md (KEP-2307's first write):
// the UIDs of finished pods that still
// carry the tracking finalizer go into status.uncountedTerminatedPods, which
// is written before any finalizer comes off. Each list holds at most 500
// UIDs; moreToRecord says a further batch is waiting. While a group's pods
// keep finishing, new UIDs are recorded at most once per StatusBatchPeriod
// (deferFor says when next), unless a full batch is ready or the group has
// nothing active left, so that the end of a gang is never delayed.
func (c *Controller) recordFinished(key scheduling.GroupKey, pg *v1alpha1.PodGroup, v *podView, now time.Time) (moreToRecord bool, deferFor time.Duration) {
	u := pg.Status.UncountedTerminatedPods
	if u == nil {
		u = &v1alpha1.UncountedTerminatedPods{}
	}
	recorded := sets.New(u.Succeeded...).Insert(u.Failed...)
	var fresh []types.UID
	for uid := range v.finished {
		if !recorded.Has(uid) && !c.memory.expecting(key, finalizersRemoved, uid) {
			fresh = append(fresh, uid)
		}
	}
	if len(fresh) == 0 {
		return false, 0
	}
	if wait := c.flushWait(key, now); wait > 0 && v.active > 0 && len(fresh) < scheduling.MaxUncountedTerminatedPods {
		return false, wait
	}
	slices.Sort(fresh) // a stable order keeps retries identical.
	for _, uid := range fresh {
		switch {
		case v.finished[uid] == resultSucceeded && len(u.Succeeded) < scheduling.MaxUncountedTerminatedPods:
			u.Succeeded = append(u.Succeeded, uid)
		case v.finished[uid] == resultFailed && len(u.Failed) < scheduling.MaxUncountedTerminatedPods:
			u.Failed = append(u.Failed, uid)
			if v.preempted[uid] || evictedWhilePreempted(pg, v.withFinalizer[uid]) {
				u.Preempted = append(u.Preempted, uid)
			}
		default:
			moreToRecord = true
		}
	}
	pg.Status.UncountedTerminatedPods = u
	recordRoleFinished(pg, v)
	return moreToRecord, 0
}

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

// flushWait is how long a refresh of the group's status, or a batch of
// finished pods, waits before it is written: StatusBatchPeriod from the
// first change that had to wait. So the pods of a gang that arrive, start
// or finish together cost one write, not one per pod, and a decision
// written meanwhile carries every waiting change along for free.
func (c *Controller) flushWait(key scheduling.GroupKey, now time.Time) time.Duration {
	c.memory.mu.Lock()
	defer c.memory.mu.Unlock()
	m := c.memory.of(key)
	if m.batchStart.IsZero() {
		m.batchStart = now
	}
	return m.batchStart.Add(c.cfg.StatusBatchPeriod).Sub(now)
}

// markFlushed ends the group's batch: the status just written carries
// every change that waited.
func (c *Controller) markFlushed(key scheduling.GroupKey) {
	c.memory.mu.Lock()
	defer c.memory.mu.Unlock()
	if m := c.memory.peek(key); m != nil {
		m.batchStart = time.Time{}
	}
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
