package capacity

import (
	"container/heap"
	"fmt"
	"maps"
	"math"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// NodeState is a node with what is requested on it in one snapshot.
type NodeState struct {
	*Node
	Requested Resources
	Pods      int64
}

// Snapshot is a copy of the tracker's view that one admission cycle places
// gangs on. Placing a gang changes only the snapshot.
type Snapshot struct {
	Nodes []NodeState
}

// Empty returns the same nodes with nothing requested: the cluster idle.
// A gang that does not fit on it can never fit as the cluster stands.
func (s *Snapshot) Empty() *Snapshot {
	e := &Snapshot{Nodes: make([]NodeState, len(s.Nodes))}
	for i := range s.Nodes {
		e.Nodes[i] = NodeState{Node: s.Nodes[i].Node}
	}
	return e
}

// Assignment places one pod on one node.
type Assignment struct {
	Pod  *corev1.Pod
	Node string
	node int
	req  Resources
}

// Result is the outcome of placing a set of pods.
type Result struct {
	// Assignments are the pods that fit, each on its node.
	Assignments []Assignment
	// Unplaced is how many pods did not fit.
	Unplaced int
	// Short says why pods did not fit; empty when all did.
	Short string
}

// Place finds a node for as many of pods as fit, without changing the
// snapshot; Commit applies a result that is accepted.
//
// The heuristic is best-fit decreasing, which packs gangs tightly so that a
// large gang is not starved by fragmentation: pods are grouped by shape
// (same requests and node selection), larger shapes first; for each shape,
// the nodes it may run on are ranked by how full they would be with one more
// pod (the mean of the cpu and memory fractions, most allocated first, then
// by name), and each node is filled with as many pods as fit before the next.
// Filling the fullest node first leaves whole nodes free for later gangs.
func (s *Snapshot) Place(pods []*corev1.Pod) Result {
	var res Result
	added := map[int]*usage{}
	var shortMsgs []string
	for _, sh := range groupShapes(pods) {
		var why exclusions
		eligible := s.eligible(sh, &why)
		slots := make([]slot, 0, len(eligible))
		rooms := make([]int64, 0, len(eligible))
		limits := map[corev1.ResourceName]int{}
		for _, i := range eligible {
			ns := &s.Nodes[i]
			requested, podCount := ns.Requested, ns.Pods
			if a := added[i]; a != nil {
				requested = requested.Clone()
				requested.Add(a.requested)
				podCount += a.pods
			}
			room, limit := fitCount(sh.req, ns.Allocatable, requested, ns.MaxPods-podCount)
			rooms = append(rooms, room)
			limits[limit]++
			if room == 0 {
				continue
			}
			slots = append(slots, slot{node: i, room: room, score: fullness(sh.req, ns.Allocatable, requested)})
		}
		// The fullest node first; the snapshot is sorted by name, so the
		// index breaks ties by name. A heap, not a sort: a gang usually
		// needs a few nodes out of thousands.
		h := slotHeap(slots)
		heap.Init(&h)
		next := 0
		for h.Len() > 0 && next < len(sh.pods) {
			sl := heap.Pop(&h).(slot)
			for k := int64(0); k < sl.room && next < len(sh.pods); k++ {
				res.Assignments = append(res.Assignments, Assignment{Pod: sh.pods[next], Node: s.Nodes[sl.node].Name(), node: sl.node, req: sh.req})
				a := added[sl.node]
				if a == nil {
					a = &usage{}
					added[sl.node] = a
				}
				a.requested.Add(sh.req)
				a.pods++
				next++
			}
		}
		if left := len(sh.pods) - next; left > 0 {
			res.Unplaced += left
			shortMsgs = append(shortMsgs, shortMessage(len(sh.pods), next, sh.req, rooms, limits, why))
		}
	}
	res.Short = strings.Join(shortMsgs, "; ")
	return res
}

// Commit applies an accepted result to the snapshot, so that later
// placements in the same cycle see its pods.
func (s *Snapshot) Commit(r Result) {
	for _, a := range r.Assignments {
		ns := &s.Nodes[a.node]
		ns.Requested = ns.Requested.Clone()
		ns.Requested.Add(a.req)
		ns.Pods++
	}
}

// slot is a node a shape fits on: how many of its pods, and how full the
// node would be with one.
type slot struct {
	node  int
	room  int64
	score float64
}

// slotHeap pops the fullest node first, then the first by name.
type slotHeap []slot

func (h slotHeap) Len() int { return len(h) }
func (h slotHeap) Less(i, j int) bool {
	if h[i].score != h[j].score {
		return h[i].score > h[j].score
	}
	return h[i].node < h[j].node
}
func (h slotHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *slotHeap) Push(x any)   { *h = append(*h, x.(slot)) }
func (h *slotHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// shape is a set of pods that the filters and the fit check treat alike.
type shape struct {
	req      Resources
	pods     []*corev1.Pod
	affinity nodeaffinity.RequiredNodeAffinity
}

func groupShapes(pods []*corev1.Pod) []*shape {
	var shapes []*shape
	for _, p := range pods {
		req := PodRequests(p)
		var found *shape
		for _, sh := range shapes {
			if sameShape(sh.pods[0], p, sh.req, req) {
				found = sh
				break
			}
		}
		if found == nil {
			found = &shape{req: req, affinity: nodeaffinity.GetRequiredNodeAffinity(p)}
			shapes = append(shapes, found)
		}
		found.pods = append(found.pods, p)
	}
	sort.SliceStable(shapes, func(i, j int) bool {
		a, b := shapes[i].req, shapes[j].req
		if a.MilliCPU != b.MilliCPU {
			return a.MilliCPU > b.MilliCPU
		}
		return a.Memory > b.Memory
	})
	for _, sh := range shapes {
		sort.SliceStable(sh.pods, func(i, j int) bool { return sh.pods[i].Name < sh.pods[j].Name })
	}
	return shapes
}

func sameShape(a, b *corev1.Pod, ra, rb Resources) bool {
	return apiequality.Semantic.DeepEqual(ra, rb) &&
		maps.Equal(a.Spec.NodeSelector, b.Spec.NodeSelector) &&
		apiequality.Semantic.DeepEqual(requiredAffinity(a), requiredAffinity(b)) &&
		apiequality.Semantic.DeepEqual(a.Spec.Tolerations, b.Spec.Tolerations)
}

func requiredAffinity(p *corev1.Pod) *corev1.NodeSelector {
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		return a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	return nil
}

// exclusions count the nodes a shape may not run on, by the first filter
// that rules each out.
type exclusions struct {
	notReady, unschedulable, taint, affinity int
}

func (e exclusions) String() string {
	var parts []string
	for _, x := range []struct {
		n    int
		what string
	}{{e.notReady, "not ready"}, {e.unschedulable, "unschedulable"}, {e.taint, "an untolerated taint"}, {e.affinity, "node selector or affinity"}} {
		if x.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", x.n, x.what))
		}
	}
	return strings.Join(parts, ", ")
}

func (e exclusions) total() int { return e.notReady + e.unschedulable + e.taint + e.affinity }

// eligible returns the nodes that pass the scheduler's filters other than
// resources, for a shape: Ready, schedulable, NoSchedule and NoExecute
// taints tolerated, and required node affinity and nodeSelector matched.
func (s *Snapshot) eligible(sh *shape, why *exclusions) []int {
	logger := klog.Background()
	tolerations := sh.pods[0].Spec.Tolerations
	out := make([]int, 0, len(s.Nodes))
	for i := range s.Nodes {
		n := s.Nodes[i].Node
		switch {
		case !n.Ready:
			why.notReady++
		case n.Object.Spec.Unschedulable || n.Object.DeletionTimestamp != nil:
			why.unschedulable++
		case untolerated(logger, n.Object.Spec.Taints, tolerations):
			why.taint++
		case !matches(sh.affinity, n.Object):
			why.affinity++
		default:
			out = append(out, i)
		}
	}
	return out
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

// fitCount is how many pods of req fit on a node, and what limits them.
func fitCount(req, allocatable, requested Resources, podsFree int64) (int64, corev1.ResourceName) {
	room, limit := podsFree, corev1.ResourcePods
	if room < 0 {
		room = 0
	}
	consider := func(name corev1.ResourceName, want, alloc, used int64) {
		if want <= 0 {
			return
		}
		n := (alloc - used) / want
		if alloc-used < 0 {
			n = 0
		}
		if n < room {
			room, limit = n, name
		}
	}
	consider(corev1.ResourceCPU, req.MilliCPU, allocatable.MilliCPU, requested.MilliCPU)
	consider(corev1.ResourceMemory, req.Memory, allocatable.Memory, requested.Memory)
	consider(corev1.ResourceEphemeralStorage, req.EphemeralStorage, allocatable.EphemeralStorage, requested.EphemeralStorage)
	for _, sc := range req.Scalar {
		consider(sc.Name, sc.Value, allocatable.ScalarValue(sc.Name), requested.ScalarValue(sc.Name))
	}
	return room, limit
}

// fullness is how allocated a node would be with one more pod of req: the
// mean of its cpu and memory fractions (the resources it has).
func fullness(req, allocatable, requested Resources) float64 {
	var sum float64
	var n int
	if allocatable.MilliCPU > 0 {
		sum += float64(requested.MilliCPU+req.MilliCPU) / float64(allocatable.MilliCPU)
		n++
	}
	if allocatable.Memory > 0 {
		sum += float64(requested.Memory+req.Memory) / float64(allocatable.Memory)
		n++
	}
	if n == 0 {
		return 0
	}
	return math.Min(sum/float64(n), 1)
}

// maxRooms is how many nodes a message lists by name of room.
const maxRooms = 8

// shortMessage says why a shape's pods did not all fit, for example
// "8 pods requesting cpu 10 each, 6 fit: the 4 eligible nodes have room for 2, 2, 2, 0 of them (short of cpu)".
func shortMessage(want, placed int, req Resources, rooms []int64, limits map[corev1.ResourceName]int, why exclusions) string {
	sort.Slice(rooms, func(i, j int) bool { return rooms[i] > rooms[j] })
	var b strings.Builder
	fmt.Fprintf(&b, "%d pods requesting %s each, %d fit: ", want, req, placed)
	if len(rooms) == 0 {
		b.WriteString("no node is eligible")
	} else {
		shown := make([]string, 0, maxRooms)
		for i, r := range rooms {
			if i == maxRooms {
				shown = append(shown, fmt.Sprintf("… (%d more nodes)", len(rooms)-maxRooms))
				break
			}
			shown = append(shown, fmt.Sprint(r))
		}
		fmt.Fprintf(&b, "the %d eligible nodes have room for %s of them", len(rooms), strings.Join(shown, ", "))
		if l := mostCommon(limits); l != "" {
			fmt.Fprintf(&b, " (short of %s)", l)
		}
	}
	if why.total() > 0 {
		fmt.Fprintf(&b, "; %d nodes excluded: %s", why.total(), why)
	}
	return b.String()
}

func mostCommon(m map[corev1.ResourceName]int) corev1.ResourceName {
	var best corev1.ResourceName
	for name, n := range m {
		if n > m[best] || (n == m[best] && name < best) {
			best = name
		}
	}
	return best
}
