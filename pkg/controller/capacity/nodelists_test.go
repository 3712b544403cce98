package capacity

import (
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	schedfw "k8s.io/kubernetes/pkg/scheduler/framework"
)

// TestNodeListsFollowChanges: the lister's node lists, kept up to date
// node by node, are at every step what building them afresh gives, through
// placements committed and discarded, parts of a gang placed and given
// back, and victims taken off and put back.
func TestNodeListsFollowChanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 35))
	var nodes []*corev1.Node
	var bound []*corev1.Pod
	for i := range 40 {
		name := fmt.Sprintf("n%02d", i)
		nodes = append(nodes, node(name, "16", "64Gi", withLabel(rackKey, fmt.Sprintf("r%d", i/10))))
		if i%3 == 0 {
			bound = append(bound, pod(fmt.Sprintf("u%d", i), "1", onNode(name), antiAffinity("app", "x", corev1.LabelHostname)))
		}
	}
	tr := trackerRunning(nodes, []running{{key: "low", priority: 1, nodes: []string{"n01", "n05", "n09"}, cpu: "2"}}, bound...)
	s := tr.Snapshot(defaultFilters())
	defer s.Close()
	lister := nodeInfoLister{s.filters.lister}
	s.use(t.Context())
	check := func(step string) {
		t.Helper()
		for k, get := range []func() ([]fwk.NodeInfo, error){lister.List, lister.HavePodsWithAffinityList,
			lister.HavePodsWithRequiredAntiAffinityList, lister.HavePodsWithRequiredNonHostScopedAntiAffinityList} {
			got, err := get()
			if err != nil {
				t.Fatal(err)
			}
			var want []fwk.NodeInfo
			for i := range s.infos {
				if ni := s.info(i); listKeeps[k](ni) {
					want = append(want, ni)
				}
			}
			if len(got) != len(want) {
				t.Fatalf("%s: list %d has %d nodes, want %d", step, k, len(got), len(want))
			}
			for j := range want {
				if got[j].(*schedfw.NodeInfo) != want[j].(*schedfw.NodeInfo) {
					t.Fatalf("%s: list %d entry %d is node %s as it was, not as it is", step, k, j, want[j].Node().Name)
				}
			}
		}
	}
	check("start")
	for step := range 60 {
		var opts []podOpt
		switch rng.IntN(3) {
		case 0:
			opts = append(opts, antiAffinity("app", "y", corev1.LabelHostname))
		case 1:
			opts = append(opts, antiAffinity("app", "z", rackKey))
		}
		gang := pods(fmt.Sprintf("g%d", step), 1+rng.IntN(6), "1", opts...)
		var res Result
		switch rng.IntN(3) {
		case 0:
			res = s.Place(gang)
		case 1:
			res = s.PlaceGang(gang, nil, required(rackKey), len(gang))
		default:
			res = s.PlaceGang(gang, nil, &Topology{SliceKey: rackKey, SliceSize: 2}, len(gang))
		}
		check(fmt.Sprintf("step %d placed", step))
		if rng.IntN(2) == 0 {
			s.Commit(res)
		} else {
			s.Discard(res)
		}
		check(fmt.Sprintf("step %d committed or discarded", step))
		if step%10 == 5 {
			undo := s.evict(tr.Victims(false).Eligible)
			check(fmt.Sprintf("step %d victims off", step))
			undo()
			check(fmt.Sprintf("step %d victims back", step))
		}
	}
}
