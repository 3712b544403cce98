package podgroup

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/jsonpatch"
)

// removeGatePatch removes Muster's gate, and only it, from a pod. The test
// operations make the patch fail, rather than touch another tool's gate or a
// new pod of the same name, if the pod changed since it was read.
func removeGatePatch(p *corev1.Pod) ([]byte, bool) {
	ops, ok := removeGateOps(p)
	if !ok {
		return nil, false
	}
	return jsonpatch.Marshal(ops), true
}

// removeGateOps are removeGatePatch's operations, for a patch that does more.
func removeGateOps(p *corev1.Pod) ([]jsonpatch.Op, bool) {
	for i, g := range p.Spec.SchedulingGates {
		if g.Name == scheduling.AdmissionGate {
			ops := jsonpatch.RemoveItem(p.UID, "/spec/schedulingGates", i, "/name", scheduling.AdmissionGate)
			return append(ops, adoptOps(p)...), true
		}
	}
	return nil, false
}

// adoptOps put the tracking finalizer back, in the patch that releases the
// pod, on a gated pod that lacks it: cleanup takes it off every pod of a
// deleted group, and without it a re-created group that adopts the pod would
// never count its end (KEP-2307, "Pod adoption"). Only a pod that is neither
// terminal nor being deleted gets it; such a pod has never been counted, so
// counting stays exactly-once.
func adoptOps(p *corev1.Pod) []jsonpatch.Op {
	if scheduling.HasTrackingFinalizer(p) || scheduling.IsEnding(p) {
		return nil
	}
	add := jsonpatch.Append("/metadata/finalizers", len(p.Finalizers), scheduling.TrackingFinalizer)
	if len(p.Finalizers) == 0 {
		// The resourceVersion test makes the patch fail, rather than replace
		// a finalizer list another tool set since the pod was read.
		return []jsonpatch.Op{jsonpatch.Test("/metadata/resourceVersion", p.ResourceVersion), add}
	}
	return []jsonpatch.Op{add}
}

// removeFinalizerPatch removes the tracking finalizer, guarded the same way.
func removeFinalizerPatch(p *corev1.Pod) ([]byte, bool) {
	return removeCountedFinalizerPatch(p, "", "")
}

// removeCountedFinalizerPatch removes the tracking finalizer of a pod
// counted with result (Succeeded or Failed) in the group of UID group,
// and labels it so in the same patch (scheduling.CountedLabel, read by
// recoverCounts), which costs no request of its own. A result of "" is a
// pod that is not counted: only the finalizer goes. The pod's labels are
// never empty: it carries the group label.
func removeCountedFinalizerPatch(p *corev1.Pod, group types.UID, result corev1.PodPhase) ([]byte, bool) {
	ops, ok := jsonpatch.RemoveFinalizer(p.UID, p.Finalizers, scheduling.TrackingFinalizer)
	if !ok {
		return nil, false
	}
	if result != "" {
		ops = append(ops, jsonpatch.SetKey("/metadata/labels", p.Labels, scheduling.CountedLabel, scheduling.CountedValue(result, group)))
	}
	return jsonpatch.Marshal(ops), true
}

// patchPods applies makePatch to every pod, at most concurrency at a time.
// It returns the UIDs of pods that were patched, and the errors of the
// rest. A pod that no longer needs the patch counts as done, and so does a
// pod that is gone when goneIsDone: true for removals (nothing is left to
// remove), false for a release (a pod that is gone was not released). A
// failed test operation (the pod changed under us) is an error, so the
// group is synced again from a fresh read.
func (c *Controller) patchPods(ctx context.Context, pods []*corev1.Pod, makePatch func(*corev1.Pod) ([]byte, bool), goneIsDone bool) (done []types.UID, errs []error) {
	var mu sync.Mutex
	workqueue.ParallelizeUntil(ctx, c.cfg.PatchConcurrency, len(pods), func(i int) {
		p := pods[i]
		patch, needed := makePatch(p)
		var err error
		if needed {
			var out *corev1.Pod
			out, err = c.kube.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.JSONPatchType, patch, metav1.PatchOptions{})
			if goneIsDone && apierrors.IsNotFound(err) {
				err = nil
			}
			if err == nil && out != nil && out.UID == p.UID {
				// Admission learns what the patch did now, not when the
				// informer shows it: a released pod holds its node at once,
				// even if the group's status drops its placement first.
				c.admitter.ObservePod(out, false)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, fmt.Errorf("patching pod %s/%s%s: %w", p.Namespace, p.Name, causes(err), err))
			return
		}
		done = append(done, p.UID)
	})
	return done, errs
}

// causes returns the server's detailed reasons for a rejected patch, such as
// which test operation failed, which the generic 422 message leaves out.
func causes(err error) string {
	status, ok := err.(apierrors.APIStatus)
	if !ok || status.Status().Details == nil {
		return ""
	}
	var out string
	for _, c := range status.Status().Details.Causes {
		out += " (" + c.Message + ")"
	}
	return out
}
