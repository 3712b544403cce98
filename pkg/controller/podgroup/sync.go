package podgroup

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
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
			c.created.forget(key) // nothing is created here
			return 0, c.releaseUnmanaged(ctx, key, pods)
		}
		return c.syncMissingGroup(ctx, namespace, name, pods)
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
	return c.syncGroup(ctx, key, pg, pods)
}

// syncGroup is steps 2 to 14 for a group that exists, is managed and is
// not being deleted. Each step is a call to the file docs/controller.md
// names for it, in the order it gives; TestSyncWalksEachFileOnce checks
// that the calls enter each file once, but for the files the docs'
// "Walking one sync" names and says why.
func (c *Controller) syncGroup(ctx context.Context, key scheduling.GroupKey, pg *v1alpha1.PodGroup, pods []*corev1.Pod) (time.Duration, error) {
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
	if c.completePartialPreemption(key, pg, next, view, now) {       // step 6b, partialpreemption.go
		admitted = false
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
	actErr := c.adopt(ctx, pg, view)                                 // step 9a
	actErr = errors.Join(actErr, c.release(ctx, pg, view, admitted)) // step 9, release.go
	actErr = errors.Join(actErr, c.markVictims(ctx, pg))             // step 9b, preemption.go
	actErr = errors.Join(actErr, c.evictPreempted(ctx, pg, view))    // step 9c, evict.go
	removed, removeErr := c.removeFinalizers(ctx, pg, view)          // step 10
	actErr = errors.Join(actErr, removeErr)

	// Count, steps 11 to 13: what lost its finalizer, and finish the group
	// if it is done.
	// deferred carries step 4's counters: written, or waiting for the batch.
	next = deferred.DeepCopy()
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

func moreToRecordDelay(more bool) time.Duration {
	if more {
		return time.Millisecond // the next batch of at most 500, right away.
	}
	return 0
}
