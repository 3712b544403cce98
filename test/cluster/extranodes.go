package cluster

import (
	"context"
	"fmt"
	"maps"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// NodeSpec describes extra fake nodes that a test adds for itself.
type NodeSpec struct {
	// Prefix names the nodes <prefix>-0, <prefix>-1, ...
	Prefix string
	Count  int
	CPU    string
	Memory string
	Labels map[string]string
	Taints []corev1.Taint
}

// extraNodes numbers the nodes tests add, after the suite's own, so that
// each gets its own podCIDR.
var extraNodes atomic.Int32

// AddNodes creates fake nodes for one test and waits until kwok reports
// them Ready, with the not-ready taint removed. A taint in the spec keeps
// other tests' pods off them, so that the test knows their free capacity.
func (c *Cluster) AddNodes(ctx context.Context, spec NodeSpec) ([]string, error) {
	names := make([]string, spec.Count)
	for i := range spec.Count {
		idx := c.opts.Nodes + int(extraNodes.Add(1))
		if idx >= maxNodes {
			return nil, fmt.Errorf("at most %d nodes are supported", maxNodes)
		}
		node, err := c.fakeNode(idx)
		if err != nil {
			return nil, err
		}
		node.Name = fmt.Sprintf("%s-%d", spec.Prefix, i)
		node.Labels[corev1.LabelHostname] = node.Name
		maps.Copy(node.Labels, spec.Labels)
		node.Spec.Taints = spec.Taints
		for name, v := range map[corev1.ResourceName]string{corev1.ResourceCPU: spec.CPU, corev1.ResourceMemory: spec.Memory} {
			if v == "" {
				continue
			}
			q, err := resource.ParseQuantity(v)
			if err != nil {
				return nil, fmt.Errorf("node %s %s: %w", node.Name, name, err)
			}
			node.Status.Capacity[name] = q
			node.Status.Allocatable[name] = q
		}
		if _, err := c.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("creating node %s: %w", node.Name, err)
		}
		names[i] = node.Name
	}
	for _, name := range names {
		err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			n, err := c.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			return err == nil && nodeReady(n), nil
		})
		if err != nil {
			return nil, fmt.Errorf("waiting for node %s to be Ready: %w", name, err)
		}
		if err := c.waitUntainted(ctx, name); err != nil {
			return nil, err
		}
	}
	return names, nil
}
