package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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
	cfg, err := env.MusterConfig(replicaURL)
	if err != nil {
		t.Fatal(err)
	}
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
	leader := scrapeAPICalls(t, ctx).Minus(before)
	follower := scrapeAPICallsFrom(t, ctx, replicaURL).Minus(beforeReplica)
	t.Logf("leader calls: %v; replica calls: %v", leader, follower)
	if got := leader[callKey{Client: "kube", Verb: "patch", Resource: "pods"}]; got != 8 {
		t.Errorf("leader pod patches = %v, want 8", got)
	}
	for k, v := range follower {
		if k.Resource != "leases" {
			t.Errorf("the replica without the Lease sent %v %v: only the leader's controller may act", v, k)
		}
	}

	// A what-if asked of the replica that does not lead is forwarded to
	// the leader, which alone runs admission: both answer the same.
	poolNodes(t, ctx, ns, 1, "8", nil)
	pods := gangPods(ns, "asked", 2, "6", "")
	viaLeader := whatIf(t, ctx, muster, ns, newGroupObject(ns, "asked", 2), pods)
	viaReplica := whatIf(t, ctx, replica, ns, newGroupObject(ns, "asked", 2), pods)
	if viaLeader.Admitted || viaLeader.Message == "" || viaReplica.Reason != viaLeader.Reason || viaReplica.Message != viaLeader.Message {
		t.Errorf("what-if through the replica: %s: %q; through the leader: %s: %q; want the same refusal",
			viaReplica.Reason, viaReplica.Message, viaLeader.Reason, viaLeader.Message)
	}
	if _, err := replica.SchedulingV1alpha1().PendingPodGroups(ns).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("listing the queue through the replica: %v", err)
	}
}

// TestLeaderFailover kills the leading replica while a second one runs: the
// survivor takes the Lease over and its controller admits a gang. The
// aggregator points at the first replica, so the test talks to the survivor
// directly while the first is down, points the webhooks at the survivor as a
// Service would, and restores both after.
func TestLeaderFailover(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	replicaURL, stop, err := env.StartMusterReplica(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	cfg, err := env.MusterConfig(replicaURL)
	if err != nil {
		t.Fatal(err)
	}
	replica := versioned.NewForConfigOrDie(cfg)
	waitFor(t, ctx, "the replica to serve /metrics", func(ctx context.Context) (bool, error) {
		_, err := tryScrapeMetrics(ctx, replicaURL)
		return err == nil, nil
	})

	ns := namespace(t, ctx)
	createGroup(t, ctx, ns, "failover", 2)
	createPod(t, ctx, newPod(ns, "w-0", podOpts{group: "failover"}))
	waitFor(t, ctx, "the leader to see the pod", func(ctx context.Context) (bool, error) {
		pg, err := getGroup(ctx, ns, "failover")
		return err == nil && pg.Status.Pods == 1, nil
	})

	// A Service would now route the webhooks to the survivor.
	if err := env.PointWebhooksAt(ctx, replicaURL); err != nil {
		t.Fatal(err)
	}
	env.KillMuster()
	t.Cleanup(func() {
		ctx := context.Background()
		if err := env.RestartMuster(ctx); err != nil {
			t.Errorf("restarting the first replica: %v", err)
		}
		if err := env.PointWebhooksAt(ctx, env.MusterURL); err != nil {
			t.Errorf("pointing the webhooks back: %v", err)
		}
	})
	// One pod is now a complete gang; only a new leader can release it.
	if _, err := replica.SchedulingV1alpha1().PodGroups(ns).Patch(ctx, "failover", types.MergePatchType,
		[]byte(`{"spec":{"schedulingPolicy":{"gang":{"minCount":1}}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("lowering minCount through the survivor: %v", err)
	}
	waitFor(t, ctx, "the survivor's controller to release the pod", func(ctx context.Context) (bool, error) {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, "w-0", metav1.GetOptions{})
		return err == nil && !isGated(p) && p.Spec.NodeName != "", nil
	})
	if got := scrapeAPICallsFrom(t, ctx, replicaURL)[callKey{Client: "kube", Verb: "patch", Resource: "pods"}]; got < 1 {
		t.Errorf("the survivor made %v pod patches, want the release to be its own", got)
	}
}
