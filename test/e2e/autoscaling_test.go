package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/test/cluster"
)

// The autoscaling tests each run on a cluster of their own, with
// Karpenter's kwok provider and a NodePool the test creates: Karpenter's
// nodes, NodeClaims and consolidation are cluster-wide, and a test counts
// them. Muster runs with --autoscaling=pods.

// TestAutoscalingScaleFromZero: a gang of 8 pods of 8 GPUs each arrives on
// a cluster with no GPU node and a NodePool that has launched nothing.
// Muster asks for room with 8 capacity-request pods shaped like the gang's,
// Karpenter launches 8 gpu-8 nodes for them, and once the whole gang fits
// the requests go and the gang is released, pinned, at once: no pod of it
// is released before then, and it runs whole on the new nodes.
func TestAutoscalingScaleFromZero(t *testing.T) {
	autoscaledCluster(t, nil)
	ctx := testContext(t, 5*time.Minute)
	karpenterPool(t, ctx, "gpu", []string{"gpu-1", "gpu-8"}, corev1.ResourceList{cluster.GPUResource: resource.MustParse("64")})
	ns := namespace(t, ctx)
	rec := watchAutoscaling(t, ctx, ns)
	w := watchPlacement(t, ctx, ns)

	began := time.Now()
	createPlainGang(t, ctx, ns, "train", 8, withGPUs(8))
	waitFor(t, ctx, "8 capacity-request pods of train", func(ctx context.Context) (bool, error) {
		created, _, _ := rec.requestsOf("train")
		return created >= 8, nil
	})
	requested := time.Since(began)
	pg, err := getGroup(ctx, ns, "train")
	if err != nil {
		t.Fatal(err)
	}
	gangPod, err := kube.CoreV1().Pods(ns).Get(ctx, "train-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	expectRequestShape(t, rec.firstRequests("train"), pg, gangPod)

	pods := expectRunningWhole(t, ctx, w, ns, "train", 8)
	ran := time.Since(began)
	nodes := map[string]bool{}
	for _, p := range pods {
		node, err := kube.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("getting node %s of pod %s: %v", p.Spec.NodeName, p.Name, err)
		}
		if node.Labels[nodePoolLabel] != "gpu" || node.Labels[corev1.LabelInstanceTypeStable] != "gpu-8" {
			t.Errorf("pod %s runs on %s (NodePool %q, instance type %q), want a gpu-8 node Karpenter launched for NodePool gpu",
				p.Name, node.Name, node.Labels[nodePoolLabel], node.Labels[corev1.LabelInstanceTypeStable])
		}
		nodes[node.Name] = true
	}
	if len(nodes) != 8 {
		t.Errorf("the gang runs on %d nodes, want 8, one 8-GPU pod each: %s", len(nodes), podStates(pods))
	}
	expectPinnedWhereBound(t, pods)
	waitRequestsGone(t, ctx, ns, "train")
	rec.expectReleasedWhole(t, 8)
	if created, bound, deleted := rec.requestsOf("train"); created != 8 || deleted != 8 {
		t.Errorf("Muster created %d capacity-request pods (%d bound) and deleted %d, want 8 of each", created, bound, deleted)
	}
	waitAdmitted(t, ctx, ns, "train", metav1.ConditionTrue, scheduling.ReasonGangFits)
	waiting, ok := rec.sawAdmitted("train", scheduling.ReasonWaitingForNodes)
	if !ok {
		t.Errorf("the group never said %s while Karpenter provisioned: %s", scheduling.ReasonWaitingForNodes, rec.describeAdmitted("train"))
	} else if !regexp.MustCompile(`ask(ing|ed) the autoscaler for room for 8 pods`).MatchString(waiting.Message) {
		t.Errorf("%s message %q does not say what Muster asked for", scheduling.ReasonWaitingForNodes, waiting.Message)
	}
	expectEvents(t, ctx, ns, "train", scheduling.EventCapacityRequested, scheduling.EventCapacityProvisioned, scheduling.EventAdmitted)
	if n, err := nodeClaims(ctx); err != nil || n != 8 {
		t.Errorf("Karpenter has %d NodeClaims (%v), want 8", n, err)
	}
	t.Logf("capacity requested %v after the gang was created, gang running whole %v after; Admitted: %s",
		requested.Round(time.Millisecond), ran.Round(time.Millisecond), rec.describeAdmitted("train"))
}

// TestAutoscalingAllOrNothing: the NodePool's limits (48 GPUs) give room for
// 6 of a gang's 8 pods of 8 GPUs. The gang never starts: none of its pods
// is ever released. Past --capacity-request-timeout its capacity-request
// pods are withdrawn, the group says NodesNotProvisioned with 6 of 8,
// Karpenter takes the empty nodes back, and after the backoff (1m) the
// group asks again.
func TestAutoscalingAllOrNothing(t *testing.T) {
	const timeout = 20 * time.Second
	autoscaledCluster(t, []string{fmt.Sprintf("--capacity-request-timeout=%s", timeout)})
	ctx := testContext(t, 5*time.Minute)
	karpenterPool(t, ctx, "gpu", []string{"gpu-8"}, corev1.ResourceList{cluster.GPUResource: resource.MustParse("48")})
	ns := namespace(t, ctx)
	rec := watchAutoscaling(t, ctx, ns)
	noRelease := func(ctx context.Context) string {
		if released := rec.releasedPods(); len(released) > 0 {
			return fmt.Sprintf("pods %v of the gang were released; Admitted: %s", released, rec.describeAdmitted("train"))
		}
		return ""
	}

	createPlainGang(t, ctx, ns, "train", 8, withGPUs(8))
	waitFor(t, ctx, "8 capacity-request pods of train", func(ctx context.Context) (bool, error) {
		created, _, _ := rec.requestsOf("train")
		return created >= 8, nil
	})
	var requested time.Time // the oldest request's creation, as Muster times it
	for _, p := range rec.firstRequests("train") {
		if requested.IsZero() || p.CreationTimestamp.Time.Before(requested) {
			requested = p.CreationTimestamp.Time
		}
	}
	waitFor(t, ctx, "6 capacity-request pods bound, on the 6 nodes the limits allow", func(ctx context.Context) (bool, error) {
		if bad := noRelease(ctx); bad != "" {
			t.Fatal(bad)
		}
		_, bound, _ := rec.requestsOf("train")
		return bound >= 6, nil
	})
	if nodes, err := poolNodeNames(ctx, "gpu"); err != nil || len(nodes) != 6 {
		t.Errorf("NodePool gpu has nodes %v (%v), want 6 within its limits", nodes, err)
	}
	// The group says so before the request times out.
	said := false
	waitFor(t, ctx, "the group to say that 6 of 8 capacity-request pods have room, or the request to be withdrawn", func(ctx context.Context) (bool, error) {
		pg, err := getGroup(ctx, ns, "train")
		if err != nil {
			return false, nil
		}
		c := admittedCondition(pg)
		said = c.Reason == scheduling.ReasonWaitingForNodes && strings.Contains(c.Message, "6 of 8 have room")
		return said || c.Reason == scheduling.ReasonNodesNotProvisioned, nil
	})
	if !said {
		t.Errorf("the group never said that 6 of 8 capacity-request pods have room while they did: %s", rec.describeAdmitted("train"))
	}

	waitFor(t, ctx, "the capacity-request pods to be withdrawn", func(ctx context.Context) (bool, error) {
		if bad := noRelease(ctx); bad != "" {
			t.Fatal(bad)
		}
		created, _, deleted := rec.requestsOf("train")
		return deleted == created, nil
	})
	withdrawn := time.Now()
	// Creation timestamps have whole seconds.
	if took := withdrawn.Sub(requested); took < timeout-time.Second {
		t.Errorf("the capacity-request pods were withdrawn %v after they were created, before --capacity-request-timeout=%v", took, timeout)
	}
	pg := waitAdmitted(t, ctx, ns, "train", metav1.ConditionFalse, scheduling.ReasonNodesNotProvisioned)
	if msg := admittedCondition(pg).Message; !strings.Contains(msg, "room for 6 of the 8 pods") {
		t.Errorf("%s message %q does not say that 6 of 8 got room", scheduling.ReasonNodesNotProvisioned, msg)
	}
	expectEvents(t, ctx, ns, "train", scheduling.EventCapacityRequested, scheduling.EventCapacityRequestWithdrawn)

	// Karpenter consolidates the empty nodes 30-38s after they emptied,
	// before the group's backoff of 1m ends.
	waitFor(t, ctx, "Karpenter to remove the empty nodes", func(ctx context.Context) (bool, error) {
		if bad := noRelease(ctx); bad != "" {
			t.Fatal(bad)
		}
		nodes, err := poolNodeNames(ctx, "gpu")
		return err == nil && len(nodes) == 0, nil
	})
	emptied := time.Since(withdrawn)
	if created, _, _ := rec.requestsOf("train"); created != 8 {
		t.Fatalf("the group asked again (%d capacity-request pods in all) before Karpenter removed the nodes of its last request", created)
	}

	waitFor(t, ctx, "the group to ask again after its backoff", func(ctx context.Context) (bool, error) {
		if bad := noRelease(ctx); bad != "" {
			t.Fatal(bad)
		}
		created, _, _ := rec.requestsOf("train")
		return created > 8, nil
	})
	again := time.Since(withdrawn)
	if again < 50*time.Second {
		t.Errorf("the group asked again %v after its request was withdrawn, before its backoff of 1m", again)
	}
	for _, p := range groupPods(t, ctx, ns, "train") {
		if !scheduling.HasGate(&p) || p.Spec.NodeName != "" {
			t.Errorf("pod %s of the gang is released or bound (node %q)", p.Name, p.Spec.NodeName)
		}
	}
	t.Logf("withdrawn %v after the request; the pool's nodes gone %v after that; asked again %v after it; Admitted: %s",
		withdrawn.Sub(requested).Round(time.Millisecond), emptied.Round(time.Millisecond), again.Round(time.Millisecond), rec.describeAdmitted("train"))
}

// TestAutoscalingStrictFIFONoSpuriousScaleUp: under StrictFIFO, the head
// of the queue, a high-priority gang that wants GPUs from a NodePool of
// CPU instance types, waits for nodes that never come. A low-priority gang
// behind it, which Karpenter could serve, gets no capacity-request pods and
// no node is launched for it while it waits. Once the head goes, it asks,
// gets its node and runs.
func TestAutoscalingStrictFIFONoSpuriousScaleUp(t *testing.T) {
	autoscaledCluster(t, []string{"--queueing-strategy=StrictFIFO"})
	ctx := testContext(t, 4*time.Minute)
	karpenterPool(t, ctx, "cpu", []string{"cpu-4", "cpu-16", "cpu-64"}, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000")})
	ns := namespace(t, ctx)
	rec := watchAutoscaling(t, ctx, ns)
	high := priorityClass(t, ctx, ns+"-high", 1000)
	low := priorityClass(t, ctx, ns+"-low", 10)

	createPlainGang(t, ctx, ns, "head", 2, withGPUs(8), withPriorityClass(high))
	waitAdmitted(t, ctx, ns, "head", metav1.ConditionFalse, scheduling.ReasonWaitingForNodes)
	// 40 CPU a pod: more than a static node's 32, less than a cpu-64's.
	createPlainGang(t, ctx, ns, "behind", 2, withCPU("40"), withPriorityClass(low))
	waitAdmitted(t, ctx, ns, "behind", metav1.ConditionFalse, scheduling.ReasonQueued)

	expectNoneFor(t, ctx, 20*time.Second, "a scale-up for the gang behind the head", func(ctx context.Context) string {
		if created, _, _ := rec.requestsOf("behind"); created > 0 {
			return fmt.Sprintf("%d capacity-request pods were created for it; Admitted: %s", created, rec.describeAdmitted("behind"))
		}
		if n, err := nodeClaims(ctx); err == nil && n > 0 {
			return fmt.Sprintf("Karpenter made %d NodeClaims, and the head can use none", n)
		}
		if released := rec.releasedPods(); len(released) > 0 {
			return fmt.Sprintf("pods %v were released", released)
		}
		return ""
	})
	if created, _, _ := rec.requestsOf("head"); created != 2 {
		t.Errorf("the head has %d capacity-request pods, want 2", created)
	}

	// The gang behind could have been served: once the head is gone it asks,
	// and runs on the node Karpenter launches for it.
	if err := kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: scheduling.PodGroupLabel + "=head"}); err != nil {
		t.Fatalf("deleting the head's pods: %v", err)
	}
	if err := muster.SchedulingV1alpha1().PodGroups(ns).Delete(ctx, "head", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting PodGroup head: %v", err)
	}
	waitRequestsGone(t, ctx, ns, "head")
	pods := waitBound(t, ctx, ns, "behind", 2)
	for _, p := range pods {
		node, err := kube.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
		if err != nil || node.Labels[nodePoolLabel] != "cpu" {
			t.Errorf("pod %s runs on %s, not on a node Karpenter launched for NodePool cpu (%v)", p.Name, p.Spec.NodeName, err)
		}
	}
	if created, _, _ := rec.requestsOf("behind"); created != 2 {
		t.Errorf("the gang behind had %d capacity-request pods once it led, want 2", created)
	}
	t.Logf("head: %s; behind: %s", rec.describeAdmitted("head"), rec.describeAdmitted("behind"))
}

// TestAutoscalingMixedNodes: an Indexed Job gang of 8 pods of 15 CPU on 2
// static nodes of 32 CPU, which hold 4 of them. Muster asks for the whole
// gang, once; kube-scheduler puts 4 capacity-request pods on the static
// nodes, and Karpenter launches nodes for the other 4. The gang then runs
// whole across the old nodes and the new.
func TestAutoscalingMixedNodes(t *testing.T) {
	autoscaledCluster(t, nil, func(o *cluster.Options) { o.Nodes = 2 })
	ctx := testContext(t, 5*time.Minute)
	karpenterPool(t, ctx, "cpu", []string{"cpu-16", "cpu-64"}, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000")})
	ns := namespace(t, ctx)
	rec := watchAutoscaling(t, ctx, ns)
	w := watchPlacement(t, ctx, ns)

	// Indexed: each pod carries its own completion-index label, so each
	// capacity-request pod has a shape of its own, and the request must not
	// change with the order in which Muster happens to list the pods.
	createJob(t, ctx, newGangJob(ns, "mixed", jobOpts{pods: 8, cpu: "15", indexed: true}))
	waitFor(t, ctx, "8 capacity-request pods of mixed", func(ctx context.Context) (bool, error) {
		created, _, _ := rec.requestsOf("mixed")
		return created >= 8, nil
	})
	pods := expectRunningWhole(t, ctx, w, ns, "mixed", 8)
	static, launched := 0, 0
	for _, p := range pods {
		node, err := kube.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
		switch {
		case err != nil:
			t.Errorf("getting node %s of pod %s: %v", p.Spec.NodeName, p.Name, err)
		case node.Labels[nodePoolLabel] == "cpu":
			launched++
		case strings.HasPrefix(node.Name, "kwok-node-"):
			static++
		default:
			t.Errorf("pod %s runs on %s, neither a static node nor one of NodePool cpu", p.Name, node.Name)
		}
	}
	if static != 4 || launched != 4 {
		t.Errorf("%d pods run on the static nodes and %d on nodes Karpenter launched, want 4 and 4: %s", static, launched, podStates(pods))
	}
	expectPinnedWhereBound(t, pods)
	waitRequestsGone(t, ctx, ns, "mixed")
	rec.expectReleasedWhole(t, 8)
	if created, _, deleted := rec.requestsOf("mixed"); created != 8 || deleted != 8 {
		t.Errorf("Muster created %d capacity-request pods and deleted %d, want 8 of each: the request was made again for the same gang", created, deleted)
	}
	waitAdmitted(t, ctx, ns, "mixed", metav1.ConditionTrue, scheduling.ReasonGangFits)
	t.Logf("Admitted: %s", rec.describeAdmitted("mixed"))
}

// TestAutoscalingTopologyZone: a gang of 4 pods of 40 CPU that must run in
// one zone (spec.schedulingConstraints.topology on
// topology.kubernetes.io/zone) scales up from a NodePool that has launched
// nothing, offered in two zones, the cheaper first. A static node of 64
// CPU in the dearer zone holds one of its pods, so without the constraint
// the gang would run across both zones: kube-scheduler puts one
// capacity-request pod on the static node and Karpenter launches the rest
// in the cheaper zone. Muster's capacity-request pods share a zone by a
// required pod affinity on the zone, so every node Karpenter launches for
// the gang is in the one zone it runs in, and the group records that zone.
func TestAutoscalingTopologyZone(t *testing.T) {
	const cheap, dear = "kwok-zone-a", "kwok-zone-b"
	autoscaledCluster(t, nil, func(o *cluster.Options) {
		o.KarpenterInstanceTypes = []cluster.KarpenterInstanceType{{Name: "cpu-64", CPU: "64", Memory: "256Gi", Price: 3.2, Zones: []string{cheap, dear}}}
	})
	ctx := testContext(t, 5*time.Minute)
	karpenterPool(t, ctx, "cpu", []string{"cpu-64"}, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000")})
	if _, err := env.AddNodes(ctx, cluster.NodeSpec{Prefix: "static-" + dear, Count: 1, CPU: "64", Memory: "256Gi",
		Labels: map[string]string{corev1.LabelTopologyZone: dear}}); err != nil {
		t.Fatalf("adding the static node: %v", err)
	}
	ns := namespace(t, ctx)
	rec := watchAutoscaling(t, ctx, ns)
	w := watchPlacement(t, ctx, ns)

	pg := newGroupObject(ns, "train", 4)
	pg.Spec.SchedulingConstraints = requiredLevel(corev1.LabelTopologyZone)
	if _, err := muster.SchedulingV1alpha1().PodGroups(ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating PodGroup train: %v", err)
	}
	pods := make([]*corev1.Pod, 4)
	for i := range pods {
		pods[i] = newPod(ns, fmt.Sprintf("train-%d", i), podOpts{group: "train"})
		withCPU("40")(pods[i])
	}
	createPods(t, ctx, pods)

	running := expectRunningWhole(t, ctx, w, ns, "train", 4)
	zones := map[string]bool{}
	for _, p := range running {
		node, err := kube.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("getting node %s of pod %s: %v", p.Spec.NodeName, p.Name, err)
		}
		zones[node.Labels[corev1.LabelTopologyZone]] = true
	}
	if len(zones) != 1 {
		t.Fatalf("the gang runs in zones %v, want one: %s", zones, podStates(running))
	}
	var zone string
	for z := range zones {
		zone = z
	}
	got, err := getGroup(ctx, ns, "train")
	if err != nil {
		t.Fatal(err)
	}
	if d := got.Status.TopologyDomain; d == nil || d.Key != corev1.LabelTopologyZone || d.Value != zone {
		t.Errorf("status.topologyDomain %+v, want %s=%s", d, corev1.LabelTopologyZone, zone)
	}
	launched, err := poolNodeNames(ctx, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range launched {
		node, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err == nil && node.Labels[corev1.LabelTopologyZone] != zone {
			t.Errorf("Karpenter launched node %s in zone %s for the gang, which runs in %s", name, node.Labels[corev1.LabelTopologyZone], zone)
		}
	}
	requests := rec.firstRequests("train")
	if len(requests) == 0 {
		t.Fatalf("no capacity-request pod was seen for train")
	}
	for _, r := range requests {
		a := r.Spec.Affinity
		if a == nil || a.PodAffinity == nil || len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) != 1 ||
			a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].TopologyKey != corev1.LabelTopologyZone {
			t.Errorf("capacity-request pod %s has affinity %+v, want a required pod affinity on %s to the gang's requests", r.Name, a, corev1.LabelTopologyZone)
		}
	}
	waitRequestsGone(t, ctx, ns, "train")
	t.Logf("the gang runs in zone %s on %d launched nodes; Admitted: %s", zone, len(launched), rec.describeAdmitted("train"))
}
