package cluster

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// NodeTypeLabel is set to "kwok" on every fake node.
const NodeTypeLabel = "type"

// BlockLabel and RackLabel give the fake nodes a topology for the examples
// of topology-aware gangs (docs/getting-started.md): each node is a rack of
// its own, rack-<i>, and two racks make a block, block-<i/2>.
const (
	BlockLabel = "topology.example.com/block"
	RackLabel  = "topology.example.com/rack"
)

// maxNodes keeps every node's /24 podCIDR inside 10.244.0.0/14 and below.
const maxNodes = 1024

// NodeName returns the name of the i-th fake node.
func NodeName(i int) string {
	return fmt.Sprintf("kwok-node-%d", i)
}

// fakeNode builds the i-th fake node. kwok manages it because of the
// annotation; its capacity is what the scheduler packs pods against.
func (c *Cluster) fakeNode(i int) (*corev1.Node, error) {
	capacity := corev1.ResourceList{}
	for name, value := range map[corev1.ResourceName]string{
		corev1.ResourceCPU:    c.opts.NodeCPU,
		corev1.ResourceMemory: c.opts.NodeMemory,
		corev1.ResourcePods:   fmt.Sprint(c.opts.NodePods),
	} {
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", name, err)
		}
		capacity[name] = q
	}
	name := NodeName(i)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				NodeTypeLabel:          "kwok",
				corev1.LabelHostname:   name,
				corev1.LabelOSStable:   "linux",
				corev1.LabelArchStable: "amd64",
				BlockLabel:             fmt.Sprintf("block-%d", i/2),
				RackLabel:              fmt.Sprintf("rack-%d", i),
			},
			Annotations: map[string]string{
				KwokNodeAnnotation:             "fake",
				"node.alpha.kubernetes.io/ttl": "0",
			},
		},
		Spec: corev1.NodeSpec{PodCIDR: fmt.Sprintf("10.%d.%d.0/24", 244+i/256, i%256)},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity,
			// The kubelet API of every fake node is kwok's server on loopback.
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: "127.0.0.1"},
				{Type: corev1.NodeHostName, Address: name},
			},
		},
	}, nil
}

// createNodes creates the fake nodes and waits until kwok reports them all
// Ready.
func (c *Cluster) createNodes(ctx context.Context) error {
	if c.opts.Nodes > maxNodes {
		return fmt.Errorf("at most %d nodes are supported, got %d", maxNodes, c.opts.Nodes)
	}
	for i := range c.opts.Nodes {
		node, err := c.fakeNode(i)
		if err != nil {
			return err
		}
		if _, err := c.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating node %s: %w", node.Name, err)
		}
	}
	var ready int
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, c.opts.StartTimeout, true, func(ctx context.Context) (bool, error) {
		nodes, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: NodeTypeLabel + "=kwok"})
		if err != nil {
			return false, nil
		}
		ready = 0
		for i := range nodes.Items {
			if nodeReady(&nodes.Items[i]) {
				ready++
			}
		}
		return ready >= c.opts.Nodes, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %d fake nodes to be Ready (%d are; see logs/kwok.log): %w", c.opts.Nodes, ready, err)
	}
	for i := range c.opts.Nodes {
		if err := c.waitUntainted(ctx, NodeName(i)); err != nil {
			return err
		}
	}
	return nil
}

// waitUntainted waits until the node-lifecycle controller of
// kube-controller-manager has taken off the not-ready taint that the
// TaintNodesByCondition admission plugin puts on every new node, as it does
// once the node reports Ready. Until then the scheduler binds nothing there.
func (c *Cluster) waitUntainted(ctx context.Context, name string) error {
	var taints []corev1.Taint
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, c.opts.StartTimeout, true, func(ctx context.Context) (bool, error) {
		node, err := c.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		taints = node.Spec.Taints
		return !slices.ContainsFunc(taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady }), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for kube-controller-manager to take the not-ready taint off node %s (taints %v; see logs/kube-controller-manager.log): %w", name, taints, err)
	}
	return nil
}

// nodeReady reports whether the node's Ready condition is True.
func nodeReady(node *corev1.Node) bool {
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}
