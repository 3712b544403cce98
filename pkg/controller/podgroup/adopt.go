package podgroup

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/jsonpatch"
)

// adopt is step 9a: the tracking finalizer goes back on every released pod
// of the group that runs, or waits to run, without it (KEP-2307, "Pod
// adoption"). Such pods are those of a group that was deleted (cleanup took
// the finalizer off) and created again while they ran, by hand or from a
// gated pod's annotations; without the finalizer their end would never be
// counted, and the group would end Failed with nothing succeeded. Gated pods
// get the finalizer in the patch that releases them (adoptOps). A finished
// group counts no more pods, so it adopts none.
func (c *Controller) adopt(ctx context.Context, pg *v1alpha1.PodGroup, v *podView) error {
	if isFinished(pg) {
		return nil
	}
	key := groupKey(pg.Namespace, pg.Name)
	var pods []*corev1.Pod
	for _, p := range v.untracked {
		// A finalizer added that the cache does not show yet: patching again
		// would fail its resourceVersion test.
		if !c.memory.expecting(key, finalizersAdded, p.UID) {
			pods = append(pods, p)
		}
	}
	if len(pods) == 0 {
		return nil
	}
	done, errs := c.patchPods(ctx, pods, adoptPatch, true)
	c.memory.expect(key, finalizersAdded, done...)
	if len(errs) > 0 {
		return fmt.Errorf("adopting %d of %d running pods: %w", len(errs), len(pods), errors.Join(errs...))
	}
	klog.FromContext(ctx).V(2).Info("Adopted running pods", "count", len(done))
	return nil
}

// adoptPatch adds the tracking finalizer to a running pod. The UID and
// resourceVersion tests make it fail, rather than track a pod that changed
// since it was read: a pod that ended meanwhile, or one another writer gave
// finalizers, is looked at again from a fresh read. Adding the finalizer to
// a pod that was never counted keeps counting exactly-once: a pod is counted
// only when it has ended, and an ended pod is never adopted.
func adoptPatch(p *corev1.Pod) ([]byte, bool) {
	if scheduling.HasTrackingFinalizer(p) || scheduling.IsEnding(p) {
		return nil, false
	}
	return jsonpatch.Marshal([]jsonpatch.Op{
		jsonpatch.Test("/metadata/uid", p.UID),
		jsonpatch.Test("/metadata/resourceVersion", p.ResourceVersion),
		jsonpatch.Append("/metadata/finalizers", len(p.Finalizers), scheduling.TrackingFinalizer),
	}), true
}
