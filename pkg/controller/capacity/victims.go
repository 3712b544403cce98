package capacity

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	schedfw "k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// GroupState is what preemption needs to know of a group beside its pods:
// whether it is admitted, and so may be a victim, or was preempted and
// its pods are still going.
type GroupState struct {
	UID types.UID
	// Admitted groups may be victims; Since is when they were admitted.
	Admitted bool
	Since    time.Time
	// Preempted groups are victims whose pods are being evicted.
	Preempted bool
	// SpecPriority is spec.priority, which can only lower the group's
	// priority below its pods'.
	SpecPriority *int32
}

// Victim is an admitted group, or a pod Muster does not manage, that holds
// capacity and that preemption may evict, always whole.
type Victim struct {
	// Key is namespace/name.
	Key  string
	Kind string
	UID  types.UID
	// Priority is the group's priority: its pods' lowest, or its
	// spec.priority if lower.
	Priority int32
	// Since is when the group was admitted, or the pod created: of two
	// victims of equal priority, the more recent goes first.
	Since time.Time
	// holdings are what it holds, node by node.
	holdings []held
	// users are its pods that have resource claims, holding capacity or
	// not: a pod being deleted keeps its devices until it is gone.
	users []*corev1.Pod
	// leaving is how many of users hold no capacity and have not ended:
	// pods being deleted.
	leaving int
}

// Pods is how many pods (and reserved places) of the victim hold capacity.
func (v *Victim) Pods() int { return len(v.holdings) }

// holdsAnything reports whether the victim still holds capacity, or pods
// that may hold devices.
func (v *Victim) holdsAnything() bool { return len(v.holdings) > 0 || len(v.users) > 0 }

// usesClaims reports whether a pod has resource claims, its own or those
// of its extended resources.
func usesClaims(p *corev1.Pod) bool {
	return len(p.Spec.ResourceClaims) > 0 || p.Status.ExtendedResourceClaimStatus != nil
}

type held struct {
	node string
	pod  *corev1.Pod
}

// Pool is what preemption may choose from in one admission cycle.
type Pool struct {
	// Eligible are the admitted groups, and with unmanaged pods the pods
	// Muster does not manage, that hold capacity.
	Eligible []*Victim
	// Marked are the groups already preempted, by key, with what they
	// still hold: they are not chosen again, and the preemptor that chose
	// them places itself as if they were gone. With unmanaged pods, the
	// pods Muster does not manage that are being deleted while still bound
	// are there too, holding nothing (fast release): a preemptor whose
	// victims they are waits until they are gone, as kube-scheduler still
	// counts them, rather than preempting anew.
	Marked map[string]*Victim
}

// SetGroupState records what preemption needs to know of a group; nil
// forgets it.
func (t *Tracker) SetGroupState(key scheduling.GroupKey, st *GroupState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if st == nil {
		delete(t.groups, key)
		return
	}
	if st.Admitted && !t.groups[key].Admitted {
		// A possible victim now (changes.go).
		t.heldBy(t.groupHolderPriority(key, *st))
	}
	t.groups[key] = *st
}

// Victims returns what holds capacity and may be preempted: admitted
// groups (their pods' holdings and their reserved places), preempted
// groups still holding capacity, and with unmanaged the pods Muster does
// not manage, those being deleted among the marked. Its cost is that of
// the admitted groups' pods (and the unmanaged pods, with unmanaged); the
// admission cycle calls it once, and only when a gang that may preempt
// does not fit.
func (t *Tracker) Victims(unmanaged bool) Pool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	pool := Pool{Marked: map[string]*Victim{}}
	for key, st := range t.groups {
		if !st.Admitted && !st.Preempted {
			continue
		}
		v := &Victim{Key: key.String(), Kind: scheduling.VictimKindPodGroup, UID: st.UID, Since: st.Since}
		prio, seen := int32(0), false
		for uid := range t.byGroup[key] {
			mp := t.managed[uid]
			if mp == nil {
				continue
			}
			p := mp.info.GetPod()
			if mp.active {
				if pp := podPriority(p); !seen || pp < prio {
					prio, seen = pp, true
				}
			}
			if mp.holds != "" {
				v.holdings = append(v.holdings, held{node: mp.holds, pod: p})
			}
			if usesClaims(p) {
				v.users = append(v.users, p)
				if mp.holds == "" && !scheduling.IsTerminal(p) {
					v.leaving++
				}
			}
		}
		if st.SpecPriority != nil && (!seen || *st.SpecPriority < prio) {
			prio = *st.SpecPriority
		}
		v.Priority = prio
		v.holdings = append(v.holdings, t.slotHoldings("reserved/"+key.String(), t.reserved[key])...)
		v.holdings = append(v.holdings, t.slotHoldings("assumed/"+key.String(), t.assumedSlots[key])...)
		switch {
		case st.Preempted:
			// Kept with no holding too: a preemptor then knows that its
			// victims' pods are going, though this cycle's snapshot, taken
			// a moment before, may still show them.
			pool.Marked[key.String()] = v
		case len(v.holdings) > 0:
			pool.Eligible = append(pool.Eligible, v)
		}
	}
	if unmanaged {
		for uid, d := range t.deleting {
			if _, ok := pool.Marked[d.key]; !ok {
				pool.Marked[d.key] = &Victim{Key: d.key, Kind: scheduling.VictimKindPod, UID: uid, Since: d.since}
			}
		}
		for uid, h := range t.unmanaged {
			if _, request := t.requestOf[uid]; request {
				continue // goes with its gang's request (requests.go)
			}
			p := h.info.GetPod()
			v := &Victim{
				Key: p.Namespace + "/" + p.Name, Kind: scheduling.VictimKindPod, UID: uid,
				Priority: podPriority(p), Since: p.CreationTimestamp.Time,
				holdings: []held{{node: h.node, pod: p}},
			}
			if usesClaims(p) {
				v.users = []*corev1.Pod{p}
			}
			pool.Eligible = append(pool.Eligible, v)
		}
	}
	return pool
}

// slotHoldings are the places of slots, one stand-in each.
func (t *Tracker) slotHoldings(id string, slots []Slot) []held {
	var out []held
	for i, s := range slots {
		p := slotPod(id, i, s)
		for range s.Count {
			out = append(out, held{node: s.Node, pod: p})
		}
	}
	return out
}

// hideDevices counts the devices that only the victims' pods use as free
// while a preemptor is placed, and returns what counts them again.
func (s *Snapshot) hideDevices(vs []*Victim) (undo func()) {
	if s.filters == nil || s.filters.devices == nil {
		return func() {}
	}
	var users []*corev1.Pod
	for _, v := range vs {
		users = append(users, v.users...)
	}
	if len(users) == 0 {
		return func() {}
	}
	return s.filters.devices.claims.hide(users)
}

// podPriority is a pod's spec.priority, 0 when unset, as the scheduler
// reads it.
func podPriority(p *corev1.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}

// evict takes the victims' holdings off the snapshot, and their devices
// (victimdevices.go), and returns what puts them back. Nodes are copied
// before they change, as Commit does, so the tracker's NodeInfos are never
// touched.
func (s *Snapshot) evict(vs []*Victim) (undo func()) { return s.takeOff(vs, true) }

// takeOff is evict; draining says whether bound pods it takes off still
// hold their node for kube-scheduler until they are deleted, as victims
// being evicted do, or are deleted at once before anything takes their
// place, as capacity-request pods are.
func (s *Snapshot) takeOff(vs []*Victim, draining bool) (undo func()) {
	orig := map[int]*schedfw.NodeInfo{}
	kept := map[int]int{}
	logger := klog.Background()
	for _, v := range vs {
		for _, h := range v.holdings {
			i, ok := s.index[h.node]
			if !ok {
				continue
			}
			if _, saved := orig[i]; !saved {
				orig[i] = s.infos[i]
				s.infos[i] = s.infos[i].SnapshotConcrete()
				s.changedNode(i)
				kept[i] = len(s.evicted[i])
			}
			// A holding the snapshot does not show (the tracker moved on
			// since it was taken) has nothing to take off.
			if s.infos[i].RemovePod(logger, h.pod) == nil && draining && schedulerNode(h.pod) != "" {
				// kube-scheduler still counts it until it is deleted
				// (draining.go), a released pod too: it may be bound
				// already.
				if s.evicted == nil {
					s.evicted = map[int][]*corev1.Pod{}
				}
				s.evicted[i] = append(s.evicted[i], h.pod)
			}
		}
	}
	shown := s.hideDevices(vs)
	return func() {
		shown()
		for i, ni := range orig {
			s.infos[i] = ni
			s.changedNode(i)
			if k := kept[i]; k > 0 {
				s.evicted[i] = s.evicted[i][:k]
			} else {
				delete(s.evicted, i) // a nil map too
			}
		}
	}
}

// preempting marks the placements that follow as a preemptor's, until done
// is called. They only decide or hold room, and nothing is released from
// them: the rule that guards releases onto nodes kube-scheduler still sees
// full (draining.go) does not apply, and the devices of the victims taken
// off count as free (victimdevices.go). Placements outside it see the
// devices as allocated until they are deallocated, so no gang is released
// onto devices still held.
func (s *Snapshot) preempting() (done func()) {
	s.ignoreDraining = true
	if s.filters == nil || s.filters.devices == nil {
		return func() { s.ignoreDraining = false }
	}
	// The pods placed before, whose devices a replay reserves, are
	// reserved as the cluster stands.
	s.use(context.TODO())
	s.filters.devices.claims.setActive(true)
	return func() {
		s.ignoreDraining = false
		s.filters.devices.claims.setActive(false)
	}
}
