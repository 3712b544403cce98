package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
)

// TestKarpenterProvisionsAndConsolidates runs the real Karpenter with its
// kwok cloud provider, without Muster, on a cluster whose one fake node
// has no GPUs. A pod asking for 8 nvidia.com/gpu makes Karpenter launch a
// NodeClaim of the 8-GPU instance type; the node it creates is one the
// harness's kwok manages, so it becomes Ready, advertises the GPUs, and the
// pod is bound there and runs. Once the pod is deleted, Karpenter
// consolidates the empty node away.
func TestKarpenterProvisionsAndConsolidates(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane; skipped with -short")
	}
	c := StartForTest(t, Options{Nodes: 1, Karpenter: true})
	ctx := t.Context()
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatalf("creating dynamic client: %v", err)
	}
	ns := createNamespace(t, c, "autoscaled")

	if _, err := dyn.Resource(KWOKNodeClassResource).Create(ctx, NewKWOKNodeClass("default", 0), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating KWOKNodeClass: %v", err)
	}
	limits := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000"), GPUResource: resource.MustParse("64")}
	pool := NewNodePool("gpu", "default", []string{"gpu-1", "gpu-8", "cpu-4"}, limits, 0)
	if _, err := dyn.Resource(NodePoolResource).Create(ctx, pool, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating NodePool: %v", err)
	}
	// Karpenter provisions only from a Ready NodePool (its NodeClass Ready,
	// its status reconciled); a pod that comes first waits for its next try.
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, podTimeout, true, func(ctx context.Context) (bool, error) {
		p, err := dyn.Resource(NodePoolResource).Get(ctx, "gpu", metav1.GetOptions{})
		return err == nil && claimCondition(p, "Ready") == "True", nil
	})
	if err != nil {
		t.Fatalf("NodePool gpu is not Ready: %v", err)
	}

	pod := newPod("gpu", nil)
	gpus := corev1.ResourceList{GPUResource: resource.MustParse("8")}
	pod.Spec.Containers[0].Resources.Requests[GPUResource] = gpus[GPUResource]
	pod.Spec.Containers[0].Resources.Limits = gpus
	began := time.Now()
	if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod: %v", err)
	}

	// The static node has no GPUs: the scheduler marks the pod
	// Unschedulable, which is what Karpenter provisions for.
	running := waitPod(t, c, ns, "gpu", "Running on a node Karpenter launched", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != ""
	})
	provisioned := time.Since(began)
	nodeName := running.Spec.NodeName
	if strings.HasPrefix(nodeName, "kwok-node-") {
		t.Fatalf("pod ran on the static node %s, which has no GPUs", nodeName)
	}
	node, err := c.Client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting node %s: %v", nodeName, err)
	}
	if got := node.Labels["karpenter.sh/nodepool"]; got != "gpu" {
		t.Errorf("node %s: label karpenter.sh/nodepool = %q, want gpu", nodeName, got)
	}
	if got := node.Labels[corev1.LabelInstanceTypeStable]; got != "gpu-8" {
		t.Errorf("node %s: instance type %q, want gpu-8 (the only type with 8 GPUs)", nodeName, got)
	}
	if got := node.Annotations[KwokNodeAnnotation]; got != "fake" {
		t.Errorf("node %s: annotation %s = %q, want fake (kwok manages only those)", nodeName, KwokNodeAnnotation, got)
	}
	if !nodeReady(node) {
		t.Errorf("node %s is not Ready", nodeName)
	}
	for what, list := range map[string]corev1.ResourceList{"capacity": node.Status.Capacity, "allocatable": node.Status.Allocatable} {
		if q, ok := list[GPUResource]; !ok || q.Value() != 8 {
			t.Errorf("node %s: %s %s = %v, want 8", nodeName, what, GPUResource, list[GPUResource])
		}
	}

	// Its NodeClaim went through Karpenter's lifecycle. The pod can bind
	// to the node as soon as the node is Ready, before Karpenter's
	// registration loop writes status.nodeName and the Initialized
	// condition into the NodeClaim, so wait for that write.
	var claim *unstructured.Unstructured
	var seen int
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		claims, err := dyn.Resource(NodeClaimResource).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		seen = len(claims.Items)
		for i := range claims.Items {
			if n, _, _ := unstructured.NestedString(claims.Items[i].Object, "status", "nodeName"); n == nodeName &&
				claimCondition(&claims.Items[i], "Initialized") == "True" {
				claim = &claims.Items[i]
				return true, nil
			}
		}
		return false, nil
	})
	if claim == nil {
		t.Fatalf("no initialized NodeClaim has status.nodeName %s among %d after 30s: %v", nodeName, seen, err)
	}
	for _, cond := range []string{"Launched", "Registered", "Initialized"} {
		if got := claimCondition(claim, cond); got != "True" {
			t.Errorf("NodeClaim %s: condition %s = %q, want True", claim.GetName(), cond, got)
		}
	}
	// Creation timestamps have whole seconds.
	sec := began.Truncate(time.Second)
	t.Logf("Karpenter created NodeClaim %s %v after the pod (to the second), its node %s (%s) %v after, and the pod ran %v after it was created",
		claim.GetName(), claim.GetCreationTimestamp().Sub(sec), nodeName, node.Labels[corev1.LabelInstanceTypeStable],
		node.CreationTimestamp.Sub(sec), provisioned.Round(time.Millisecond))

	// Empty, the node goes: consolidateAfter 0s, then Karpenter's disruption
	// loop (every 10s) and its 15s validation of the command before it
	// deletes the NodeClaim and the node.
	if err := c.Client.CoreV1().Pods(ns).Delete(ctx, "gpu", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatalf("deleting pod: %v", err)
	}
	waitGone(t, c, ns, "gpu")
	emptied := time.Now()
	const removalBound = time.Minute
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, removalBound, true, func(ctx context.Context) (bool, error) {
		_, err := c.Client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = dyn.Resource(NodeClaimResource).Get(ctx, claim.GetName(), metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("Karpenter did not remove the empty node %s and its NodeClaim within %v (see %s): %v", nodeName, removalBound, c.LogPath(KarpenterComponent), err)
	}
	t.Logf("Karpenter removed the empty node %s %v after its pod was gone", nodeName, time.Since(emptied).Round(time.Millisecond))

	// The static node stays: Karpenter manages only its own.
	if _, err := c.Client.CoreV1().Nodes().Get(ctx, NodeName(0), metav1.GetOptions{}); err != nil {
		t.Errorf("static node %s: %v", NodeName(0), err)
	}
	if exited := c.Exited(); len(exited) > 0 {
		t.Errorf("processes exited: %v", exited)
	}
}

// claimCondition returns the status of a NodeClaim's (or NodePool's)
// condition, or "".
func claimCondition(claim *unstructured.Unstructured, typ string) string {
	conditions, _, _ := unstructured.NestedSlice(claim.Object, "status", "conditions")
	for _, c := range conditions {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return fmt.Sprint(m["status"])
		}
	}
	return ""
}
