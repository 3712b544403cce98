package capacity

import (
	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// ReleasedWaitingFor reports whether a pod that Muster released waits for
// victim's node: active, not bound, pinned to that node, of a priority
// above victim's, and not of victim's own group (key). That is the pod
// kube-scheduler preempted victim for, when it was one of Muster's:
// kube-scheduler preempts for a pod only while the pod cannot bind, and a
// released pod of Muster's can bind only to the node it is pinned to.
// Muster's tracking finalizer keeps victim until its group's sync has seen
// it being deleted, so the preemptor is still unbound at that sync.
//
// It reads the pods that hold the node (a pinned, released pod holds the
// node it is pinned to), never all pods.
func (t *Tracker) ReleasedWaitingFor(victim *corev1.Pod, key scheduling.GroupKey) bool {
	node := victim.Spec.NodeName
	if node == "" {
		return false
	}
	above := corev1helpers.PodPriority(victim)
	t.mu.RLock()
	defer t.mu.RUnlock()
	ni := t.infos[node]
	if ni == nil {
		return false
	}
	for _, pi := range ni.GetPods() {
		p := pi.GetPod()
		mp := t.managed[p.UID]
		if mp == nil || mp.group == key || !mp.active || mp.gated || mp.node != "" || mp.pinned != node {
			continue
		}
		if corev1helpers.PodPriority(p) > above {
			return true
		}
	}
	return false
}
