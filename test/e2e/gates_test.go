package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestSchedulingGateHoldsPod proves the harness before the controller relies
// on it: a pod with a scheduling gate (not Muster's) stays Pending on the
// real kube-scheduler, and is bound to a kwok node once the gate goes.
func TestSchedulingGateHoldsPod(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	p := newPod(ns, "held", podOpts{})
	p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/hold"}}
	createPod(t, ctx, p)

	waitFor(t, ctx, "the SchedulingGated condition", func(ctx context.Context) (bool, error) {
		got, err := kube.CoreV1().Pods(ns).Get(ctx, "held", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonSchedulingGated {
				return true, nil
			}
		}
		return false, nil
	})
	// The scheduler had every chance to bind it by now; it must not have.
	if got, _ := kube.CoreV1().Pods(ns).Get(ctx, "held", metav1.GetOptions{}); got.Spec.NodeName != "" {
		t.Fatalf("gated pod was bound to %s", got.Spec.NodeName)
	}

	if _, err := kube.CoreV1().Pods(ns).Patch(ctx, "held", types.JSONPatchType,
		[]byte(`[{"op":"remove","path":"/spec/schedulingGates"}]`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("removing gate: %v", err)
	}
	waitFor(t, ctx, "the pod to be bound and Running", func(ctx context.Context) (bool, error) {
		got, err := kube.CoreV1().Pods(ns).Get(ctx, "held", metav1.GetOptions{})
		return err == nil && got.Spec.NodeName != "" && got.Status.Phase == corev1.PodRunning, nil
	})
}
