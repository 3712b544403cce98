package podgroup

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// release is step 9: an admitted group's gated pods go (ungate); a
// finished group that pods of a later instance of its workload wait for
// is deleted, so that they form their own (instance.go); and the pods
// that joined any other finished group are told why they stay gated
// (warnFinishedJoiners).
func (c *Controller) release(ctx context.Context, pg *v1alpha1.PodGroup, v *podView, admitted bool) error {
	if admitted {
		return c.ungate(ctx, pg, v)
	}
	if isFinished(pg) {
		if next := previousInstance(pg, v); next != nil {
			return c.deletePreviousInstance(ctx, pg, next)
		}
		c.warnFinishedJoiners(pg, v)
	}
	return nil
}

// ungate is step 9, for an admitted group: it removes the admission gate
// from every gated pod of an admitted group, in parallel, and observes the
// gate-removal latency.
func (c *Controller) ungate(ctx context.Context, pg *v1alpha1.PodGroup, v *podView) error {
	key := groupKey(pg.Namespace, pg.Name)
	placed := placementsByUID(pg)
	var pods []*corev1.Pod
	for _, p := range v.gatedPods {
		if _, ok := c.admitter.ReleaseTo(placed, p); !ok {
			continue // not placed yet: it waits for capacity.
		}
		// The cache still shows a finalizer that cleanup took off: wait until
		// it shows the removal, which syncs the group again, so that the gate
		// patch puts the finalizer back (adoptOps).
		// Nor release a pod twice from a cache that still shows its gate.
		if !c.memory.expecting(key, finalizersRemoved, p.UID) && !c.memory.expecting(key, gatesRemoved, p.UID) {
			pods = append(pods, p)
		}
	}
	if held := c.holdShort(ctx, pg, v, pods); len(held) > 0 {
		pods = slices.DeleteFunc(pods, func(p *corev1.Pod) bool { return slices.Contains(held, p) })
	}
	if len(pods) == 0 {
		return nil
	}
	if err := c.admitter.BeforeRelease(ctx, key); err != nil {
		return fmt.Errorf("before releasing %d pods: %w", len(pods), err)
	}
	release := func(p *corev1.Pod) ([]byte, bool) {
		node, _ := c.admitter.ReleaseTo(placed, p)
		return releasePatch(node)(p)
	}
	// A pod that is gone is not released: the gang may be short, and the
	// error makes the group sync again from a fresh read (holdShort).
	done, errs := c.patchPods(ctx, pods, release, false)
	c.memory.expect(key, gatesRemoved, done...)
	c.metrics.podsUngated.Add(float64(len(done)))
	if len(errs) > 0 {
		return fmt.Errorf("ungating %d of %d pods: %w", len(errs), len(pods), errors.Join(errs...))
	}
	if seen, ok := c.memory.takeLastPodSeen(key); ok {
		c.metrics.gateRemovalLatency.Observe(c.clock.Since(seen).Seconds())
	}
	klog.FromContext(ctx).V(2).Info("Released pods", "count", len(done))
	return nil
}

// warnFinishedJoiners is step 9 for a finished group: it tells pods that
// joined it why they stay gated.
func (c *Controller) warnFinishedJoiners(pg *v1alpha1.PodGroup, v *podView) {
	for _, p := range v.gatedPods {
		c.warnOnce(p.UID, scheduling.EventPodGroupFinished, func() {
			c.recorder.Eventf(p, corev1.EventTypeWarning, scheduling.EventPodGroupFinished,
				"PodGroup %s has finished; this pod stays gated", pg.Name)
		})
	}
}
