package podgroup

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// sync brings one group to its desired state. Its numbered steps are those
// of docs/controller.md, each a named function: settle, classify, then
// decide (one status write), act (pod writes), count (a second status
// write). Every status write that records a decision happens
// before the pod writes that act on it, so a crash between the two is
// repaired by the next sync and never admits twice or counts twice.
// It returns when to look at the group again, if a timer matters.
func (c *Controller) sync(ctx context.Context, key scheduling.GroupKey) (time.Duration, error) {
	namespace, name := key.Namespace, key.Name
	logger := klog.FromContext(ctx).WithValues("podgroup", key)
	ctx = klog.NewContext(ctx, logger)

	pods, err := c.podsOf(key)
	if err != nil {
		return 0, err
	}
	// Step 1, settle: load the group's memory; what this snapshot already
	// shows needs no more guarding. Whatever the sync leaves it, it is
	// saved once, at the end.
	c.memory.load(key, pods)
	defer c.memory.save(key)
	// The other paths: a group that does not exist, or is being deleted.
	pg, err := c.pgLister.PodGroups(namespace).Get(name)
	if err == nil {
		pg = c.memory.fresh(key, pg)
	}
	if apierrors.IsNotFound(err) {
		c.memory.forgetRejection(key)
		if !c.managedNamespace(namespace) {
			return 0, c.releaseUnmanaged(ctx, key, pods)
		}
		return 0, c.syncMissingGroup(ctx, namespace, name, pods)
	}
	if err != nil {
		return 0, fmt.Errorf("reading PodGroup %s: %w", key, err)
	}
	if !c.managedNamespace(namespace) || pg.DeletionTimestamp != nil {
		// Nothing will carry out a placement for this group any more.
		c.admitter.Drop(key)
	}
	if !c.managedNamespace(namespace) {
		// Muster leaves pods here alone, but never leaves a pod or a group
		// stuck on its finalizers.
		if err := c.releaseUnmanaged(ctx, key, pods); err != nil {
			return 0, err
		}
		if pg.DeletionTimestamp != nil {
			return 0, c.removeGroupFinalizer(ctx, pg)
		}
		return 0, nil
	}
	if pg.DeletionTimestamp != nil {
		return 0, c.cleanup(ctx, pg, pods)
	}

	now := c.clock.Now()
	view := classifyPods(pods, now, c.cfg.FastRelease) // step 2
	c.checkMinCountAnnotations(pg, pods)               // step 3

	// Decide, steps 4 to 8: counters, newly finished pods, admission and
	// scheduling, persisted in one status write before anything acts on them.
	next := pg.DeepCopy()
	setCounters(next, view)       // step 4
	c.checkRoles(next, pods, now) // step 4b, roles.go
	prunePlacements(next, view)
	c.refuseRecounts(key, next, view)                                // step 5a, recount.go
	recoverCounts(next, pods, now)                                   // step 5b, restored.go
	moreToRecord, deferFor := c.recordFinished(key, next, view, now) // step 5
	admitted := c.admit(next, view, pods, now)                       // step 6
	if why, then := preemptedPartly(next, view); why != "" {         // step 6b, partialpreemption.go
		admitted = false
		recordPreempted(next, corev1.PodReasonPreemptionByScheduler, why, then, now) // decision.go
		view.onceWritten(func() { c.recorder.Event(pg, corev1.EventTypeWarning, scheduling.EventPreempted, why) })
	}
	markScheduled(next, view, now)                        // step 7
	stalledAfter := c.checkStalled(next, view, pods, now) // step 7b
	next.Status.ObservedGeneration = pg.Generation
	// Step 8. A refresh this write defers is carried into step 13, which
	// says when to flush it.
	stored, _, wrote, err := c.writeStatus(ctx, key, pg, next, now)
	if err != nil {
		var retryAfter time.Duration
		if refusedForGood(err) {
			// Step 8b: the same write would be refused for ever; give up its
			// decision instead of retrying it (statusrejected.go).
			n, backoff := c.giveUp(ctx, key, pg, err, now)
			retryAfter, err = backoff, c.writeGivenUp(ctx, key, pg, n, err, now)
		}
		// Nothing this sync decided may act, but releasing the pods whose end
		// the stored status already records, and deleted pods that never
		// ran, waits on no decision: step 10 still runs, from the status as
		// stored. The error sends the group back to the queue.
		_, removeErr := c.removeFinalizers(ctx, pg, view)
		return retryAfter, errors.Join(err, removeErr)
	}
	if wrote && isAdmitted(stored) && !isAdmitted(pg) {
		c.memory.forgetRejection(key)
	}
	// Step 13 builds on what steps 4 to 8 decided, written or not: a
	// refresh deferred here (a message that changed within the batch
	// period) is otherwise lost, and nothing would sync the group again to
	// write it.
	deferred := next
	if wrote {
		deferred = stored
	}
	pg = stored
	if wrote {
		view.written()
	}
	if view.decisionApplied {
		c.admitter.Recorded(key)
	}

	// Act, steps 9 and 10: adopt running pods and release the gang, then
	// take the finalizer off counted pods. A failed pod write in step 9 does
	// not stop step 10 or the count: its error is returned at the end, so
	// the group is synced again.
	actErr := c.adopt(ctx, pg, view) // step 9a
	if admitted {                    // step 9
		actErr = errors.Join(actErr, c.ungate(ctx, pg, view))
	} else if isFinished(pg) {
		c.warnFinishedJoiners(pg, view)
	}
	actErr = errors.Join(actErr, c.markVictims(ctx, pg))          // step 9b, preemption.go
	actErr = errors.Join(actErr, c.evictPreempted(ctx, pg, view)) // step 9c, evict.go
	removed, removeErr := c.removeFinalizers(ctx, pg, view)       // step 10
	actErr = errors.Join(actErr, removeErr)

	// Count, steps 11 to 13: what lost its finalizer, and finish the group
	// if it is done.
	next = deferred.DeepCopy()
	setCounters(next, view)
	next.Status.ObservedGeneration = pg.Generation
	c.countRemoved(next, view, removed)                                  // step 11
	finishAfter := c.finish(next, view, pods, removed, now)              // step 12
	pg, flushAfter, wrote, err := c.writeStatus(ctx, key, pg, next, now) // step 13
	if err != nil {
		return 0, errors.Join(err, actErr)
	}
	if wrote {
		view.written()
	}
	c.metrics.observeGroup(key, pg)
	if actErr != nil {
		return 0, actErr
	}
	expireAfter, err := c.expireCreated(ctx, pg, view, now) // step 14, ttl.go
	if err != nil {
		return 0, err
	}
	return view.requeueAfter(now, moreToRecordDelay(moreToRecord), deferFor, finishAfter, flushAfter, stalledAfter, expireAfter), nil
}

// writeStatus writes next's status and returns the stored group. A status
// that records a decision (see decisions) is written at once. One that only
// refreshes counters or messages is written at most once per
// StatusBatchPeriod: then writeStatus keeps pg and says when to flush, so
// that a gang whose pods change state together costs a few writes, not one
// per pod event. wrote says whether it wrote: only then do the side effects
// of the decisions in next (podView.onceWritten) happen.
func (c *Controller) writeStatus(ctx context.Context, key scheduling.GroupKey, pg, next *v1alpha1.PodGroup, now time.Time) (stored *v1alpha1.PodGroup, flushAfter time.Duration, wrote bool, err error) {
	if equalStatus(pg, next) {
		return pg, 0, false, nil
	}
	decision := decisionChanged(pg, next)
	if !decision {
		if wait := c.flushWait(key, now); wait > 0 {
			return pg, wait, false, nil
		}
	}
	if logger := klog.FromContext(ctx).V(4); logger.Enabled() {
		logger.Info("Writing status", "decision", decision, "old", decisionsOf(&pg.Status), "new", decisionsOf(&next.Status))
	}
	updated, err := c.muster.SchedulingV1alpha1().PodGroups(pg.Namespace).UpdateStatus(ctx, next, statusUpdateOptions)
	if err != nil {
		return nil, 0, false, fmt.Errorf("writing status of PodGroup %s/%s: %w", pg.Namespace, pg.Name, err)
	}
	c.markFlushed(key)
	c.memory.wrote(key, pg, updated)
	return updated, 0, true, nil
}

// writeGivenUp is step 8b's write, after giveUp (statusrejected.go): a
// minimal write of the stored status says why the decision was given up. A
// group not admitted gets n, Admitted=False/StatusRejected naming the
// refused field; an admitted one keeps its condition, since admission
// cannot be undone, and only the Warning event says it. Once that is
// written, the refused write is handled: it returns nil, or writeErr with
// the error of this write if it failed too.
func (c *Controller) writeGivenUp(ctx context.Context, key scheduling.GroupKey, pg *v1alpha1.PodGroup, n *notAdmitted, writeErr error, now time.Time) error {
	minimal := pg.DeepCopy()
	v := &podView{}
	if !isAdmitted(minimal) {
		c.recordNotAdmitted(minimal, v, n, now) // decision.go
	}
	if _, _, wrote, err := c.writeStatus(ctx, key, pg, minimal, now); err != nil {
		return errors.Join(writeErr, fmt.Errorf("recording that the status write was refused: %w", err))
	} else if wrote {
		v.written()
	}
	if isAdmitted(minimal) {
		c.recorder.Event(pg, n.eventType, n.eventReason, n.message)
	}
	return nil
}

func moreToRecordDelay(more bool) time.Duration {
	if more {
		return time.Millisecond // the next batch of at most 500, right away.
	}
	return 0
}
