package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/muster-dev/muster/pkg/generated/clientset/versioned"
)

// TestTwoReplicas runs a second muster-apiserver on the same etcd, as the
// Deployment's second replica: both serve the API (active-active), and only
// the holder of the Lease runs the controller.
func TestTwoReplicas(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	replicaURL, stop, err := env.StartMusterReplica(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	// Ready is not yet serving /metrics through delegated authorization.
	waitFor(t, ctx, "the replica to serve /metrics", func(ctx context.Context) (bool, error) {
		_, err := tryScrapeMetrics(ctx, replicaURL)
		return err == nil, nil
	})
	cfg := rest.CopyConfig(env.Config)
	cfg.Host = replicaURL
	replica := versioned.NewForConfigOrDie(cfg)

	// A group written through the replica is read through the aggregator,
	// which routes to the first server: one store, two servers.
	ns := namespace(t, ctx)
	before := scrapeAPICalls(t, ctx)
	beforeReplica := scrapeAPICallsFrom(t, ctx, replicaURL)
	pg := newGroupObject(ns, "shared", 4)
	if _, err := replica.SchedulingV1alpha1().PodGroups(ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create through the replica: %v", err)
	}
	if _, err := getGroup(ctx, ns, "shared"); err != nil {
		t.Fatalf("read through the aggregator: %v", err)
	}

	for i := range 4 {
		createPod(t, ctx, newPod(ns, fmt.Sprintf("w-%d", i), podOpts{group: "shared", runFor: "2s"}))
	}
	if got := waitGroupFinished(t, ctx, ns, "shared"); got.Status.Succeeded != 4 {
		t.Fatalf("succeeded = %d, want 4", got.Status.Succeeded)
	}
	leader := scrapeAPICalls(t, ctx).minus(before)
	follower := scrapeAPICallsFrom(t, ctx, replicaURL).minus(beforeReplica)
	t.Logf("leader calls: %v; replica calls: %v", leader, follower)
	if got := leader[callKey{"kube", "patch", "pods"}]; got != 8 {
		t.Errorf("leader pod patches = %v, want 8", got)
	}
	for k, v := range follower {
		if k.resource != "leases" {
			t.Errorf("the replica without the Lease sent %v %v: only the leader's controller may act", v, k)
		}
	}
}
