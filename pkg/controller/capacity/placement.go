package capacity

import (
	"container/heap"
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedfw "k8s.io/kubernetes/pkg/scheduler/framework"
)

// Assignment places one pod on one node.
type Assignment struct {
	Pod  *corev1.Pod
	Node string
}

// Result is the outcome of placing a set of pods. It must be passed to
// Commit or Discard before the next Place on the same filters.
type Result struct {
	// Assignments are the pods that fit, each on its node.
	Assignments []Assignment
	// Copies are the copies that fit, by node.
	Copies []CopiesOnNode
	// Unplaced is how many pods did not fit.
	Unplaced int
	// Short says why pods did not fit; empty when all did.
	Short string
	// Domain is the domain the gang was placed in, when its Topology asks
	// for one; RoleDomains are its roles', by name (topology.go).
	Domain      *Domain
	RoleDomains map[string]Domain

	// topology marks a gang that did not fit the domains its Topology
	// asks for: it places nothing, Short says all there is to say, and
	// fit is how many pods the best domain would take.
	topology bool
	fit      int

	overlay  map[int]*schedfw.NodeInfo
	reserved []reservation
}

// reservation is one Reserve call, which Unreserve undoes.
type reservation struct {
	state fwk.CycleState
	pod   *corev1.Pod
	node  string
}

// fitCount is how many pods and copies fit, or for a gang that no domain
// fits, how many the best one would take.
func (r Result) fitCount() int {
	if r.topology {
		return r.fit
	}
	return r.Placed()
}

// Placed is how many pods and copies fit.
func (r Result) Placed() int {
	n := len(r.Assignments)
	for _, c := range r.Copies {
		n += c.Count
	}
	return n
}

// Place finds a node for as many of pods and copies as fit, without
// changing the snapshot; Commit applies a result that is accepted, Discard
// drops one that is not.
//
// Where a pod may run is decided by kube-scheduler's own PreFilter and
// Filter plugins (filters.go), run on the snapshot with the pods placed so
// far, so that a gang's members constrain each other as they will on the
// nodes: one per node under anti-affinity, one per host port, spread evenly,
// a volume or a device taken once.
//
// Which of those nodes is the heuristic's: best-fit decreasing, which packs
// gangs tightly so that a large gang is not starved by fragmentation. Pods
// are grouped by shape (same requests and node selection), larger shapes
// first; each pod goes to the node that would be the most allocated with it
// (the mean of its cpu and memory fractions, then by name). Filling the
// fullest node first leaves whole nodes free for later gangs.
func (s *Snapshot) Place(pods []*corev1.Pod, copies ...Copies) Result {
	return s.placeOn(nil, pods, copies)
}

// placeOn is Place on the nodes only lists (indexes into s.Nodes, in
// order), or on every node when only is nil: the nodes of one topology
// domain (topology.go).
func (s *Snapshot) placeOn(only []int, pods []*corev1.Pod, copies []Copies) Result {
	ctx := context.TODO()
	s.use(ctx)
	p := &placer{ctx: ctx, s: s, only: only}
	var shortMsgs []string
	for _, sh := range groupShapes(pods, copies) {
		placed := p.placeShape(sh)
		if left := sh.size() - placed; left > 0 {
			p.res.Unplaced += left
			shortMsgs = append(shortMsgs, sh.shortMessage(placed, p.count()))
		}
	}
	p.res.Short = strings.Join(shortMsgs, "; ")
	p.res.overlay, p.res.reserved = s.overlay, p.reserved
	for i := range s.overlay {
		s.changedNode(i)
	}
	s.overlay = nil
	return p.res
}

// Commit applies an accepted result to the snapshot, so that later
// placements in the same cycle see its pods, volumes and devices.
func (s *Snapshot) Commit(r Result) {
	for i, ni := range r.overlay {
		s.infos[i] = ni
		s.changedNode(i)
	}
	s.reserved = append(s.reserved, r.reserved...)
}

// Discard gives back the volumes and devices a result that is not
// accepted reserved.
func (s *Snapshot) Discard(r Result) {
	s.unreserve(r.reserved)
}

// Close gives back everything the cycle reserved: the next cycle's snapshot
// sees the admitted pods in the tracker and reserves their volumes and
// devices again until they are bound (replay). The devices of the victims
// taken off count as allocated again.
func (s *Snapshot) Close() {
	s.unreserve(s.reserved)
	s.reserved = nil
	if s.filters != nil && s.filters.devices != nil {
		s.filters.devices.claims.reset()
	}
	if s.filters != nil && s.filters.lister.s == s {
		s.filters.lister.s = nil
	}
}

func (s *Snapshot) unreserve(rs []reservation) {
	for i := len(rs) - 1; i >= 0; i-- {
		r := rs[i]
		s.filters.fw.RunReservePluginsUnreserve(context.TODO(), r.state, r.pod, r.node)
	}
}

// use points the filters at this snapshot and, the first time, reserves
// what Muster's pods that hold a node without being bound to it will take:
// the scheduler has not allocated their devices or bound their volumes yet,
// and no later gang may be promised them.
func (s *Snapshot) use(ctx context.Context) {
	s.filters.lister.s = s
	if s.replayed {
		return
	}
	s.replayed = true
	for _, h := range s.unbound {
		i, ok := s.index[h.node]
		if !ok {
			continue
		}
		// The pod is already counted on its node: filter it on a copy of
		// the node without it.
		ni := s.infos[i].SnapshotConcrete()
		_ = ni.RemovePod(klog.FromContext(ctx), h.pod)
		s.overlay = map[int]*schedfw.NodeInfo{i: ni}
		s.changedNode(i)
		state := schedfw.NewCycleState()
		_, st, _ := s.filters.fw.RunPreFilterPlugins(ctx, state, h.pod)
		if st.IsSuccess() {
			st = s.filters.fw.RunFilterPlugins(ctx, state, h.pod, ni)
		}
		if st.IsSuccess() {
			st = s.filters.fw.RunReservePluginsReserve(ctx, state, h.pod, h.node)
		}
		if st.IsSuccess() {
			s.reserved = append(s.reserved, reservation{state: state, pod: h.pod, node: h.node})
		} else {
			klog.FromContext(ctx).V(2).Info("Placement could not reserve the volumes or devices of a pod placed earlier", "pod", klog.KObj(h.pod), "node", h.node, "status", st.Message())
		}
		s.overlay = nil
		s.changedNode(i)
	}
}

// placer is one Place call in progress.
type placer struct {
	ctx      context.Context
	s        *Snapshot
	res      Result
	reserved []reservation
	// only, when not nil, are the nodes the placement may use.
	only []int
}

// count is how many nodes the placement may use; at(k) is the k-th, an
// index into s.Nodes.
func (p *placer) count() int {
	if p.only != nil {
		return len(p.only)
	}
	return len(p.s.Nodes)
}

func (p *placer) at(k int) int {
	if p.only != nil {
		return p.only[k]
	}
	return k
}

// prefilter runs the PreFilter plugins for pod; a failure refuses every node.
func (p *placer) prefilter(pod *corev1.Pod) (*cycleState, *fwk.Status) {
	state := schedfw.NewCycleState()
	result, st, _ := p.s.filters.fw.RunPreFilterPlugins(p.ctx, state, pod)
	if !st.IsSuccess() && !st.IsSkip() {
		return nil, st
	}
	return &cycleState{state: state, result: result}, nil
}

// filter runs the Filter plugins for pod on node i; "" means it may run there.
func (p *placer) filter(cs *cycleState, pod *corev1.Pod, i int) string {
	n := p.s.Nodes[i]
	switch {
	case !n.Ready:
		return "not ready"
	case n.Object.DeletionTimestamp != nil:
		return "being deleted"
	case !cs.result.AllNodes() && !cs.result.NodeNames.Has(n.Name()):
		return "not among the nodes its PreFilter plugins allow"
	}
	if why := p.s.drainHazard(pod, i); why != "" {
		return why
	}
	st := p.s.filters.fw.RunFilterPlugins(p.ctx, cs.state, pod, p.s.info(i))
	if st.IsSuccess() {
		return ""
	}
	return refusal(st)
}

// filterAll runs filter on every node, in parallel, and returns the nodes
// pod may run on; why records the others.
func (p *placer) filterAll(cs *cycleState, pod *corev1.Pod, why map[int]string) []int {
	reasons := make([]string, p.count())
	p.s.filters.fw.Parallelizer().Until(p.ctx, p.count(), func(k int) {
		reasons[k] = p.filter(cs, pod, p.at(k))
	}, "muster-placement")
	var ok []int
	for k, r := range reasons {
		i := p.at(k)
		if r == "" {
			ok = append(ok, i)
			delete(why, i)
		} else {
			why[i] = r
		}
	}
	return ok
}

// refusal names the plugin that refused a node, and why, as the scheduler's
// own Unschedulable message does.
func refusal(st *fwk.Status) string {
	reasons := strings.Join(st.Reasons(), ", ")
	if st.Plugin() == "" {
		return reasons
	}
	return fmt.Sprintf("%s (%s)", reasons, st.Plugin())
}

// assign puts pod on node i in the placement in progress and reserves its
// volumes and devices there; false if Reserve refused.
func (p *placer) assign(cs *cycleState, pod *corev1.Pod, i int) bool {
	node := p.s.Nodes[i].Name()
	if needsReserve(pod) {
		if st := p.s.filters.fw.RunReservePluginsReserve(p.ctx, cs.state, pod, node); !st.IsSuccess() {
			p.s.filters.fw.RunReservePluginsUnreserve(p.ctx, cs.state, pod, node)
			return false
		}
		p.reserved = append(p.reserved, reservation{state: cs.state, pod: pod, node: node})
	}
	bound := *pod
	bound.Spec.NodeName = node
	p.s.noteAntiAffinity(pod)
	p.s.writable(i).AddPod(&bound)
	p.s.changedNode(i)
	p.res.Assignments = append(p.res.Assignments, Assignment{Pod: pod, Node: node})
	return true
}

// placeShape places a shape's pods and returns how many it placed.
func (p *placer) placeShape(sh *shape) int {
	if sh.copies != nil {
		return p.placeCopies(sh)
	}
	if !sh.independent {
		placed := 0
		var f follower
		for _, pod := range sh.pods {
			cs, node := p.placeAlone(sh, pod, f.stateFor(p, pod))
			if node >= 0 {
				placed++
			}
			f.follow(p, pod, cs, node)
		}
		return placed
	}
	return p.placeIndependent(sh)
}

// placeAlone places a pod whose constraints depend on the pods placed
// before it (pod affinity, topology spread, host ports, volumes, devices).
// The nodes are taken in best-fit order, by a cheap estimate of how full
// each would be with the pod (nodes where its cpu or memory cannot fit
// last), and filtered one by one until one passes: that node is the
// fullest that the filters allow, found without filtering every node. A
// pod that fits nowhere has had every node filtered, so its message counts
// every refusal.
//
// cs, when not nil, is the PreFilter state for pod (follow.go); the state
// used is returned with the node taken, or -1.
func (p *placer) placeAlone(sh *shape, pod *corev1.Pod, cs *cycleState) (*cycleState, int) {
	if cs == nil {
		var st *fwk.Status
		if cs, st = p.prefilter(pod); st != nil {
			sh.refuseAll(refusal(st))
			return nil, -1
		}
	}
	order := make([]slot, p.count())
	for k := range order {
		i := p.at(k)
		order[k] = slot{node: i, score: bestFitScore(sh.req, p.s.info(i))}
	}
	sort.Slice(order, func(a, b int) bool { return slotHeap(order).Less(a, b) })
	for _, sl := range order {
		if why := p.filter(cs, pod, sl.node); why != "" {
			sh.why[sl.node] = why
			continue
		}
		if p.assign(cs, pod, sl.node) {
			delete(sh.why, sl.node)
			return cs, sl.node
		}
		sh.why[sl.node] = "its volumes or devices could not be reserved"
	}
	return cs, -1
}

// bestFitScore orders nodes for placeAlone: how full the node would be
// with one more pod of req, or -1 if its cpu or memory cannot take it (the
// filters decide; this only saves filtering nodes that will refuse).
func bestFitScore(req Resources, ni *schedfw.NodeInfo) float64 {
	if ni.Requested.MilliCPU+req.MilliCPU > ni.Allocatable.MilliCPU || ni.Requested.Memory+req.Memory > ni.Allocatable.Memory {
		return -1
	}
	return fullness(req, ni)
}

// placeIndependent places pods that constrain only the node they go to
// (requests, node selection, tolerations). The nodes are offered in
// best-fit order, by a cheap estimate of how full each would be with the
// pod (bestFitScore, which for a node whose cpu and memory can take it is
// the fullness the heuristic orders by), and filtered only when offered:
// the first node that passes is the fullest that the filters allow, and a
// gang of 8 on 5,000 nodes filters a handful of them, not all. A node
// refused is not offered again, but for a refusal by running pods'
// anti-affinity, which the next pod's labels may not meet. A pod that
// fits nowhere has had every node filtered, so the message counts every
// refusal. Pods get their own PreFilter only when they differ in labels
// that running pods' anti-affinity selects on.
func (p *placer) placeIndependent(sh *shape) int {
	cs, st := p.prefilter(sh.pods[0])
	if st != nil {
		sh.refuseAll(refusal(st))
		return 0
	}
	// Of an independent pod's labels, PreFilter reads only those that
	// running pods' anti-affinity selects on: pods that agree on them share
	// one PreFilter, which with thousands of such pods is most of the work.
	keys := p.antiAffinityKeys()
	states := map[string]*cycleState{relevantLabels(sh.pods[0], keys): cs}
	h := make(slotHeap, p.count())
	for k := range h {
		i := p.at(k)
		h[k] = slot{node: i, score: bestFitScore(sh.req, p.s.info(i))}
	}
	heap.Init(&h)
	placed := 0
	for k, pod := range sh.pods {
		if k > 0 {
			key := relevantLabels(pod, keys)
			if cs = states[key]; cs == nil {
				if cs, st = p.prefilter(pod); st != nil {
					continue
				}
				states[key] = cs
			}
		}
		var later []slot
		for h.Len() > 0 {
			sl := heap.Pop(&h).(slot)
			if why := p.filter(cs, pod, sl.node); why != "" {
				sh.why[sl.node] = why
				// Running pods' anti-affinity may refuse this pod for its
				// labels alone; the next pod may still go there.
				if strings.Contains(why, "InterPodAffinity") {
					later = append(later, sl)
				}
				continue
			}
			if !p.assign(cs, pod, sl.node) {
				continue
			}
			placed++
			sl.score = bestFitScore(sh.req, p.s.info(sl.node))
			heap.Push(&h, sl)
			break
		}
		for _, sl := range later {
			heap.Push(&h, sl)
		}
	}
	return placed
}

func needsReserve(p *corev1.Pod) bool {
	return len(p.Spec.ResourceClaims) > 0 || len(StorageVolumes(p.Spec.Volumes)) > 0
}

// independent reports whether a pod constrains only the node it goes to,
// so that placing it changes no other node's verdict for its shape.
func independent(p *corev1.Pod) bool {
	if a := p.Spec.Affinity; a != nil {
		if a.PodAffinity != nil && len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
			return false
		}
		if a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
			return false
		}
	}
	for _, c := range p.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable == corev1.DoNotSchedule {
			return false
		}
	}
	for _, c := range append(append([]corev1.Container(nil), p.Spec.InitContainers...), p.Spec.Containers...) {
		for _, port := range c.Ports {
			if port.HostPort != 0 {
				return false
			}
		}
	}
	return !needsReserve(p)
}
