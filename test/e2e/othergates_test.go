package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// TestOtherToolsGateIsReported runs a gang of two whose second pod also
// carries another tool's scheduling gate: Muster admits and releases both,
// the scheduler binds only the first, and the group's Scheduled=False says
// which pod and gate hold it. Once that gate is removed, the gang is bound
// and Scheduled=True.
func TestOtherToolsGateIsReported(t *testing.T) {
	const other = "example.com/quota"
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	createGroup(t, ctx, ns, "duo", 2)
	createPod(t, ctx, newPod(ns, "free", podOpts{group: "duo"}))
	held := newPod(ns, "held", podOpts{group: "duo"})
	held.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: other}}
	createPod(t, ctx, held)

	waitFor(t, ctx, "Scheduled=False/OtherSchedulingGates naming the held pod", func(ctx context.Context) (bool, error) {
		pg, err := getGroup(ctx, ns, "duo")
		if err != nil {
			return false, nil
		}
		c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.ConditionScheduled)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == "OtherSchedulingGates" &&
			strings.Contains(c.Message, "held ("+other+")"), nil
	})
	if p, err := kube.CoreV1().Pods(ns).Get(ctx, "held", metav1.GetOptions{}); err != nil || p.Spec.NodeName != "" {
		t.Fatalf("held pod: %v, bound to %q; want it unbound", err, p.Spec.NodeName)
	}

	// The other tool lets go: its gate is the only one left.
	if _, err := kube.CoreV1().Pods(ns).Patch(ctx, "held", types.JSONPatchType,
		[]byte(`[{"op":"test","path":"/spec/schedulingGates/0/name","value":"`+other+`"},{"op":"remove","path":"/spec/schedulingGates/0"}]`),
		metav1.PatchOptions{}); err != nil {
		t.Fatalf("removing the other gate: %v", err)
	}
	waitFor(t, ctx, "Scheduled=True", func(ctx context.Context) (bool, error) {
		pg, err := getGroup(ctx, ns, "duo")
		return err == nil && meta.IsStatusConditionTrue(pg.Status.Conditions, v1alpha1.ConditionScheduled), nil
	})
}
