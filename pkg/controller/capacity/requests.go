package capacity

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// Capacity-request pods (pkg/controller/autoscaling) are pods Muster does
// not manage: once bound, they hold their node like any other. What they
// hold is room an autoscaler added for one waiting gang, so the tracker
// knows them by group: when that gang is placed, its own requests count as
// free (Requests), since Muster deletes them before it releases the gang.
// For every other gang they hold their room, and they are never victims of
// preemption: they go when their gang is placed or their request is
// withdrawn.

// requestKey is the group whose room p asks for, if any. A pod is taken
// for a capacity request only as Muster makes them: of the lowest class,
// and controlled by a PodGroup. Else a tenant could label its own pods to
// spare them from preemption.
func requestKey(p *corev1.Pod) (scheduling.GroupKey, bool) {
	g := p.Labels[scheduling.CapacityRequestLabel]
	if g == "" || p.Spec.PriorityClassName != scheduling.CapacityRequestPriorityClass {
		return scheduling.GroupKey{}, false
	}
	if r := metav1.GetControllerOfNoCopy(p); r != nil && r.Kind == "PodGroup" {
		return scheduling.NewGroupKey(p.Namespace, g), true
	}
	return scheduling.GroupKey{}, false
}

// setRequest records (key not zero) or forgets which group's request the
// unmanaged pod uid is. Called with t.mu held.
func (t *Tracker) setRequest(uid types.UID, key scheduling.GroupKey) {
	if old, ok := t.requestOf[uid]; ok {
		if old == key {
			return
		}
		t.requestChanged(old)
		delete(t.requestOf, uid)
		if m := t.requests[old]; m != nil {
			delete(m, uid)
			if len(m) == 0 {
				delete(t.requests, old)
			}
		}
	}
	if key == (scheduling.GroupKey{}) {
		return
	}
	t.requestOf[uid] = key
	t.requestChanged(key)
	m := t.requests[key]
	if m == nil {
		m = map[types.UID]struct{}{}
		t.requests[key] = m
	}
	m[uid] = struct{}{}
}

// Requests returns what the bound capacity-request pods of group key hold,
// as a victim that Admit takes off the snapshot while it places that gang;
// nil if none holds anything.
func (t *Tracker) Requests(key scheduling.GroupKey) *Victim {
	t.mu.RLock()
	defer t.mu.RUnlock()
	uids := t.requests[key]
	if len(uids) == 0 {
		return nil
	}
	v := &Victim{Key: key.String(), Kind: scheduling.VictimKindPod}
	for uid := range uids {
		if h, ok := t.unmanaged[uid]; ok {
			v.holdings = append(v.holdings, held{node: h.node, pod: h.info.GetPod()})
		}
	}
	if len(v.holdings) == 0 {
		return nil
	}
	return v
}
