package capacity

import (
	"slices"
	"sort"

	fwk "k8s.io/kube-scheduler/framework"
	schedfw "k8s.io/kubernetes/pkg/scheduler/framework"
)

// The lister's node lists (every node; those with pods that have affinity,
// required anti-affinity, and non-hostname anti-affinity) are what
// PreFilter plugins walk, once per pod. They are built once per snapshot
// and then kept up to date node by node: placing a pod changes one node,
// and rebuilding a list of 5,000 nodes for each gang of a cycle would cost
// more than placing the gang.

// listKeeps says which nodes each list holds.
var listKeeps = [4]func(*schedfw.NodeInfo) bool{
	func(*schedfw.NodeInfo) bool { return true },
	func(ni *schedfw.NodeInfo) bool { return len(ni.PodsWithAffinity) > 0 },
	func(ni *schedfw.NodeInfo) bool { return len(ni.PodsWithRequiredAntiAffinity) > 0 },
	func(ni *schedfw.NodeInfo) bool { return len(ni.PodsWithRequiredNonHostScopedAntiAffinity) > 0 },
}

// changed drops the cached node lists: any node's NodeInfo may have been
// replaced or changed.
func (s *Snapshot) changed() {
	s.listsMu.Lock()
	s.listsValid = [4]bool{}
	s.dirty = s.dirty[:0]
	s.listsMu.Unlock()
}

// changedNode records that node i's NodeInfo (s.info(i)) was replaced or
// changed: each list brings it in the next time it is asked for. Past a
// quarter of the nodes, rebuilding is cheaper.
func (s *Snapshot) changedNode(i int) {
	s.listsMu.Lock()
	defer s.listsMu.Unlock()
	if s.listsValid == [4]bool{} {
		return
	}
	if len(s.dirty) >= max(len(s.infos)/4, 16) {
		s.listsValid = [4]bool{}
		s.dirty = s.dirty[:0]
		return
	}
	s.dirty = append(s.dirty, i)
}

// list returns list k, bringing in the nodes changed since it was last
// asked for, or building it. Callers only read it, and no node changes
// while a plugin holds it.
func (n nodeInfoLister) list(k int) ([]fwk.NodeInfo, error) {
	s, err := n.snapshot()
	if err != nil {
		return nil, err
	}
	// Filter plugins run in parallel; any of them may ask.
	s.listsMu.Lock()
	defer s.listsMu.Unlock()
	if s.listsValid[k] {
		for _, i := range s.dirty[s.listsSeen[k]:] {
			s.bringIn(k, i)
		}
		s.listsSeen[k] = len(s.dirty)
		return s.lists[k], nil
	}
	keep := listKeeps[k]
	out := make([]fwk.NodeInfo, 0, len(s.infos))
	var nodes []int
	for i := range s.infos {
		if ni := s.info(i); keep(ni) {
			out = append(out, ni)
			if k > 0 {
				nodes = append(nodes, i)
			}
		}
	}
	s.lists[k], s.listNodes[k], s.listsValid[k], s.listsSeen[k] = out, nodes, true, len(s.dirty)
	return out, nil
}

// bringIn puts node i into list k as it is now: in, out, or replaced.
func (s *Snapshot) bringIn(k, i int) {
	ni := s.info(i)
	if k == 0 {
		s.lists[0][i] = ni
		return
	}
	nodes := s.listNodes[k]
	at := sort.SearchInts(nodes, i)
	in := at < len(nodes) && nodes[at] == i
	switch want := listKeeps[k](ni); {
	case in && want:
		s.lists[k][at] = ni
	case in:
		s.lists[k] = slices.Delete(s.lists[k], at, at+1)
		s.listNodes[k] = slices.Delete(nodes, at, at+1)
	case want:
		s.lists[k] = slices.Insert(s.lists[k], at, fwk.NodeInfo(ni))
		s.listNodes[k] = slices.Insert(nodes, at, i)
	}
}
