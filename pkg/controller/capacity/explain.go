package capacity

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	schedfw "k8s.io/kubernetes/pkg/scheduler/framework"
)

// Explain runs the filters for a pod that holds node (released and pinned
// there) on a snapshot of the node without it, and says which filter refuses
// it and why, as "node(s) had untolerated taint(s) (TaintToleration)"; ""
// when every filter passes, so that only capacity that came and went, or a
// rule placement cannot see, explains why the scheduler did not bind it.
func (t *Tracker) Explain(f *Filters, p *corev1.Pod, node string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := t.Snapshot(f)
	defer s.Close()
	i, ok := s.index[node]
	if !ok {
		return "the node is gone"
	}
	ctx := context.TODO()
	pod := PlacementPod(p)
	ni := s.infos[i].SnapshotConcrete()
	_ = ni.RemovePod(klog.FromContext(ctx), pod)
	s.overlay = map[int]*schedfw.NodeInfo{i: ni}
	s.replayed = true // the pod's own reservations are not wanted here
	f.lister.s = s
	defer func() { f.lister.s = nil }()
	state := schedfw.NewCycleState()
	if _, st, _ := f.fw.RunPreFilterPlugins(ctx, state, pod); !st.IsSuccess() && !st.IsSkip() {
		return refusal(st)
	}
	if n := s.Nodes[i]; !n.Ready {
		return "the node is not ready"
	}
	if st := f.fw.RunFilterPlugins(ctx, state, pod, ni); !st.IsSuccess() {
		return refusal(st)
	}
	return ""
}
