package capacity

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Node is what placement needs of a node: the fields the scheduler's
// filters read (labels and name for node affinity, taints, unschedulable,
// readiness) and its allocatable resources.
type Node struct {
	// Object is a trimmed copy of the node (see TrimNode), for the
	// component-helpers matchers.
	Object      *corev1.Node
	Ready       bool
	Allocatable Resources
	// MaxPods is the node's allocatable pod count.
	MaxPods int64
}

// NewNode builds a Node from a node object.
func NewNode(n *corev1.Node) *Node {
	return &Node{
		Object:      n,
		Ready:       nodeReady(n),
		Allocatable: ResourcesFromList(n.Status.Allocatable),
		MaxPods:     n.Status.Allocatable.Pods().Value(),
	}
}

// Name is the node's name.
func (n *Node) Name() string { return n.Object.Name }

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// TrimNode is an informer transform that keeps only what placement reads,
// so that a cache of thousands of nodes stays small: images, volumes,
// addresses, annotations and managed fields are dropped.
func TrimNode(obj interface{}) (interface{}, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	var ready []corev1.NodeCondition
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = append(ready, corev1.NodeCondition{Type: c.Type, Status: c.Status})
		}
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:              n.Name,
			UID:               n.UID,
			ResourceVersion:   n.ResourceVersion,
			Labels:            n.Labels,
			DeletionTimestamp: n.DeletionTimestamp,
		},
		Spec: corev1.NodeSpec{
			Taints:        n.Spec.Taints,
			Unschedulable: n.Spec.Unschedulable,
		},
		Status: corev1.NodeStatus{
			Allocatable: n.Status.Allocatable,
			Conditions:  ready,
		},
	}, nil
}
