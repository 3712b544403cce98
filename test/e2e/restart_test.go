package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// TestWholeGangRestart: when every pod of a running gang is replaced (its
// framework restarts the whole gang), the replacements are not released one
// at a time as they appear: the first waits at the gate, told why, until
// minCount replacements exist, and then they go together.
func TestWholeGangRestart(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	createGroup(t, ctx, ns, "restart", 2)
	for i := range 2 {
		createPod(t, ctx, newPod(ns, fmt.Sprintf("w-%d", i), podOpts{group: "restart"}))
	}
	waitBound(t, ctx, ns, "restart", 2)
	waitFor(t, ctx, "the gang to be Scheduled", func(ctx context.Context) (bool, error) {
		pg, err := getGroup(ctx, ns, "restart")
		return err == nil && meta.IsStatusConditionTrue(pg.Status.Conditions, v1alpha1.ConditionScheduled), nil
	})
	deleteAllPods(t, ctx, ns, 15*time.Second)

	createPod(t, ctx, newPod(ns, "r-0", podOpts{group: "restart"}))
	waitFor(t, ctx, "r-0 to be told it waits for its gang", func(ctx context.Context) (bool, error) {
		if p, err := kube.CoreV1().Pods(ns).Get(ctx, "r-0", metav1.GetOptions{}); err == nil && !isGated(p) {
			return false, fmt.Errorf("r-0 was released alone: a gang of 2 would run with 1 pod")
		}
		told, err := podEvents(ctx, ns, "r-0", "WaitingForGang")
		return err == nil && len(told) > 0, nil
	})
	if p, err := kube.CoreV1().Pods(ns).Get(ctx, "r-0", metav1.GetOptions{}); err != nil || !isGated(p) {
		t.Fatalf("r-0 was released alone (err %v): a gang of 2 would run with 1 pod", err)
	}
	createPod(t, ctx, newPod(ns, "r-1", podOpts{group: "restart"}))
	waitBound(t, ctx, ns, "restart", 2) // r-0 and r-1, released together.
	deleteAllPods(t, ctx, ns, 15*time.Second)
}
