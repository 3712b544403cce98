package capacity

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// Reservations hold capacity for pods that do not exist yet: the pods of a
// role that a gang's driver creates once it runs (KEP-976 story 4). A gang
// is admitted with its existing pods placed and its missing pods reserved
// from their role's template, all or nothing; each pod of the role that
// arrives later takes one reserved place. Like placements, reservations are
// recorded in the group's status, so a new leader rebuilds them from a LIST,
// and a cycle's decision is assumed until the status shows it.

// Slot is capacity held on one node for Count pods, each requesting Requests.
type Slot struct {
	Node     string
	Requests Resources
	Count    int64
}

// SetReservations records the reservations a PodGroup's status holds. Once
// the status shows any, what a cycle assumed for the group is recorded, so
// the assumed slots go.
func (t *Tracker) SetReservations(key scheduling.GroupKey, slots []Slot) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.holdSlots("reserved/"+key.String(), t.reserved[key], -1)
	delete(t.reserved, key)
	if len(slots) > 0 {
		t.holdSlots("assumed/"+key.String(), t.assumedSlots[key], -1)
		delete(t.assumedSlots, key)
		t.reserved[key] = t.internSlots(slots)
		t.holdSlots("reserved/"+key.String(), t.reserved[key], 1)
	}
}

// AssumeReservations holds the slots an admission cycle just decided for
// group key, until the group's status shows them or Forget is called.
func (t *Tracker) AssumeReservations(key scheduling.GroupKey, slots []Slot) {
	if len(slots) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.holdSlots("assumed/"+key.String(), t.assumedSlots[key], -1)
	t.assumedSlots[key] = t.internSlots(slots)
	t.holdSlots("assumed/"+key.String(), t.assumedSlots[key], 1)
}

// forgetSlots drops a group's assumed slots and, with recorded, its
// recorded ones. The caller holds t.mu.
func (t *Tracker) forgetSlots(key scheduling.GroupKey, recorded bool) {
	t.holdSlots("assumed/"+key.String(), t.assumedSlots[key], -1)
	delete(t.assumedSlots, key)
	if recorded {
		t.holdSlots("reserved/"+key.String(), t.reserved[key], -1)
		delete(t.reserved, key)
	}
}

func (t *Tracker) internSlots(slots []Slot) []Slot {
	out := make([]Slot, len(slots))
	for i, s := range slots {
		s.Node = t.intern(s.Node)
		out[i] = s
	}
	return out
}

// holdSlots adds (sign 1) or takes back (sign -1) what slots hold: one
// stand-in pod per slot, whose UID is derived from id (which set of slots)
// and the slot, held once per place. Its places share one pod and one
// PodInfo, whose requests are computed once: a slot costs its node one
// entry per place, not one object. The node takes each place back by UID,
// one at a time.
func (t *Tracker) holdSlots(id string, slots []Slot, sign int) {
	for i, s := range slots {
		if s.Count <= 0 {
			continue
		}
		info := newPodInfo(slotPod(id, i, s))
		for range s.Count {
			if sign > 0 {
				t.hold(s.Node, info)
			} else {
				t.release(s.Node, info)
			}
		}
	}
}

// slotPod is the stand-in of a slot's places.
func slotPod(id string, slot int, s Slot) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "reserved", UID: types.UID(fmt.Sprintf("%s/%d", id, slot))},
		Spec: corev1.PodSpec{
			NodeName:   s.Node,
			Containers: []corev1.Container{{Name: "reserved", Resources: corev1.ResourceRequirements{Requests: s.Requests.List()}}},
		},
	}
}

// Node returns the node of that name, or nil.
func (t *Tracker) Node(name string) *Node {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.nodes[name]
}

// Claims reports whether pod p may take a place reserved on node n for
// pods requesting slot each: it requests no more than the place holds of
// any resource, and the node passes the scheduler's filters for it (Ready,
// schedulable, taints tolerated, node selection matched). A pod that asks
// for more than its role's template said is placed like any other pod.
func Claims(n *Node, p *corev1.Pod, slot Resources) bool {
	if n == nil || !n.Ready || n.Object.Spec.Unschedulable || n.Object.DeletionTimestamp != nil {
		return false
	}
	if untolerated(klog.Background(), n.Object.Spec.Taints, p.Spec.Tolerations) {
		return false
	}
	if !matches(nodeaffinity.GetRequiredNodeAffinity(p), n.Object) {
		return false
	}
	return PodRequests(p).Within(slot)
}

// Within reports whether r asks for no more than o of every resource.
func (r Resources) Within(o Resources) bool {
	if r.MilliCPU > o.MilliCPU || r.Memory > o.Memory || r.EphemeralStorage > o.EphemeralStorage {
		return false
	}
	for _, sc := range r.Scalar {
		if sc.Value > o.ScalarValue(sc.Name) {
			return false
		}
	}
	return true
}

func untolerated(logger klog.Logger, taints []corev1.Taint, tolerations []corev1.Toleration) bool {
	if len(taints) == 0 {
		return false
	}
	_, found := corev1helpers.FindMatchingUntoleratedTaint(logger, taints, tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}, true)
	return found
}

func matches(a nodeaffinity.RequiredNodeAffinity, n *corev1.Node) bool {
	ok, err := a.Match(n)
	return err == nil && ok
}
