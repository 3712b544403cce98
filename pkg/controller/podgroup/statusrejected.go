package podgroup

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

const (
	// statusRejectedBackoff is how long a group whose status write the API
	// refused for good waits before admission decides for it again, unless
	// its spec changes first. The same decision on the same pods would be
	// refused again, so retrying at once would be a hot loop of admission
	// cycles and refused writes; 30s lets a cluster that changed (pods
	// deleted, capacity elsewhere) give a different decision soon.
	statusRejectedBackoff = 30 * time.Second
	// maxStatusRejectedBackoff caps the doubling of statusRejectedBackoff
	// for a group refused again and again: 10m, as the workqueue's own
	// per-item backoff is of the same order, and a change of spec ends the
	// wait at once anyway.
	maxStatusRejectedBackoff = 10 * time.Minute
)

// refusedForGood reports whether a write failed in a way that writing the
// same object again can never fix: the API's validation refused it
// (Invalid, 422), or it is too large for the request (413) or for storage
// (etcd's "request is too large", which the API server reports as an
// internal error).
func refusedForGood(err error) bool {
	if err == nil {
		return false
	}
	if apierrors.IsInvalid(err) || apierrors.IsRequestEntityTooLargeError(err) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "request is too large") || strings.Contains(msg, "trying to send message larger than max")
}

// rejection is what is remembered of a group whose status write was
// refused for good: admission does not decide for it again before until,
// nor while its spec is at generation.
type rejection struct {
	generation int64
	until      time.Time
	backoff    time.Duration
	msg        string
}

// A group's memory keeps the last status write refused for good
// (groupMemory.rejection). It goes when the group's spec changes, when the
// group is gone, or when a later write admits it.

// reject records a refusal at now and returns the backoff it starts:
// doubled from the last one while the spec is unchanged.
func (g *groupMemories) reject(key scheduling.GroupKey, generation int64, msg string, now time.Time) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	m := g.of(key)
	backoff := statusRejectedBackoff
	if old := m.rejection; old != nil && old.generation == generation {
		backoff = min(2*old.backoff, maxStatusRejectedBackoff)
	}
	m.rejection = &rejection{generation: generation, until: now.Add(backoff), backoff: backoff, msg: msg}
	return backoff
}

// rejectionHolds reports how long admission still waits for the group at
// generation, 0 if it may decide now. A new generation ends the wait.
func (g *groupMemories) rejectionHolds(key scheduling.GroupKey, generation int64, now time.Time) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	m := g.peek(key)
	if m == nil || m.rejection == nil {
		return 0
	}
	if m.rejection.generation != generation {
		m.rejection = nil
		return 0
	}
	return max(m.rejection.until.Sub(now), 0)
}

// forgetRejection drops the group's refused write.
func (g *groupMemories) forgetRejection(key scheduling.GroupKey) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if m := g.peek(key); m != nil {
		m.rejection = nil
	}
}

// rejectedMessage names what the API refused, field by field where it says.
func rejectedMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		if d := status.Status().Details; d != nil && len(d.Causes) > 0 {
			parts := make([]string, 0, len(d.Causes))
			for _, c := range d.Causes {
				parts = append(parts, fmt.Sprintf("%s: %s", c.Field, c.Message))
			}
			return strings.Join(parts, "; ")
		}
		return status.Status().Message
	}
	return err.Error()
}

// giveUp is step 8b's decision on a status write refused for good (issue
// 21, item 3): writing the same decision again would be refused again, for
// ever, while the capacity assumed for it stayed held. So the decision is
// dropped with its assumed capacity (admitter.Drop), and admission waits
// for the group (rejections, with backoff, or until its spec changes). It
// returns why, for writeGivenUp (sync.go) to record, and when to look
// again.
func (c *Controller) giveUp(ctx context.Context, key scheduling.GroupKey, pg *v1alpha1.PodGroup, writeErr error, now time.Time) (*notAdmitted, time.Duration) {
	c.admitter.Drop(key)
	what := rejectedMessage(writeErr)
	backoff := c.memory.reject(key, pg.Generation, what, now)
	msg := truncate(fmt.Sprintf("the API refused this group's status write for good: %s; the decision it carried and the capacity assumed for it were given back, and admission decides again in %s or once the spec changes", what, backoff))
	klog.FromContext(ctx).Info("Status write refused for good; gave up its decision", "err", writeErr, "backoff", backoff)
	return warning(scheduling.ReasonStatusRejected, msg, scheduling.EventStatusRejected), backoff
}
