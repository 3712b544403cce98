package capacityadmission

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/controller/capacity"
)

// TestNodeUpdatesThatCannotHelpRunNoCycle: with a gang waiting, a node
// update runs an admission cycle only when it changes what the filters
// read of the node; a heartbeat alone does not. The tracker takes every
// update either way.
func TestNodeUpdatesThatCannotHelpRunNoCycle(t *testing.T) {
	node := func(change func(*corev1.Node)) *corev1.Node {
		n := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: "1", Labels: map[string]string{"zone": "a"}},
			Status: corev1.NodeStatus{
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")},
				Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.NewTime(time.Unix(100, 0))}},
			},
		}
		if change != nil {
			change(n)
		}
		return n
	}
	tests := []struct {
		name   string
		change func(*corev1.Node)
		cycle  bool
	}{
		{"a heartbeat alone", func(n *corev1.Node) {
			n.ResourceVersion = "2"
			n.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(time.Unix(110, 0))
		}, false},
		{"a label", func(n *corev1.Node) { n.Labels["zone"] = "b" }, true},
		{"a taint", func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}} }, true},
		{"allocatable", func(n *corev1.Node) { n.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse("8") }, true},
		{"readiness", func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }, true},
		{"an annotation", func(n *corev1.Node) { n.Annotations = map[string]string{"a": "b"} }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &Mode{tracker: capacity.NewTracker(false), queue: newAdmissionQueue()}
			a.queue.offer(capacity.Candidate{Key: scheduling.GroupKey{Namespace: "ns", Name: "g"}, Need: 1})
			a.setNode(node(nil))
			drain(a.queue.kick)
			updated := node(tt.change)
			a.updateNode(node(nil), updated)
			if got := drain(a.queue.kick); got != tt.cycle {
				t.Errorf("a cycle was asked for: %v, want %v", got, tt.cycle)
			}
			nodes := a.tracker.Snapshot(nil).Nodes
			if len(nodes) != 1 || nodes[0].Ready != (updated.Status.Conditions[0].Status == corev1.ConditionTrue) ||
				nodes[0].Allocatable.MilliCPU != updated.Status.Allocatable.Cpu().MilliValue() {
				t.Errorf("the tracker holds %+v, want the updated node", nodes)
			}
		})
	}
}

// drain empties a kick channel, reporting whether it held a kick.
func drain(kick chan struct{}) bool {
	select {
	case <-kick:
		return true
	default:
		return false
	}
}
