package podgroup

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/klog/v2"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

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
