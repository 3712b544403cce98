package capacity

import (
	"container/heap"

	corev1 "k8s.io/api/core/v1"
	schedfw "k8s.io/kubernetes/pkg/scheduler/framework"
)

// Copies are Count pods alike, shaped as Template, that need not exist:
// the missing pods of a role created later. Placement places them as one
// shape with a count and makes no object per copy, so that what it costs
// is bounded by what fits on the cluster, whatever Count says.
type Copies struct {
	// Name says what the copies stand for (a role), in results and messages.
	Name     string
	Template *corev1.Pod
	Count    int
}

// CopiesOnNode is how many copies of the Copies named Name went to Node,
// each requesting Requests.
type CopiesOnNode struct {
	Name     string
	Node     string
	Count    int
	Requests Resources
}

// placeCopies places a shape's copies and returns how many it placed.
// Copies are alike, so one that fits nowhere means that none of the rest
// does: placement stops there, and its work is bounded by the copies that
// fit and the nodes, never by Count. Each node that takes copies holds one
// pod and one PodInfo for all of them.
func (p *placer) placeCopies(sh *shape) int {
	tpl := sh.pods[0]
	cs, st := p.prefilter(tpl)
	if st != nil {
		sh.refuseAll(refusal(st))
		return 0
	}
	var h slotHeap
	if sh.independent {
		// Placing a copy changes only its node's verdict: the nodes are
		// filtered once, and each later copy only on the node offered.
		for _, i := range p.filterAll(cs, tpl, sh.why) {
			h = append(h, slot{node: i, score: fullness(sh.req, p.s.info(i))})
		}
	} else {
		for k := range p.count() {
			i := p.at(k)
			h = append(h, slot{node: i, score: bestFitScore(sh.req, p.s.info(i))})
		}
	}
	heap.Init(&h)
	onNode := map[int]int{}
	infos := map[int]*schedfw.PodInfo{}
	placed := 0
	for placed < sh.copies.Count && h.Len() > 0 {
		sl := heap.Pop(&h).(slot)
		if why := p.filter(cs, tpl, sl.node); why != "" {
			sh.why[sl.node] = why
			continue
		}
		pi := infos[sl.node]
		if pi == nil {
			bound := *tpl
			bound.Spec.NodeName = p.s.Nodes[sl.node].Name()
			pi, _ = schedfw.NewPodInfo(&bound)
			infos[sl.node] = pi
		}
		p.s.noteAntiAffinity(tpl)
		p.s.writable(sl.node).AddPodInfo(pi)
		p.s.changedNode(sl.node)
		onNode[sl.node]++
		placed++
		sl.score = fullness(sh.req, p.s.info(sl.node))
		heap.Push(&h, sl)
	}
	for i := range p.s.Nodes {
		if n := onNode[i]; n > 0 {
			delete(sh.why, i)
			p.res.Copies = append(p.res.Copies, CopiesOnNode{Name: sh.copies.Name, Node: p.s.Nodes[i].Name(), Count: n, Requests: sh.req})
		}
	}
	return placed
}
