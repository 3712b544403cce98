package capacity

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// With fast release (KEP-6143) a bound pod being deleted holds nothing in
// the tracker, but kube-scheduler still counts it until it is gone. A pod
// that Muster places in the room it frees is then unschedulable on its
// pinned node for a moment, and kube-scheduler's own preemption runs: it
// may pick as victims the pods of lower priority beside it on that node,
// one by one, which would evict part of another gang. So on a node with
// pods being deleted (draining), a pod is placed only if no pod of lower
// priority holds the node (it would preempt it), and no pod of higher
// priority waits to bind there (it would preempt this one). The same holds
// where a recorded preemption's victims were taken off a node in the
// snapshot (Snapshot.evict) but are not deleted yet. Elsewhere, and among
// pods of one priority, fast release is unchanged.

// drainRefusal is a node's refusal by that rule.
const drainRefusal = "pods being deleted still hold it for kube-scheduler, beside pods of another priority that kube-scheduler would preempt to make room"

// drainingNode is the node a pod frees by fast release while kube-scheduler
// still counts it there, or "".
func (t *Tracker) drainingNode(p *corev1.Pod) string {
	if scheduling.IsActive(p, t.fastRelease) || scheduling.IsTerminal(p) {
		return ""
	}
	return schedulerNode(p)
}

// schedulerNode is the node kube-scheduler may count the pod on: its node
// once bound, and for a released pod that Muster has not seen bound yet,
// the node it is pinned to, where kube-scheduler may have bound it already
// (the informer shows the binding a moment later). A gated pod is on no
// node for kube-scheduler.
func schedulerNode(p *corev1.Pod) string {
	if p.Spec.NodeName != "" {
		return p.Spec.NodeName
	}
	return scheduling.PinnedNode(p)
}

// setDraining records that pod uid drains node, or, with "", no node.
func (t *Tracker) setDraining(uid types.UID, node string) {
	old, had := t.drainingOn[uid]
	if had && old == node {
		return
	}
	if had {
		if t.draining[old]--; t.draining[old] <= 0 {
			delete(t.draining, old)
			t.freedOn(old, nil) // the rule below no longer guards it
		}
		delete(t.drainingOn, uid)
	}
	if node != "" {
		node = t.intern(node)
		t.drainingOn[uid] = node
		t.draining[node]++
	}
}

// deletingPod is an unmanaged pod being deleted while still bound: its
// namespace/name, and when it was created.
type deletingPod struct {
	key   string
	since time.Time
}

func deletingOf(p *corev1.Pod) deletingPod {
	return deletingPod{key: p.Namespace + "/" + p.Name, since: p.CreationTimestamp.Time}
}

// setDeleting records whether the unmanaged pod p drains its node.
func (t *Tracker) setDeleting(p *corev1.Pod, drains bool) {
	if drains {
		t.deleting[p.UID] = deletingOf(p)
	} else {
		delete(t.deleting, p.UID)
	}
}

// drainingNodes is the snapshot's set of draining nodes, by index; it is
// called with t.mu held and costs O(draining nodes).
func (t *Tracker) drainingNodes() map[int]bool {
	if len(t.draining) == 0 {
		return nil
	}
	out := make(map[int]bool, len(t.draining))
	for node := range t.draining {
		if i, ok := t.index[node]; ok {
			out[i] = true
		}
	}
	return out
}

// drainHazard says why pod may not go to node i by the rule above, or "".
// It reads the node's pods only on a draining node.
func (s *Snapshot) drainHazard(pod *corev1.Pod, i int) string {
	evicted := s.evicted[i]
	if s.ignoreDraining || (!s.draining[i] && len(evicted) == 0) {
		return ""
	}
	prio := corev1helpers.PodPriority(pod)
	preempts := mayPreemptPods(pod)
	hazard := func(q *corev1.Pod) bool {
		if q.UID == pod.UID {
			return false
		}
		qp := corev1helpers.PodPriority(q)
		return (preempts && qp < prio) || (q.Spec.NodeName == "" && qp > prio && mayPreemptPods(q))
	}
	for _, pi := range s.info(i).GetPods() {
		if hazard(pi.GetPod()) {
			return drainRefusal
		}
	}
	for _, q := range evicted {
		if hazard(q) {
			return drainRefusal
		}
	}
	return ""
}

// mayPreemptPods reports whether kube-scheduler would preempt others for p.
func mayPreemptPods(p *corev1.Pod) bool {
	pp := p.Spec.PreemptionPolicy
	return pp == nil || *pp != corev1.PreemptNever
}
