package capacity

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// TestFollowedStatesPlaceAsPreFilter: placing a shape's pods with the
// PreFilter state followed from pod to pod (follow.go) puts every pod where
// a PreFilter of its own would: random gangs with one-per-node and
// one-per-zone anti-affinity, pod affinity, host ports and spread, of pods
// that differ or agree in the labels the terms read, beside running pods
// with anti-affinity of their own.
func TestFollowedStatesPlaceAsPreFilter(t *testing.T) {
	defer func() { followStates = true }()
	for seed := uint64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewPCG(seed, 11))
		var nodes []*corev1.Node
		for i := range 6 + rng.IntN(6) {
			nodes = append(nodes, node(fmt.Sprintf("n%d", i), fmt.Sprint(4+4*rng.IntN(3)), "64Gi", withLabel("zone", fmt.Sprintf("z%d", i%3))))
		}
		var bound []*corev1.Pod
		for i := range rng.IntN(8) {
			opts := []podOpt{onNode(nodes[rng.IntN(len(nodes))].Name), withLabels("app", []string{"web", "db", "train"}[rng.IntN(3)])}
			if rng.IntN(2) == 0 {
				opts = append(opts, antiAffinity("app", []string{"train", "web"}[rng.IntN(2)], []string{corev1.LabelHostname, "zone"}[rng.IntN(2)]))
			}
			bound = append(bound, pod(fmt.Sprintf("u%d", i), "1", opts...))
		}
		var gang []*corev1.Pod
		kind := rng.IntN(5)
		for i := range 2 + rng.IntN(8) {
			opts := []podOpt{withLabels("app", "train")}
			if rng.IntN(3) == 0 {
				opts = append(opts, withLabels("index", fmt.Sprint(i)))
			}
			if rng.IntN(4) == 0 {
				opts = append(opts, withLabels("app", "web"))
			}
			switch kind {
			case 0:
				opts = append(opts, antiAffinity("app", "train", corev1.LabelHostname))
			case 1:
				opts = append(opts, antiAffinity("app", "train", "zone"))
			case 2:
				opts = append(opts, podAffinity("app", "train", "zone"))
			case 3:
				opts = append(opts, withHostPort(9000))
			case 4:
				opts = append(opts, spread("app", "train", "zone"))
			}
			gang = append(gang, pod(fmt.Sprintf("g-%d", i), fmt.Sprint(1+rng.IntN(3)), opts...))
		}
		placeWith := func(follow bool) (map[string]string, string) {
			followStates = follow
			s := trackerOf(nodes, bound...).Snapshot(defaultFilters())
			defer s.Close()
			res := s.Place(gang)
			defer s.Discard(res)
			return placedOn(res), res.Short
		}
		want, wantShort := placeWith(false)
		got, gotShort := placeWith(true)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("seed %d (kind %d): placements with followed states differ from a PreFilter per pod (-want +got):\n%s", seed, kind, diff)
		}
		if gotShort != wantShort {
			t.Errorf("seed %d (kind %d): message %q, with a PreFilter per pod %q", seed, kind, gotShort, wantShort)
		}
	}
}
