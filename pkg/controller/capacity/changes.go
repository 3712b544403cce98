package capacity

import (
	"maps"
	"math"
	"reflect"
	"slices"

	fwk "k8s.io/kube-scheduler/framework"
	schedutil "k8s.io/kubernetes/pkg/scheduler/util"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// Changes are what happened in the tracker since the last admission cycle
// that could let a gang that did not fit then fit now: the queueing hints
// of hint.go read them. Everything else the tracker records only takes
// room away (a pod bound, a node removed), and a gang that did not fit
// with more room does not fit with less.
type Changes struct {
	// Freed are the nodes whose NodeInfo changed in a way that may give
	// room: a pod left or changed there, a place reserved on it was given
	// back, the node itself was added or changed, or pods being deleted
	// stopped draining it. A gang none of whose pods fits on any of them
	// (NodeResourcesFit) is helped by none of it.
	Freed map[string]bool
	// Anywhere says that room may have grown beyond the nodes in Freed: a
	// pod with required pod anti-affinity left, which frees every node of
	// its topology domains for the pods it repelled.
	Anywhere bool
	// Nodes says that a node was added, removed, or changed where the
	// filters read it: that changes what the idle cluster holds, and so
	// whether a gang can ever fit (ExceedsClusterCapacity), for every
	// gang. Nodes change seldom.
	Nodes bool
	// LowestHolder is the lowest priority of the pods that began to hold
	// capacity and of the groups recorded admitted (math.MaxInt32: none):
	// a possible new victim for a gang that may preempt those of lower
	// priority than its own.
	LowestHolder int32
	// Requested are the groups whose capacity-request pods changed: their
	// room is free for them alone (requests.go).
	Requested map[scheduling.GroupKey]bool
}

// noChanges is the state after a cycle took the changes.
func noChanges() Changes { return Changes{LowestHolder: math.MaxInt32} }

// freedOn records that room may have grown on node, and, if the pod that
// gave it back repels others by required anti-affinity, beyond it. Called
// with t.mu held.
func (t *Tracker) freedOn(node string, left fwk.PodInfo) {
	if t.changes.Freed == nil {
		t.changes.Freed = map[string]bool{}
	}
	t.changes.Freed[node] = true
	if left != nil && len(left.GetRequiredAntiAffinityTerms()) > 0 {
		t.changes.Anywhere = true
	}
}

// heldBy records that a pod of priority prio began to hold capacity, or a
// group of that priority was admitted. Called with t.mu held.
func (t *Tracker) heldBy(prio int32) {
	t.changes.LowestHolder = min(t.changes.LowestHolder, prio)
}

// requestChanged records that a group's capacity-request pods changed.
// Called with t.mu held.
func (t *Tracker) requestChanged(key scheduling.GroupKey) {
	if t.changes.Requested == nil {
		t.changes.Requested = map[scheduling.GroupKey]bool{}
	}
	t.changes.Requested[key] = true
}

// SnapshotChanges takes a snapshot for one admission cycle and the
// changes since the last one, at the same instant: each change is either
// taken with a snapshot that shows it, or left for the next cycle.
func (t *Tracker) SnapshotChanges(filters *Filters) (*Snapshot, Changes) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ch := t.changes
	t.changes = noChanges()
	return t.snapshotLocked(filters), ch
}

// SnapshotPending is SnapshotChanges for a what-if: the snapshot and a
// copy of the changes the next cycle will take, which it leaves to it.
func (t *Tracker) SnapshotPending(filters *Filters) (*Snapshot, Changes) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ch := t.changes
	ch.Freed = maps.Clone(ch.Freed)
	ch.Requested = maps.Clone(ch.Requested)
	return t.snapshotLocked(filters), ch
}

// groupHolderPriority is the lowest priority among a group's pods and its
// spec.priority: what it would weigh as a victim (Victims). Called with
// t.mu held.
func (t *Tracker) groupHolderPriority(key scheduling.GroupKey, st GroupState) int32 {
	prio := int32(math.MaxInt32)
	if st.SpecPriority != nil {
		prio = *st.SpecPriority
	}
	for uid := range t.byGroup[key] {
		if mp := t.managed[uid]; mp != nil {
			prio = min(prio, podPriority(mp.info.GetPod()))
		}
	}
	return prio
}

// sameHolding reports whether a pod's new holding takes exactly what its
// old one did: the same node, requests (as the scheduler computes them,
// cached in the PodInfo) and host ports, and as many anti-affinity
// terms. An update such as a status change then frees nothing.
func sameHolding(oldNode string, old fwk.PodInfo, node string, info fwk.PodInfo) bool {
	if oldNode != node || info == nil {
		return false
	}
	a, b := old.GetPod(), info.GetPod()
	if len(old.GetRequiredAntiAffinityTerms()) != len(info.GetRequiredAntiAffinityTerms()) {
		return false
	}
	return reflect.DeepEqual(old.CalculateResource(), info.CalculateResource()) &&
		slices.Equal(schedutil.GetHostPorts(a), schedutil.GetHostPorts(b))
}
