package podgroup

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
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
// deletes finished Jobs; one never admitted whose pods are all gone is
// deleted as long after its last pod went (noPods). The deletion is guarded by the group's UID and
// resourceVersion, so a group re-created or changed meanwhile is kept. It
// returns when to look again.
func (c *Controller) expireCreated(ctx context.Context, pg *v1alpha1.PodGroup, v *podView, now time.Time) (time.Duration, error) {
	if !createdFromPods(pg) || v.pods > 0 || pg.Status.UncountedTerminatedPods != nil || pg.DeletionTimestamp != nil {
		return 0, nil
	}
	since, why := expiresFrom(pg)
	if since == nil {
		return 0, nil
	}
	if wait := since.Add(c.cfg.CreatedGroupTTL).Sub(now); wait > 0 {
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
	klog.FromContext(ctx).V(2).Info("Deleted a PodGroup created from pod annotations", "why", why, "ttl", c.cfg.CreatedGroupTTL)
	c.recorder.Eventf(pg, corev1.EventTypeNormal, scheduling.EventExpired,
		"deleted: created from pod annotations, %s %s ago with no pods left (--created-group-ttl %s)",
		why, now.Sub(since.Time).Round(time.Second), c.cfg.CreatedGroupTTL)
	return 0, nil
}

// expiresFrom is when a created group's TTL starts, if it has one: its
// completion, once it finished, or, for a group never admitted, when its
// last pod went (the lastTransitionTime of Admitted=False/NoPods).
func expiresFrom(pg *v1alpha1.PodGroup) (*metav1.Time, string) {
	if isFinished(pg) {
		return pg.Status.CompletionTime, "finished"
	}
	if c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.ConditionAdmitted); c != nil &&
		c.Status == metav1.ConditionFalse && c.Reason == scheduling.ReasonNoPods {
		return &c.LastTransitionTime, "never admitted, its last pod gone"
	}
	return nil, ""
}

// createdFromPods reports whether the controller created the group from its
// pods' annotations: only such a group expires.
func createdFromPods(pg *v1alpha1.PodGroup) bool {
	_, created := pg.Annotations[scheduling.CreatedFromPodAnnotation]
	return created
}

// noPods is step 6's finding for a group created from pod annotations
// that was never admitted and has no pod left (issue 21, item 5): every pod
// that asked for it was deleted before its gang was admitted. It gets
// Admitted=False/NoPods, set anew (restart) so that its lastTransitionTime
// is when the last pod went, and step 14 deletes it CreatedGroupTTL later,
// a restart notwithstanding. Without it such a group, and the roles
// template it may carry, stayed for ever. A pod that comes back ends the
// wait: the group waits for pods again.
func (c *Controller) noPods(pg *v1alpha1.PodGroup) *notAdmitted {
	what := "never admitted"
	if meta.IsStatusConditionTrue(pg.Status.Conditions, v1alpha1.ConditionPreempted) {
		what = "preempted"
	}
	n := waiting(scheduling.ReasonNoPods, fmt.Sprintf("was created from pod annotations and %s, and has no pod left; "+
		"it is deleted %s after its last pod went (--created-group-ttl), unless a pod of it appears", what, c.cfg.CreatedGroupTTL))
	n.restart = true
	return n
}
