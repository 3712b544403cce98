package capacity

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestPlace(t *testing.T) {
	const gpu = corev1.ResourceName("example.com/gpu")
	tests := []struct {
		name  string
		nodes []*corev1.Node
		bound []*corev1.Pod
		pods  []*corev1.Pod
		// wantPerNode is how many pods land on each node; nodes not named get none.
		wantPerNode map[string]int
		wantShort   []string // substrings of Result.Short
	}{
		{
			name:        "cpu fits: packs the fullest node first",
			nodes:       []*corev1.Node{node("a", "32", "64Gi"), node("b", "32", "64Gi")},
			bound:       []*corev1.Pod{pod("x", "12", onNode("b"))},
			pods:        pods("p", 2, "10"),
			wantPerNode: map[string]int{"b": 2},
		},
		{
			name:        "cpu short: 8 pods of 10 cpu on 4 nodes of 32 fit 3 per node",
			nodes:       []*corev1.Node{node("a", "32", "64Gi"), node("b", "32", "64Gi"), node("c", "32", "64Gi"), node("d", "32", "64Gi")},
			bound:       []*corev1.Pod{pod("x1", "10", onNode("a")), pod("x2", "10", onNode("b")), pod("x3", "10", onNode("c")), pod("x4", "30", onNode("d"))},
			pods:        pods("p", 8, "10"),
			wantPerNode: map[string]int{"a": 2, "b": 2, "c": 2},
			wantShort:   []string{"8 pods requesting cpu 10 each, 6 fit", "4 of 4 nodes refuse the rest: 4 Insufficient cpu (NodeResourcesFit)"},
		},
		{
			name:        "init container larger than the app containers counts",
			nodes:       []*corev1.Node{node("a", "4", "8Gi")},
			pods:        pods("p", 2, "1", withInit("3", false)),
			wantPerNode: map[string]int{"a": 1},
			wantShort:   []string{"requesting cpu 3 each"},
		},
		{
			name:        "sidecar init container adds to the app containers",
			nodes:       []*corev1.Node{node("a", "4", "8Gi")},
			pods:        pods("p", 2, "1", withInit("1", true)),
			wantPerNode: map[string]int{"a": 2},
		},
		{
			name:        "overhead counts",
			nodes:       []*corev1.Node{node("a", "4", "8Gi")},
			pods:        pods("p", 2, "1500m", withOverhead("1")),
			wantPerNode: map[string]int{"a": 1},
			wantShort:   []string{"cpu 2500m"},
		},
		{
			name:        "memory short",
			nodes:       []*corev1.Node{node("a", "32", "4Gi")},
			pods:        pods("p", 3, "1", withMemory("2Gi")),
			wantPerNode: map[string]int{"a": 2},
			wantShort:   []string{"Insufficient memory (NodeResourcesFit)"},
		},
		{
			name:        "extended resource the node lacks",
			nodes:       []*corev1.Node{node("a", "32", "64Gi"), node("b", "32", "64Gi", withAllocatable(gpu, "2"))},
			pods:        pods("p", 3, "1", withRequest(gpu, "1")),
			wantPerNode: map[string]int{"b": 2},
			wantShort:   []string{"Insufficient example.com/gpu (NodeResourcesFit)"},
		},
		{
			name:        "pod count",
			nodes:       []*corev1.Node{node("a", "32", "64Gi", withMaxPods("3"))},
			bound:       []*corev1.Pod{pod("x", "0", onNode("a"))},
			pods:        pods("p", 3, "0"),
			wantPerNode: map[string]int{"a": 2},
			wantShort:   []string{"Too many pods (NodeResourcesFit)"},
		},
		{
			name:        "NoSchedule and NoExecute taints exclude, PreferNoSchedule does not",
			nodes:       []*corev1.Node{node("a", "8", "8Gi", withTaint("t", corev1.TaintEffectNoSchedule)), node("b", "8", "8Gi", withTaint("t", corev1.TaintEffectNoExecute)), node("c", "1", "8Gi", withTaint("t", corev1.TaintEffectPreferNoSchedule))},
			pods:        pods("p", 2, "1"),
			wantPerNode: map[string]int{"c": 1},
			wantShort:   []string{"2 node(s) had untolerated taint(s) (TaintToleration)"},
		},
		{
			name:        "tolerated taint",
			nodes:       []*corev1.Node{node("a", "8", "8Gi", withTaint("t", corev1.TaintEffectNoSchedule))},
			pods:        pods("p", 2, "1", withToleration("t")),
			wantPerNode: map[string]int{"a": 2},
		},
		{
			name:        "nodeSelector",
			nodes:       []*corev1.Node{node("a", "8", "8Gi"), node("b", "8", "8Gi", withLabel("pool", "gpu"))},
			pods:        pods("p", 2, "1", withNodeSelector("pool", "gpu")),
			wantPerNode: map[string]int{"b": 2},
		},
		{
			name:        "required node affinity",
			nodes:       []*corev1.Node{node("a", "8", "8Gi", withLabel("zone", "z1")), node("b", "8", "8Gi", withLabel("zone", "z2")), node("c", "8", "8Gi")},
			pods:        pods("p", 3, "4", withAffinityIn("zone", "z2")),
			wantPerNode: map[string]int{"b": 2},
			wantShort:   []string{"2 node(s) didn't match Pod's node affinity/selector (NodeAffinity)"},
		},
		{
			name:        "unschedulable and NotReady nodes are excluded",
			nodes:       []*corev1.Node{node("a", "8", "8Gi", unschedulable), node("b", "8", "8Gi", notReady), node("c", "8", "8Gi")},
			pods:        pods("p", 3, "4"),
			wantPerNode: map[string]int{"c": 2},
			wantShort:   []string{"1 node(s) were unschedulable (NodeUnschedulable), 1 not ready"},
		},
		{
			name:        "shapes: larger pods first, each on the fullest node it fits",
			nodes:       []*corev1.Node{node("a", "8", "8Gi"), node("b", "4", "8Gi")},
			pods:        append(pods("small", 4, "1"), pods("big", 2, "4")...),
			wantPerNode: map[string]int{"a": 5, "b": 1},
		},
		{
			name:        "no node at all",
			pods:        pods("p", 1, "1"),
			wantPerNode: map[string]int{},
			wantShort:   []string{"the cluster has no nodes"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := snapshotOf(tc.nodes, tc.bound...)
			res := s.Place(tc.pods)
			if diff := cmp.Diff(tc.wantPerNode, perNode(res)); diff != "" {
				t.Errorf("pods per node (-want +got):\n%s", diff)
			}
			placed := 0
			for _, n := range tc.wantPerNode {
				placed += n
			}
			if res.Unplaced != len(tc.pods)-placed {
				t.Errorf("Unplaced = %d, want %d", res.Unplaced, len(tc.pods)-placed)
			}
			if len(tc.wantShort) == 0 && res.Short != "" {
				t.Errorf("Short = %q, want none", res.Short)
			}
			for _, want := range tc.wantShort {
				if !strings.Contains(res.Short, want) {
					t.Errorf("Short = %q, want it to contain %q", res.Short, want)
				}
			}
		})
	}
}

func TestPlaceDoesNotChangeSnapshotUntilCommit(t *testing.T) {
	s := snapshotOf([]*corev1.Node{node("a", "4", "8Gi")})
	first := s.Place(pods("p", 4, "1"))
	if len(first.Assignments) != 4 {
		t.Fatalf("placed %d, want 4", len(first.Assignments))
	}
	if again := s.Place(pods("q", 4, "1")); len(again.Assignments) != 4 {
		t.Fatalf("before Commit placed %d, want 4: Place must not change the snapshot", len(again.Assignments))
	}
	s.Commit(first)
	if after := s.Place(pods("q", 1, "1")); len(after.Assignments) != 0 {
		t.Fatalf("after Commit placed %d, want 0", len(after.Assignments))
	}
}
