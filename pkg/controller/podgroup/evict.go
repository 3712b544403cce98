package podgroup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// evictPreempted is step 9c, in a preempted group's own sync: while the
// group is Preempted and not admitted again, each of its pods that was
// released and still runs (or waits to be bound) is evicted, in parallel
// (at most --pod-patch-concurrency at once). Pods its framework creates
// afterwards are gated, and wait whole, as for any gang.
func (c *Controller) evictPreempted(ctx context.Context, pg *v1alpha1.PodGroup, v *podView) error {
	cond := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.ConditionPreempted)
	if cond == nil || cond.Status != metav1.ConditionTrue || isAdmitted(pg) {
		return nil
	}
	targets := releasedPods(v)
	var mu sync.Mutex
	var errs []error
	workqueue.ParallelizeUntil(ctx, c.cfg.PatchConcurrency, len(targets), func(i int) {
		if err := c.evictPod(ctx, targets[i], cond.Message); err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	})
	return errors.Join(errs...)
}

// releasedPods are the pods of a group that were released and neither
// ended nor are being deleted.
func releasedPods(v *podView) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range v.all {
		if !scheduling.HasGate(p) && !scheduling.IsEnding(p) {
			out = append(out, p)
		}
	}
	return out
}

// stillReleased is how many released pods a preempted group that is not
// admitted again still has, which step 9c evicts.
func stillReleased(pg *v1alpha1.PodGroup, v *podView) int {
	if isAdmitted(pg) || !meta.IsStatusConditionTrue(pg.Status.Conditions, v1alpha1.ConditionPreempted) {
		return 0
	}
	return len(releasedPods(v))
}

// evictPod evicts one pod as kube-scheduler's preemption does: first the
// condition DisruptionTarget (reason PreemptionByMuster), by which a
// framework tells preemption from a crash (a Job's podFailurePolicy can
// ignore it), then a delete with the pod's grace period. Both name the
// pod's UID, so a new pod of the same name is never touched. The
// ValidatingAdmissionPolicy muster-pod-writes lets Muster delete only a pod
// that carries that condition.
func (c *Controller) evictPod(ctx context.Context, p *corev1.Pod, why string) error {
	pods := c.kube.CoreV1().Pods(p.Namespace)
	if disrupted(p) && !preemptedByMuster(p) {
		// Another evictor (kube-scheduler's preemption, a drain) marked
		// it first and deletes it itself; muster-pod-writes would refuse
		// Muster's delete of a pod that does not carry its reason.
		return nil
	}
	if !preemptedByMuster(p) {
		patch, err := disruptionPatch(p.UID, why, metav1.NewTime(c.clock.Now()))
		if err != nil {
			return err
		}
		_, err = pods.Patch(ctx, p.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{FieldManager: scheduling.ControllerName}, "status")
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil // gone, or replaced by a new pod of its name.
		}
		if err != nil {
			return fmt.Errorf("marking pod %s/%s as preempted%s: %w", p.Namespace, p.Name, causes(err), err)
		}
	}
	err := pods.Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting preempted pod %s/%s%s: %w", p.Namespace, p.Name, causes(err), err)
	}
	c.metrics.podsPreempted.Inc()
	c.recorder.Event(p, corev1.EventTypeWarning, scheduling.EventPreempted, why)
	return nil
}

// disruptionPatch is the strategic merge patch of pods/status that adds
// DisruptionTarget with reason PreemptionByMuster. Conditions merge by
// type, so the pod's others stay; metadata.uid makes the API refuse it for
// another pod of the same name.
func disruptionPatch(uid types.UID, why string, now metav1.Time) ([]byte, error) {
	return json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": uid},
		"status": map[string]any{"conditions": []corev1.PodCondition{{
			Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: scheduling.ReasonPreemptionByMuster,
			Message: why, LastTransitionTime: now,
		}}},
	})
}

// evictedWhilePreempted reports whether a failed pod was deleted, with a
// DisruptionTarget condition of any reason, while its group was preempted
// (from Preempted=True until it was admitted again): Muster evicted it,
// though kube-scheduler wrote the condition last. Releases without
// kubernetes#134927 (1.30 here) also preempt victims that are already
// being deleted, and
// rewrites their reason to PreemptionByScheduler, when the preemptor's
// pods, released with fast release, wait for them to go.
func evictedWhilePreempted(pg *v1alpha1.PodGroup, p *corev1.Pod) bool {
	if p == nil || p.DeletionTimestamp == nil || !disrupted(p) {
		return false
	}
	c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.ConditionPreempted)
	if c == nil {
		return false
	}
	deleted := p.DeletionTimestamp.Time
	if g := p.DeletionGracePeriodSeconds; g != nil {
		deleted = deleted.Add(-time.Duration(*g) * time.Second)
	}
	// Times are in seconds: a pod deleted in the second of the marking
	// was deleted by it.
	from := c.LastTransitionTime.Time.Truncate(time.Second)
	if deleted.Before(from) {
		return false
	}
	return c.Status == metav1.ConditionTrue || deleted.Before(c.LastTransitionTime.Time)
}

// disruption is the pod's DisruptionTarget=True condition, or nil.
func disruption(p *corev1.Pod) *corev1.PodCondition {
	_, c := podutil.GetPodCondition(&p.Status, corev1.DisruptionTarget)
	if c == nil || c.Status != corev1.ConditionTrue {
		return nil
	}
	return c
}

// disrupted reports whether the pod carries DisruptionTarget=True.
func disrupted(p *corev1.Pod) bool { return disruption(p) != nil }

// disruptedFor reports whether the pod carries DisruptionTarget=True with
// that reason.
func disruptedFor(p *corev1.Pod, reason string) bool {
	c := disruption(p)
	return c != nil && c.Reason == reason
}

// preemptedBySchedulerPod reports whether the pod carries DisruptionTarget
// with reason PreemptionByScheduler.
func preemptedBySchedulerPod(p *corev1.Pod) bool {
	return disruptedFor(p, corev1.PodReasonPreemptionByScheduler)
}

// preemptedByMuster reports whether the pod carries DisruptionTarget with
// reason PreemptionByMuster.
func preemptedByMuster(p *corev1.Pod) bool {
	return disruptedFor(p, scheduling.ReasonPreemptionByMuster)
}
