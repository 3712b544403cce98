package e2e

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
)

// TestAPICallsPerPod measures what a gang costs the API server: exactly one
// pod patch to release each pod and one to count it, and status writes per
// group that do not grow with the pods (batched, KEP-2307).
func TestAPICallsPerPod(t *testing.T) {
	const n = 64
	ctx := testContext(t, 3*time.Minute)
	ns := namespace(t, ctx)
	createGroup(t, ctx, ns, "wide", n)
	before := scrapeAPICalls(t, ctx)

	errs := make(chan error, n)
	workqueue.ParallelizeUntil(ctx, 16, n, func(i int) {
		p := newPod(ns, fmt.Sprintf("w-%02d", i), podOpts{group: "wide", runFor: "3s"})
		if _, err := kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			errs <- err
		}
	})
	close(errs)
	for err := range errs {
		t.Fatalf("creating pods: %v", err)
	}
	pg := waitGroupFinished(t, ctx, ns, "wide")
	if pg.Status.Succeeded != n {
		t.Fatalf("succeeded = %d, want %d", pg.Status.Succeeded, n)
	}
	expectNoFinalizers(t, ctx, ns)

	calls := scrapeAPICalls(t, ctx).Minus(before)
	patches := calls[callKey{Client: "kube", Verb: "patch", Resource: "pods"}]
	statusWrites := calls[callKey{Client: "muster", Verb: "update", Resource: "podgroups/status"}]
	t.Logf("gang of %d: %v pod patches (%.2f per pod), %v status writes (%.2f per pod); all calls: %v",
		n, patches, patches/n, statusWrites, statusWrites/n, calls)
	if patches != 2*n {
		t.Errorf("pod patches = %v, want %d: one gate removal and one finalizer removal per pod", patches, 2*n)
	}
	// Writes are per group and batched in time (about one a second while
	// pods change, plus one per decision), so a gang whose pods start and end
	// within seconds costs far fewer writes than it has pods.
	if statusWrites > n/2 {
		t.Errorf("status writes = %v, want at most %d for %d pods: writes must be batched per group", statusWrites, n/2, n)
	}
}
