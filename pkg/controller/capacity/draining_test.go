package capacity

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func preemptNever(p *corev1.Pod) {
	never := corev1.PreemptNever
	p.Spec.PreemptionPolicy = &never
}

// TestDrainingNodes: on a node where fast release counts pods being deleted
// as gone, a pod is placed only where kube-scheduler, which still counts
// them, has no pod to preempt for it and no pending pod that would preempt
// it; elsewhere, and among pods of one priority, fast release is unchanged.
func TestDrainingNodes(t *testing.T) {
	// Node a: 4 CPUs, 3 of them held by a pod being deleted. Node b is full.
	nodes := []*corev1.Node{node("a", "4", "8Gi"), node("b", "4", "8Gi")}
	draining := pod("old", "3", onNode("a"), withPriority(500), deleting)
	fullB := pod("busy", "4", onNode("b"), withPriority(5000))
	tests := []struct {
		name     string
		beside   []*corev1.Pod // unmanaged pods bound to a, besides draining
		held     *corev1.Pod   // a managed pod released and pinned to a, not bound
		noDrain  bool          // the old pod is not being deleted but gone
		evict    *corev1.Pod   // a bound victim that a recorded preemption takes off a
		ignore   bool
		gang     *corev1.Pod
		wantNode string
	}{
		{name: "a running pod of lower priority beside the draining one: refused, kube-scheduler would preempt it",
			beside: []*corev1.Pod{pod("low", "1", onNode("a"), withPriority(100))},
			gang:   pod("g", "3", withPriority(1000))},
		{name: "the gang never preempts: placed",
			beside: []*corev1.Pod{pod("low", "1", onNode("a"), withPriority(100))},
			gang:   pod("g", "3", withPriority(1000), preemptNever), wantNode: "a"},
		{name: "beside a pod of the same priority: placed",
			beside: []*corev1.Pod{pod("peer", "1", onNode("a"), withPriority(1000))},
			gang:   pod("g", "3", withPriority(1000)), wantNode: "a"},
		{name: "beside a bound pod of higher priority: placed",
			beside: []*corev1.Pod{pod("high", "1", onNode("a"), withPriority(2000))},
			gang:   pod("g", "3", withPriority(1000)), wantNode: "a"},
		{name: "a pending pod of higher priority pinned there would preempt it: refused",
			held: pod("pending", "1", withPriority(2000), pinnedTo("a")),
			gang: pod("g", "3", withPriority(1000))},
		{name: "a pending pod of higher priority that never preempts: placed",
			held: pod("pending", "1", withPriority(2000), pinnedTo("a"), preemptNever),
			gang: pod("g", "3", withPriority(1000)), wantNode: "a"},
		{name: "nothing drains: the rule is off",
			beside:  []*corev1.Pod{pod("low", "1", onNode("a"), withPriority(100))},
			noDrain: true,
			gang:    pod("g", "3", withPriority(1000)), wantNode: "a"},
		{name: "a victim taken off the node but not yet deleted counts as draining: refused",
			noDrain: true, evict: pod("victim", "3", onNode("a"), withPriority(100)),
			gang: pod("g", "3", withPriority(1000))},
		{name: "a released victim not yet seen bound counts as draining: refused",
			noDrain: true, evict: pod("victim", "3", pinnedTo("a"), withPriority(100)),
			gang: pod("g", "3", withPriority(1000))},
		{name: "a victim taken off: a pod that kube-scheduler would not preempt it for is placed",
			noDrain: true, evict: pod("victim", "3", onNode("a"), withPriority(100)),
			gang: pod("g", "3", withPriority(100)), wantNode: "a"},
		{name: "a recorded preemption holding its room ignores the rule",
			beside: []*corev1.Pod{pod("low", "1", onNode("a"), withPriority(100))},
			ignore: true,
			gang:   pod("g", "3", withPriority(1000)), wantNode: "a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bound := append([]*corev1.Pod{fullB}, tc.beside...)
			if !tc.noDrain {
				bound = append(bound, draining)
			}
			if tc.evict != nil && tc.evict.Spec.NodeName != "" {
				bound = append(bound, tc.evict)
			}
			tr := trackerOf(nodes, bound...)
			if tc.held != nil {
				tr.SetManagedPod(gk("ns/held"), tc.held, false)
			}
			if tc.evict != nil && tc.evict.Spec.NodeName == "" {
				tr.SetManagedPod(gk("ns/victim"), tc.evict, false) // released, pinned, not seen bound
			}
			s := tr.Snapshot(defaultFilters())
			defer s.Close()
			if tc.evict != nil {
				s.evict([]*Victim{{Key: "ns/victim", holdings: []held{{node: "a", pod: tc.evict}}}})
			}
			s.ignoreDraining = tc.ignore
			res := s.Place([]*corev1.Pod{tc.gang})
			defer s.Discard(res)
			got := placedOn(res)[tc.gang.Name]
			if got != tc.wantNode {
				t.Fatalf("placed on %q, want %q (%s)", got, tc.wantNode, res.Short)
			}
			if got == "" && !strings.Contains(res.Short, drainRefusal) {
				t.Errorf("refusal %q does not say why: %q", res.Short, drainRefusal)
			}
		})
	}
}

// TestTrackerDraining: a node drains while a pod bound to it is being
// deleted, until the pod finishes or is gone, managed or not; without fast
// release nothing drains.
func TestTrackerDraining(t *testing.T) {
	type step func(tr *Tracker)
	un := func(p *corev1.Pod) step { return func(tr *Tracker) { tr.SetUnmanagedPod(p) } }
	managed := func(p *corev1.Pod) step { return func(tr *Tracker) { tr.SetManagedPod(gk("ns/g"), p, false) } }
	tests := []struct {
		name        string
		slowRelease bool
		steps       []step
		want        map[string]int
	}{
		{name: "an unmanaged pod being deleted drains its node",
			steps: []step{un(pod("u", "1", onNode("a"), deleting))}, want: map[string]int{"a": 1}},
		{name: "until it finishes",
			steps: []step{un(pod("u", "1", onNode("a"), deleting)), un(pod("u", "1", onNode("a"), deleting, phase(corev1.PodFailed)))},
			want:  map[string]int{}},
		{name: "or is gone",
			steps: []step{un(pod("u", "1", onNode("a"), deleting)), func(tr *Tracker) { tr.RemoveUnmanagedPod("uid-u") }},
			want:  map[string]int{}},
		{name: "a relist keeps what drains",
			steps: []step{un(pod("u", "1", onNode("a"), deleting)), func(tr *Tracker) {
				tr.ReplaceUnmanagedPods([]*corev1.Pod{pod("v", "1", onNode("b"), deleting), pod("w", "1", onNode("b"))})
			}},
			want: map[string]int{"b": 1}},
		{name: "a managed pod drains too, and is counted once",
			steps: []step{managed(pod("m", "1", onNode("a"), deleting)), managed(pod("m", "1", onNode("a"), deleting)),
				un(pod("u", "1", onNode("a"), deleting))},
			want: map[string]int{"a": 2}},
		{name: "a managed pod removed drains nothing",
			steps: []step{managed(pod("m", "1", onNode("a"), deleting)), func(tr *Tracker) { tr.RemoveManagedPod("uid-m") }},
			want:  map[string]int{}},
		{name: "a released pod being deleted before it was seen bound drains its pinned node: kube-scheduler may have bound it",
			steps: []step{managed(pod("m", "1", pinnedTo("a"), deleting))}, want: map[string]int{"a": 1}},
		{name: "a gated pod being deleted drains nothing",
			steps: []step{func(tr *Tracker) { tr.SetManagedPod(gk("ns/g"), pod("m", "1", deleting), true) }}, want: map[string]int{}},
		{name: "without fast release nothing drains: the pod still holds its node",
			slowRelease: true, steps: []step{un(pod("u", "1", onNode("a"), deleting))}, want: map[string]int{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTracker(!tc.slowRelease)
			tr.SetNode(node("a", "4", "8Gi"))
			tr.SetNode(node("b", "4", "8Gi"))
			for _, s := range tc.steps {
				s(tr)
			}
			if diff := cmp.Diff(tc.want, tr.draining); diff != "" {
				t.Errorf("draining (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEvictUndo: undoing an eviction puts back what kube-scheduler still
// counts, whether or not the victim's pods were bound.
func TestEvictUndo(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
	}{
		{"a bound victim", pod("v", "1", onNode("a"))},
		{"a victim released and pinned, not bound", pod("v", "1", pinnedTo("a"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := trackerOf([]*corev1.Node{node("a", "4", "8Gi")})
			tr.SetManagedPod(gk("ns/v"), tc.pod, false)
			s := tr.Snapshot(defaultFilters())
			defer s.Close()
			v := &Victim{Key: "ns/v", holdings: []held{{node: "a", pod: tc.pod}}}
			undo := s.evict([]*Victim{v})
			// A released pod not seen bound yet may be bound already:
			// kube-scheduler counts both until they are deleted.
			if got := len(s.evicted[0]); got != 1 {
				t.Errorf("evicted %d pods kube-scheduler still counts, want 1", got)
			}
			undo()
			if len(s.evicted) != 0 {
				t.Errorf("after undo, evicted = %v", s.evicted)
			}
			if got := s.infos[0].Requested.MilliCPU; got != 1000 {
				t.Errorf("after undo node a holds %dm, want 1000m", got)
			}
		})
	}
}
