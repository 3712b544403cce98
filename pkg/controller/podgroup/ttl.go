package podgroup

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// expireCreated is step 14: a PodGroup that the controller created from
// pod annotations has no owner to delete it, so a user who may only create
// pods could otherwise leave any number behind. Once such a group has
// finished, counted every pod, and has no pod left, it is deleted
// --created-group-ttl after its completion, as the Job TTL controller
// deletes finished Jobs. The deletion is guarded by the group's UID and
// resourceVersion, so a group re-created or changed meanwhile is kept. It
// returns when to look again.
func (c *Controller) expireCreated(ctx context.Context, pg *v1alpha1.PodGroup, v *podView, now time.Time) (time.Duration, error) {
	if _, created := pg.Annotations[scheduling.CreatedFromPodAnnotation]; !created || !isFinished(pg) || pg.Status.CompletionTime == nil ||
		v.pods > 0 || pg.Status.UncountedTerminatedPods != nil || pg.DeletionTimestamp != nil {
		return 0, nil
	}
	if wait := pg.Status.CompletionTime.Add(c.cfg.CreatedGroupTTL).Sub(now); wait > 0 {
		return wait, nil
	}
	err := c.muster.SchedulingV1alpha1().PodGroups(pg.Namespace).Delete(ctx, pg.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &pg.UID, ResourceVersion: &pg.ResourceVersion},
	})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return 0, nil // gone, or changed: the next sync decides again.
	case err != nil:
		return 0, fmt.Errorf("deleting finished PodGroup %s/%s created from pods: %w", pg.Namespace, pg.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Deleted a finished PodGroup created from pod annotations", "ttl", c.cfg.CreatedGroupTTL)
	c.recorder.Eventf(pg, corev1.EventTypeNormal, scheduling.EventExpired,
		"deleted: created from pod annotations, finished %s ago with no pods left (--created-group-ttl %s)",
		now.Sub(pg.Status.CompletionTime.Time).Round(time.Second), c.cfg.CreatedGroupTTL)
	return 0, nil
}
