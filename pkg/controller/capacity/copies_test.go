package capacity

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// TestPlaceCopies: the copies of a template are placed as one shape with a
// count, by node, as far as they fit, and placement stops there.
func TestPlaceCopies(t *testing.T) {
	tests := []struct {
		name      string
		nodes     []*corev1.Node
		pods      []*corev1.Pod
		copies    Copies
		want      map[string]int // node: copies
		wantPods  int
		wantShort string
	}{
		{
			name:   "copies that fit are placed by node, the fullest first",
			nodes:  []*corev1.Node{node("a", "4", "8Gi"), node("b", "4", "8Gi")},
			copies: Copies{Name: "worker", Template: pod("tpl", "1"), Count: 6},
			want:   map[string]int{"a": 4, "b": 2},
		},
		{
			name:      "placement stops at what fits, whatever the count",
			nodes:     []*corev1.Node{node("a", "4", "8Gi"), node("b", "4", "8Gi")},
			copies:    Copies{Name: "worker", Template: pod("tpl", "1"), Count: 2_000_000},
			want:      map[string]int{"a": 4, "b": 4},
			wantShort: "2000000 pods requesting cpu 1 each, 8 fit (role worker, not yet created)",
		},
		{
			name:   "copies follow the template's node selection",
			nodes:  []*corev1.Node{node("a", "4", "8Gi"), node("b", "4", "8Gi", withLabel("pool", "gpu"))},
			copies: Copies{Name: "worker", Template: pod("tpl", "1", withNodeSelector("pool", "gpu")), Count: 3},
			want:   map[string]int{"b": 3},
		},
		{
			name:     "copies and the pods that exist share the nodes",
			nodes:    []*corev1.Node{node("a", "4", "8Gi"), node("b", "4", "8Gi")},
			pods:     pods("driver", 2, "3"),
			copies:   Copies{Name: "worker", Template: pod("tpl", "1"), Count: 2},
			want:     map[string]int{"a": 1, "b": 1},
			wantPods: 2,
		},
		{
			// The pods once joined the copies' shape and were never placed.
			name:     "pods of the same shape as the copies are placed too",
			nodes:    []*corev1.Node{node("a", "4", "8Gi")},
			pods:     pods("driver", 2, "1"),
			copies:   Copies{Name: "worker", Template: pod("tpl", "1"), Count: 2},
			want:     map[string]int{"a": 2},
			wantPods: 2,
		},
		{
			name:      "the node's pod limit bounds copies that request nothing",
			nodes:     []*corev1.Node{node("a", "4", "8Gi", withMaxPods("3"))},
			copies:    Copies{Name: "worker", Template: pod("tpl", "0"), Count: 1_000_000},
			want:      map[string]int{"a": 3},
			wantShort: "1000000 pods requesting",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := snapshotOf(tc.nodes)
			res := s.Place(tc.pods, tc.copies)
			defer s.Discard(res)
			got := map[string]int{}
			for _, c := range res.Copies {
				if c.Name != tc.copies.Name {
					t.Errorf("copies named %q, want %q", c.Name, tc.copies.Name)
				}
				got[c.Node] += c.Count
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("copies by node (-want +got):\n%s", diff)
			}
			if len(res.Assignments) != tc.wantPods {
				t.Errorf("placed %d pods, want %d", len(res.Assignments), tc.wantPods)
			}
			placed := 0
			for _, n := range tc.want {
				placed += n
			}
			if res.Placed() != placed+tc.wantPods || res.Unplaced != tc.copies.Count-placed {
				t.Errorf("placed %d, unplaced %d; want %d and %d", res.Placed(), res.Unplaced, placed+tc.wantPods, tc.copies.Count-placed)
			}
			if !strings.Contains(res.Short, tc.wantShort) {
				t.Errorf("short %q, want it to contain %q", res.Short, tc.wantShort)
			}
		})
	}
}
