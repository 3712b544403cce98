package podgroup

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/jsonpatch"
)

// cleanup is the path of docs/controller.md for a PodGroup being deleted: the tracking finalizer
// comes off every pod of the group first, so that no pod is ever stuck
// Terminating because of Muster, and only then does the group's pod-cleanup
// finalizer come off. Gated pods stay gated: a PodGroup re-created with the
// same name adopts them.
func (c *Controller) cleanup(ctx context.Context, pg *v1alpha1.PodGroup, pods []*corev1.Pod) error {
	var tracked []*corev1.Pod
	for _, p := range pods {
		if scheduling.HasTrackingFinalizer(p) && !c.memory.expecting(groupKey(pg.Namespace, pg.Name), finalizersRemoved, p.UID) {
			tracked = append(tracked, p)
		}
		if scheduling.HasGate(p) {
			c.warnOnce(p.UID, scheduling.EventPodGroupDeleted, func() {
				c.recorder.Eventf(p, corev1.EventTypeWarning, scheduling.EventPodGroupDeleted,
					"PodGroup %s was deleted; this pod stays gated until a PodGroup of that name is created again", pg.Name)
			})
		}
	}
	done, errs := c.patchPods(ctx, tracked, removeFinalizerPatch, true)
	c.memory.expect(groupKey(pg.Namespace, pg.Name), finalizersRemoved, done...)
	if len(errs) > 0 {
		return fmt.Errorf("releasing pods of deleted PodGroup %s/%s: %w", pg.Namespace, pg.Name, errors.Join(errs...))
	}
	if err := c.removeGroupFinalizer(ctx, pg); err != nil {
		return err
	}
	klog.FromContext(ctx).V(2).Info("Released the pods of a deleted PodGroup", "pods", len(tracked))
	return nil
}

// removeGroupFinalizer takes pod-cleanup off the group, guarded by a test
// of the finalizer's position and of the group's UID.
func (c *Controller) removeGroupFinalizer(ctx context.Context, pg *v1alpha1.PodGroup) error {
	ops, ok := jsonpatch.RemoveFinalizer(pg.UID, pg.Finalizers, scheduling.PodCleanupFinalizer)
	if !ok {
		return nil
	}
	_, err := c.muster.SchedulingV1alpha1().PodGroups(pg.Namespace).Patch(ctx, pg.Name, types.JSONPatchType, jsonpatch.Marshal(ops), metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("removing %s from PodGroup %s/%s: %w", scheduling.PodCleanupFinalizer, pg.Namespace, pg.Name, err)
	}
	return nil
}

// releaseUnmanaged takes the tracking finalizer off the ended or deleted pods
// of a group in a namespace Muster does not manage (the selector changed
// after they were created, or the webhook's selector differs from the
// controller's). Muster keeps no counts there, so nothing is counted.
func (c *Controller) releaseUnmanaged(ctx context.Context, key scheduling.GroupKey, pods []*corev1.Pod) error {
	var release []*corev1.Pod
	for _, p := range pods {
		if holdsFinalizerToRelease(p) && !c.memory.expecting(key, finalizersRemoved, p.UID) {
			release = append(release, p)
		}
	}
	if len(release) == 0 {
		return nil
	}
	done, errs := c.patchPods(ctx, release, removeFinalizerPatch, true)
	c.memory.expect(key, finalizersRemoved, done...)
	if len(errs) > 0 {
		return fmt.Errorf("releasing pods of %s in a namespace Muster does not manage: %w", key, errors.Join(errs...))
	}
	return nil
}
