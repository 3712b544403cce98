package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
)

// TestControllerCrashDuringAccounting kills the controller's process in the
// middle of accounting 200 finishing pods. After a restart, the counts are
// exact: every pod counted once, none lost, no finalizer left.
func TestControllerCrashDuringAccounting(t *testing.T) {
	const n = 200
	ctx := testContext(t, 6*time.Minute)
	ns := namespace(t, ctx)
	createGroup(t, ctx, ns, "big", n)

	// Pods finish over ~10 seconds, so accounting is spread out.
	errs := make(chan error, n)
	workqueue.ParallelizeUntil(ctx, 20, n, func(i int) {
		p := newPod(ns, fmt.Sprintf("w-%03d", i), podOpts{group: "big", runFor: fmt.Sprintf("%ds", 3+i%10)})
		if _, err := kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			errs <- err
		}
	})
	close(errs)
	for err := range errs {
		t.Fatalf("creating pods: %v", err)
	}

	waitFor(t, ctx, "accounting to be under way", func(ctx context.Context) (bool, error) {
		pg, err := getGroup(ctx, ns, "big")
		if err != nil {
			return false, nil
		}
		return pg.Status.Succeeded > 0 && pg.Status.Succeeded < n/2, nil
	})
	pg, _ := getGroup(ctx, ns, "big")
	t.Logf("killing muster-apiserver with succeeded=%d uncounted=%v", pg.Status.Succeeded, pg.Status.UncountedTerminatedPods != nil)
	finishedAtKill := countSucceededPods(t, ctx, ns)
	env.KillMuster()
	// While it is down, pods keep finishing and keep their finalizer.
	waitFor(t, ctx, "more pods to finish while the controller is down", func(ctx context.Context) (bool, error) {
		return countSucceededPods(t, ctx, ns) >= finishedAtKill+20, nil
	})
	if err := env.RestartMuster(ctx); err != nil {
		t.Fatalf("restarting: %v", err)
	}

	pg = waitGroupFinished(t, ctx, ns, "big")
	if pg.Status.Succeeded != n || pg.Status.Failed != 0 || pg.Status.UncountedTerminatedPods != nil {
		t.Errorf("after restart: succeeded=%d failed=%d uncounted=%v, want exactly %d, 0 and none",
			pg.Status.Succeeded, pg.Status.Failed, pg.Status.UncountedTerminatedPods, n)
	}
	expectNoFinalizers(t, ctx, ns)
	deleteAllPods(t, ctx, ns, 60*time.Second)
}

func countSucceededPods(t *testing.T, ctx context.Context, ns string) int {
	n := 0
	for _, p := range listPods(t, ctx, ns) {
		if p.Status.Phase == corev1.PodSucceeded {
			n++
		}
	}
	return n
}
