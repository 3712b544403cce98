package capacity

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	schedfw "k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// Explain runs the filters for a pod that holds node (released and pinned
// there) on a snapshot of the node without it, and says which filter refuses
// it and why, as "node(s) had untolerated taint(s) (TaintToleration)"; ""
// when every filter passes, so that only capacity that came and went, or a
// rule placement cannot see, explains why the scheduler did not bind it.
func (t *Tracker) Explain(f *Filters, p *corev1.Pod, node string) string {
	pod := PlacementPod(p)
	return t.filterOn(f, pod, node, func(ni *schedfw.NodeInfo) {
		_ = ni.RemovePod(klog.Background(), pod)
	})
}

// ClaimFits reports whether pod p may take one of the places reserved for
// group key on node: it asks for no more than a place holds (slot), and
// the scheduler's filters pass for it there once that place is given back.
func (t *Tracker) ClaimFits(f *Filters, key scheduling.GroupKey, p *corev1.Pod, node string, slot Resources) bool {
	if !PodRequests(p).Within(slot) {
		return false
	}
	prefix := "reserved/" + key.String() + "/"
	return t.filterOn(f, PlacementPod(p), node, func(ni *schedfw.NodeInfo) {
		for _, pi := range ni.Pods {
			if strings.HasPrefix(string(pi.GetPod().UID), prefix) {
				_ = ni.RemovePod(klog.Background(), pi.GetPod())
				return
			}
		}
	}) == ""
}

// filterOn runs the PreFilter and Filter plugins for pod on node, in a
// snapshot whose copy of the node is changed by edit first; it returns the
// refusal, or "".
func (t *Tracker) filterOn(f *Filters, pod *corev1.Pod, node string, edit func(*schedfw.NodeInfo)) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := t.Snapshot(f)
	defer s.Close()
	i, ok := s.index[node]
	if !ok {
		return "the node is gone"
	}
	if !s.Nodes[i].Ready {
		return "the node is not ready"
	}
	ctx := context.TODO()
	ni := s.infos[i].SnapshotConcrete()
	edit(ni)
	s.overlay = map[int]*schedfw.NodeInfo{i: ni}
	s.changed()
	s.replayed = true // the pods' own reservations are not wanted here
	f.lister.s = s
	defer func() { f.lister.s = nil }()
	state := schedfw.NewCycleState()
	if _, st, _ := f.fw.RunPreFilterPlugins(ctx, state, pod); !st.IsSuccess() && !st.IsSkip() {
		return refusal(st)
	}
	if st := f.fw.RunFilterPlugins(ctx, state, pod, ni); !st.IsSuccess() {
		return refusal(st)
	}
	return ""
}
