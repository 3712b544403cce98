package capacity

import (
	"fmt"
	"maps"
	"math"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	schedfw "k8s.io/kubernetes/pkg/scheduler/framework"
)

// slot is a node a shape fits on, and how full it would be with one more.
type slot struct {
	node  int
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

// shape is a set of pods that placement treats alike. Pods that constrain
// each other (not independent) are still placed one at a time, every node
// filtered again for each; their shape only orders them and words the
// message.
type shape struct {
	req         Resources
	pods        []*corev1.Pod
	independent bool
	// copies, when set, are what the shape places: pods holds only their
	// template.
	copies *Copies
	// why says, by node, why the last pod offered it was refused.
	why map[int]string
}

// size is how many pods the shape asks to place.
func (sh *shape) size() int {
	if sh.copies != nil {
		return sh.copies.Count
	}
	return len(sh.pods)
}

// groupShapes groups pods by shape, and gives each set of copies a shape
// of its own, larger shapes first.
func groupShapes(pods []*corev1.Pod, copies []Copies) []*shape {
	var shapes []*shape
	for i := range copies {
		c := &copies[i]
		if c.Count <= 0 {
			continue
		}
		shapes = append(shapes, &shape{req: PodRequests(c.Template), pods: []*corev1.Pod{c.Template},
			independent: independent(c.Template), copies: c, why: map[int]string{}})
	}
	for _, p := range pods {
		req := PodRequests(p)
		ind := independent(p)
		var found *shape
		for _, sh := range shapes {
			// A set of copies places only its count: a pod of the same
			// shape needs a shape of its own.
			if sh.copies == nil && sh.independent == ind && sameShape(sh.pods[0], p, sh.req, req) {
				found = sh
				break
			}
		}
		if found == nil {
			found = &shape{req: req, independent: ind, why: map[int]string{}}
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
		a.Spec.SchedulerName == b.Spec.SchedulerName &&
		maps.Equal(a.Spec.NodeSelector, b.Spec.NodeSelector) &&
		apiequality.Semantic.DeepEqual(a.Spec.Affinity, b.Spec.Affinity) &&
		apiequality.Semantic.DeepEqual(a.Spec.Tolerations, b.Spec.Tolerations)
}

// refuseAll records a refusal that holds on every node (PreFilter's).
func (sh *shape) refuseAll(why string) {
	sh.why[-1] = why
}

// fullness is how allocated a node would be with one more pod of req: the
// mean of its cpu and memory fractions (the resources it has).
func fullness(req Resources, ni *schedfw.NodeInfo) float64 {
	var sum float64
	var n int
	if a := ni.Allocatable.MilliCPU; a > 0 {
		sum += float64(ni.Requested.MilliCPU+req.MilliCPU) / float64(a)
		n++
	}
	if a := ni.Allocatable.Memory; a > 0 {
		sum += float64(ni.Requested.Memory+req.Memory) / float64(a)
		n++
	}
	if n == 0 {
		return 0
	}
	return math.Min(sum/float64(n), 1)
}

// maxReasons is how many distinct refusals a message lists.
const maxReasons = 4

// shortMessage says why a shape's pods did not all fit, as the scheduler's
// own Unschedulable message does, for example
// "8 pods requesting cpu 10 each, 6 fit; 4 of 4 nodes refuse the rest: 3 Insufficient cpu (NodeResourcesFit), 1 node(s) had untolerated taint {a: b} (TaintToleration)".
func (sh *shape) shortMessage(placed, nodes int) string {
	var b strings.Builder
	switch {
	case sh.copies != nil:
		fmt.Fprintf(&b, "%d pods requesting %s each, %d fit (role %s, not yet created)", sh.copies.Count, sh.req, placed, sh.copies.Name)
	case len(sh.pods) == 1:
		fmt.Fprintf(&b, "pod %s requesting %s does not fit", sh.pods[0].Name, sh.req)
	default:
		fmt.Fprintf(&b, "%d pods requesting %s each, %d fit", len(sh.pods), sh.req, placed)
	}
	if all, ok := sh.why[-1]; ok {
		fmt.Fprintf(&b, "; every node refuses the rest: %s", all)
		return b.String()
	}
	counts := map[string]int{}
	for _, why := range sh.why {
		counts[why]++
	}
	reasons := make([]string, 0, len(counts))
	for why := range counts {
		reasons = append(reasons, why)
	}
	sort.Slice(reasons, func(i, j int) bool {
		if counts[reasons[i]] != counts[reasons[j]] {
			return counts[reasons[i]] > counts[reasons[j]]
		}
		return reasons[i] < reasons[j]
	})
	if len(reasons) > maxReasons {
		reasons = reasons[:maxReasons]
	}
	for i, why := range reasons {
		reasons[i] = fmt.Sprintf("%d %s", counts[why], why)
	}
	switch {
	case nodes == 0:
		b.WriteString("; the cluster has no nodes")
	case len(sh.why) == 0:
		fmt.Fprintf(&b, "; no node is left for the rest (%d nodes)", nodes)
	default:
		fmt.Fprintf(&b, "; %d of %d nodes refuse the rest: %s", len(sh.why), nodes, strings.Join(reasons, ", "))
	}
	return b.String()
}
