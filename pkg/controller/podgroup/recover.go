package podgroup

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// syncRecovering runs sync for key and turns a panic into an error, so that
// one group's input can never take the controller down: the worker goes on
// with other groups, the key is retried with the queue's backoff, and the
// leader keeps its Lease (a crash would hand it to a replica that relists and
// panics on the same input). A sync writes nothing that a later one does not
// redo (each step is an idempotent patch or a status write guarded by
// resourceVersion), and a release that stopped half-way is carried out in
// full by holdShort; so the group's pods stay as they were: gated pods stay
// gated, and a finished pod keeps the tracking finalizer until it is counted.
// Each panic is logged with its stack, counted in
// muster_controller_sync_panics_total and, when the group exists, told on
// it with a SyncPanicked Warning event.
func (c *Controller) syncRecovering(ctx context.Context, key scheduling.GroupKey, sync func(context.Context, scheduling.GroupKey) (time.Duration, error)) (requeueAfter time.Duration, err error) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		c.metrics.syncPanics.Inc()
		klog.FromContext(ctx).Error(nil, "Recovered from a panic syncing PodGroup", "key", key, "panic", r, "stack", string(debug.Stack()))
		if pg, getErr := c.pgLister.PodGroups(key.Namespace).Get(key.Name); getErr == nil {
			c.recorder.Eventf(pg, corev1.EventTypeWarning, scheduling.EventSyncPanicked,
				"the controller failed on this group (%v) and retries it with backoff; its pods stay as they are", r)
		}
		requeueAfter, err = 0, fmt.Errorf("sync of PodGroup %s/%s panicked: %v", key.Namespace, key.Name, r)
	}()
	return sync(ctx, key)
}
