package capacity

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

const (
	blockKey = "example.com/block"
	rackKey  = "example.com/rack"
)

// racks is a cluster of blocks, each of racksPerBlock racks of
// hostsPerRack nodes of cpu each, named b1-r1-h1 and labelled with their
// block, rack and host.
func racks(blocks, racksPerBlock, hostsPerRack int, cpu string) []*corev1.Node {
	var out []*corev1.Node
	for b := 1; b <= blocks; b++ {
		for r := 1; r <= racksPerBlock; r++ {
			for h := 1; h <= hostsPerRack; h++ {
				name := fmt.Sprintf("b%d-r%d-h%d", b, r, h)
				out = append(out, node(name, cpu, "64Gi",
					withLabel(blockKey, fmt.Sprintf("b%d", b)), withLabel(rackKey, fmt.Sprintf("b%d-r%d", b, r))))
			}
		}
	}
	return out
}

// domainsOf is the sorted set of values of key over the nodes r placed
// pods and copies on.
func domainsOf(r Result, key string) []string {
	seen := map[string]bool{}
	add := func(node string) {
		// Node names are b<block>-r<rack>-h<host>.
		parts := strings.Split(node, "-")
		switch key {
		case blockKey:
			seen[parts[0]] = true
		case rackKey:
			seen[parts[0]+"-"+parts[1]] = true
		default:
			seen[node] = true
		}
	}
	for _, a := range r.Assignments {
		add(a.Node)
	}
	for _, c := range r.Copies {
		add(c.Node)
	}
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

func required(key string) *Topology { return &Topology{Levels: []string{key}, Required: true} }

func TestPlaceGangTopology(t *testing.T) {
	// 2 blocks of 2 racks of 2 hosts of 4 cpu: a rack holds 8 pods of 1
	// cpu, a block 16.
	cluster := racks(2, 2, 2, "4")
	tests := []struct {
		name   string
		nodes  []*corev1.Node
		bound  []*corev1.Pod
		pods   []*corev1.Pod
		copies []Copies
		topo   *Topology
		need   int // 0: all pods and copies
		// wantDomains are the values of wantKey the placement used; nil:
		// nothing placed.
		wantKey     string
		wantDomains []string
		wantDomain  *Domain
		wantShort   string // a substring of Short
	}{
		{
			name: "required rack: the gang is placed in one rack",
			pods: pods("p", 6, "1"), topo: required(rackKey),
			wantKey: rackKey, wantDomains: []string{"b1-r1"}, wantDomain: &Domain{rackKey, "b1-r1"},
		},
		{
			name: "required rack: a gang larger than every rack places nothing and says which rack comes closest",
			pods: pods("p", 10, "1"), topo: required(rackKey),
			wantShort: "needs 10 pods in one rack (example.com/rack); the best rack, b1-r1, fits 8",
		},
		{
			name:  "required rack: best fit takes the rack with the least room left",
			bound: []*corev1.Pod{pod("x", "3", onNode("b2-r2-h1")), pod("y", "3", onNode("b2-r2-h2"))},
			pods:  pods("p", 2, "1"), topo: required(rackKey),
			wantKey: rackKey, wantDomains: []string{"b2-r2"},
		},
		{
			name:  "required rack: a rack whose free cpu is split so that no node takes a pod is passed over",
			bound: []*corev1.Pod{pod("x", "3", onNode("b1-r1-h1")), pod("y", "3", onNode("b1-r1-h2"))},
			pods:  pods("p", 2, "2"), topo: required(rackKey),
			wantKey: rackKey, wantDomains: []string{"b1-r2"},
		},
		{
			name: "required block: 12 pods span the racks of one block",
			pods: pods("p", 12, "1"), topo: required(blockKey),
			wantKey: blockKey, wantDomains: []string{"b1"}, wantDomain: &Domain{blockKey, "b1"},
		},
		{
			name: "preferred rack falls back to the required block",
			pods: pods("p", 12, "1"), topo: &Topology{Levels: []string{rackKey, blockKey}, Required: true},
			wantKey: blockKey, wantDomains: []string{"b1"}, wantDomain: &Domain{blockKey, "b1"},
		},
		{
			name: "preferred rack is taken when a rack has room",
			pods: pods("p", 8, "1"), topo: &Topology{Levels: []string{rackKey, blockKey}, Required: true},
			wantKey: rackKey, wantDomains: []string{"b1-r1"}, wantDomain: &Domain{rackKey, "b1-r1"},
		},
		{
			name: "preferred rack alone falls back to anywhere",
			pods: pods("p", 20, "1"), topo: &Topology{Levels: []string{rackKey}},
			wantKey: blockKey, wantDomains: []string{"b1", "b2"},
		},
		{
			name: "slices of 4 per rack within one block",
			pods: pods("p", 16, "1", withMemory("1Gi")), topo: &Topology{Levels: []string{blockKey}, Required: true, SliceKey: rackKey, SliceSize: 4},
			wantKey: blockKey, wantDomains: []string{"b1"}, wantDomain: &Domain{blockKey, "b1"},
		},
		{
			name:      "a slice larger than any rack places nothing",
			nodes:     racks(2, 2, 1, "4"),
			pods:      pods("p", 8, "1"),
			topo:      &Topology{Levels: []string{blockKey}, Required: true, SliceKey: rackKey, SliceSize: 5},
			wantShort: "needs 8 pods in one block (example.com/block); the best block, b1, fits 4: slice 1 of 2: needs 5 pods in one rack (example.com/rack); the best rack, b1-r1, fits 4",
		},
		{
			name: "copies of a role created later are sliced after the pods",
			pods: pods("p", 2, "1"), copies: []Copies{{Name: "w", Template: pod("w", "1"), Count: 6}},
			topo:    &Topology{Levels: []string{blockKey}, Required: true, SliceKey: rackKey, SliceSize: 4},
			wantKey: blockKey, wantDomains: []string{"b1"},
		},
		{
			name: "a role in one rack, the rest anywhere in the block",
			pods: append(pods("w", 8, "1", withPodLabel(scheduling.RoleLabel, "worker")), pods("d", 1, "3", withPodLabel(scheduling.RoleLabel, "driver"))...),
			topo: &Topology{Levels: []string{blockKey}, Required: true, Roles: map[string]*Topology{"worker": required(rackKey)}},
			// The workers fill rack b1-r1; the driver goes to the other rack.
			wantKey: rackKey, wantDomains: []string{"b1-r1", "b1-r2"}, wantDomain: &Domain{blockKey, "b1"},
		},
		{
			name:  "an admitted group's joiners go in its domain, even when another has more room",
			bound: []*corev1.Pod{pod("x", "3", onNode("b2-r2-h1"))},
			pods:  pods("p", 2, "1"), topo: &Topology{In: &Domain{rackKey, "b2-r2"}}, need: -1,
			wantKey: rackKey, wantDomains: []string{"b2-r2"},
		},
		{
			name:  "nodes without the label are in no domain",
			nodes: []*corev1.Node{node("plain", "64", "64Gi"), node("racked", "4", "64Gi", withLabel(rackKey, "r1"))},
			pods:  pods("p", 4, "1"), topo: required(rackKey),
			wantKey: "", wantDomains: []string{"racked"},
		},
		{
			name:      "no node has the label",
			nodes:     []*corev1.Node{node("plain", "64", "64Gi")},
			pods:      pods("p", 4, "1"),
			topo:      required(rackKey),
			wantShort: "needs 4 pods in one rack (example.com/rack), and no ready node has that label",
		},
		{
			name:  "a node that is not ready is in no domain",
			nodes: []*corev1.Node{node("a", "4", "64Gi", withLabel(rackKey, "r1")), node("b", "4", "64Gi", withLabel(rackKey, "r1"), notReady)},
			pods:  pods("p", 6, "1"), topo: required(rackKey),
			wantShort: "the best rack, r1, fits 4",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nodes := tc.nodes
			if nodes == nil {
				nodes = cluster
			}
			s := snapshotOf(nodes, tc.bound...)
			need := tc.need
			switch {
			case need == 0:
				need = size(tc.pods, tc.copies)
			case need < 0:
				need = 0
			}
			res := s.PlaceGang(tc.pods, tc.copies, tc.topo, need)
			if tc.wantDomains == nil {
				if res.Placed() != 0 || res.Short == "" {
					t.Fatalf("placed %d, short %q: want nothing placed, and why", res.Placed(), res.Short)
				}
			} else if res.Placed() != size(tc.pods, tc.copies) {
				t.Fatalf("placed %d of %d: %s", res.Placed(), size(tc.pods, tc.copies), res.Short)
			}
			if tc.wantDomains != nil {
				if diff := cmp.Diff(tc.wantDomains, domainsOf(res, tc.wantKey)); diff != "" {
					t.Errorf("domains of %s (-want +got):\n%s", tc.wantKey, diff)
				}
			}
			if tc.wantDomain != nil {
				if diff := cmp.Diff(tc.wantDomain, res.Domain); diff != "" {
					t.Errorf("Domain (-want +got):\n%s", diff)
				}
			}
			if !strings.Contains(res.Short, tc.wantShort) {
				t.Errorf("Short = %q, want it to contain %q", res.Short, tc.wantShort)
			}
			if tc.topo.SliceSize > 0 && res.Placed() > 0 {
				checkSlices(t, res, tc.topo.SliceSize)
			}
			// Nothing placed stays in the snapshot until committed.
			s.Discard(res)
			if again := s.PlaceGang(tc.pods, tc.copies, tc.topo, need); again.Placed() != res.Placed() {
				t.Errorf("placing again after Discard placed %d, first %d: the snapshot changed", again.Placed(), res.Placed())
			}
		})
	}
}

// checkSlices checks that every size pods, in order of name, share a rack.
func checkSlices(t *testing.T, r Result, size int) {
	t.Helper()
	type placed struct{ name, rack string }
	var all []placed
	for _, a := range r.Assignments {
		all = append(all, placed{a.Pod.Name, a.Node[:strings.LastIndex(a.Node, "-")]})
	}
	sort.Slice(all, func(i, j int) bool { return naturalLess(all[i].name, all[j].name) })
	for i := 0; i < len(all); i += size {
		for _, p := range all[i:min(i+size, len(all))] {
			if p.rack != all[i].rack {
				t.Errorf("slice from %s: %s is in rack %s, %s in %s", all[i].name, p.name, p.rack, all[i].name, all[i].rack)
			}
		}
	}
}

// TestTopologyBestFitKeepsRacksWhole: two gangs that first fit would
// fragment (the small one taking the roomier rack) both fit under best fit.
func TestTopologyBestFitKeepsRacksWhole(t *testing.T) {
	// Rack b1-r1 has 8 cpu free, b1-r2 has 4 (its nodes half full).
	nodes := racks(1, 2, 2, "4")
	bound := []*corev1.Pod{pod("x", "2", onNode("b1-r2-h1")), pod("y", "2", onNode("b1-r2-h2"))}
	tr := trackerOf(nodes, bound...)
	cands := []Candidate{
		{Key: gk("small"), Created: t0, Pods: pods("s", 4, "1"), Need: 4, Topology: required(rackKey)},
		{Key: gk("large"), Created: t0.Add(time.Second), Pods: pods("l", 8, "1"), Need: 8, Topology: required(rackKey)},
	}
	got := map[string]string{}
	for _, v := range Admit(tr.Snapshot(defaultFilters()), cands, Options{Strategy: BestEffortFIFO}) {
		if !v.Admit {
			t.Fatalf("%s waits: %s", v.Key, v.Message)
		}
		got[v.Key.String()] = v.Domain.Value
	}
	if diff := cmp.Diff(map[string]string{"small": "b1-r2", "large": "b1-r1"}, got); diff != "" {
		t.Errorf("racks (-want +got):\n%s", diff)
	}
}

// TestTopologyWaitMessage: a gang that no rack holds waits whole, and its
// verdict says how close the best rack comes.
func TestTopologyWaitMessage(t *testing.T) {
	tr := trackerOf(racks(1, 2, 2, "4"), pod("x", "2", onNode("b1-r1-h1")), pod("y", "1", onNode("b1-r2-h1")))
	c := Candidate{Key: gk("g"), Created: t0, Pods: pods("g", 8, "1"), Need: 8, Topology: required(rackKey)}
	v := Admit(tr.Snapshot(defaultFilters()), []Candidate{c}, Options{Strategy: BestEffortFIFO})
	if len(v) != 1 || v[0].Admit || v[0].Cause != CauseNoRoom {
		t.Fatalf("verdicts %+v: want the gang to wait for room", v)
	}
	want := "needs 8 pods in one rack (example.com/rack); the best rack, b1-r2, fits 7: 8 pods requesting cpu 1 each, 7 fit; 2 of 2 nodes refuse the rest"
	if !strings.HasPrefix(v[0].Message, want) {
		t.Errorf("message %q, want it to start with %q", v[0].Message, want)
	}
}

// TestTopologyPreemptsInOneRack: a gang that needs a whole rack preempts
// the gang that holds one rack, not bits of several.
func TestTopologyPreemptsInOneRack(t *testing.T) {
	nodes := racks(1, 2, 2, "4")
	tr := trackerRunning(nodes, []running{
		// Each rack is half taken by a low-priority gang of two pods.
		{key: "low-a", priority: 1, nodes: []string{"b1-r1-h1", "b1-r1-h2"}, cpu: "2"},
		{key: "low-b", priority: 1, since: 1, nodes: []string{"b1-r2-h1", "b1-r2-h2"}, cpu: "2"},
	})
	c := Candidate{Key: gk("high"), Priority: 10, Created: t0, Pods: pods("high", 8, "1", withPriority(10)), Need: 8, Preempt: true,
		Topology: required(rackKey)}
	v := Admit(tr.Snapshot(defaultFilters()), []Candidate{c}, Options{Strategy: BestEffortFIFO, Now: t0.Add(time.Hour),
		Victims: func() Pool { return tr.Victims(false) }})
	if len(v) != 1 || v[0].Cause != CausePreempting {
		t.Fatalf("verdicts %+v: want a preemption", v)
	}
	var victims []string
	for _, vic := range v[0].Victims {
		victims = append(victims, vic.Key)
	}
	// Either rack would do; the most recently admitted victim is preferred.
	if diff := cmp.Diff([]string{"low-b"}, victims); diff != "" {
		t.Errorf("victims (-want +got):\n%s", diff)
	}
	if v[0].Domain == nil || v[0].Domain.Value != "b1-r2" {
		t.Errorf("domain %+v, want rack b1-r2, the one its victim frees", v[0].Domain)
	}
}

func TestNaturalLess(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"g-2", "g-10", true},
		{"g-10", "g-2", false},
		{"g-1", "g-1", false},
		{"job-3-abcde", "job-12-aaaaa", true},
		{"g-02", "g-3", true},
		{"a", "b", true},
		{"g", "g-0", true},
		{"worker-9-x", "worker-9-y", true},
	} {
		if got := naturalLess(tc.a, tc.b); got != tc.want {
			t.Errorf("naturalLess(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestTopologyLevelsFollowNodes: the domains of a level are found once for
// the nodes as they are, and found again once a node joins, leaves, or
// changes its labels or readiness; a snapshot taken before keeps its own.
func TestTopologyLevelsFollowNodes(t *testing.T) {
	values := func(s *Snapshot) map[string]int {
		out := map[string]int{}
		for _, d := range s.level(rackKey) {
			out[d.value] = len(d.nodes)
		}
		return out
	}
	tr := trackerOf([]*corev1.Node{node("a", "4", "8Gi", withLabel(rackKey, "r1")), node("b", "4", "8Gi", withLabel(rackKey, "r1"))})
	before := tr.Snapshot(defaultFilters())
	if diff := cmp.Diff(map[string]int{"r1": 2}, values(before)); diff != "" {
		t.Fatalf("domains (-want +got):\n%s", diff)
	}
	steps := []struct {
		name   string
		change func()
		want   map[string]int
	}{
		{"a heartbeat changes nothing", func() { tr.SetNode(node("a", "4", "8Gi", withLabel(rackKey, "r1"))) }, map[string]int{"r1": 2}},
		{"a node moves to another rack", func() { tr.SetNode(node("b", "4", "8Gi", withLabel(rackKey, "r2"))) }, map[string]int{"r1": 1, "r2": 1}},
		{"a node joins", func() { tr.SetNode(node("c", "4", "8Gi", withLabel(rackKey, "r2"))) }, map[string]int{"r1": 1, "r2": 2}},
		{"a node is no longer ready", func() { tr.SetNode(node("c", "4", "8Gi", withLabel(rackKey, "r2"), notReady)) }, map[string]int{"r1": 1, "r2": 1}},
		{"a node leaves", func() { tr.RemoveNode("a") }, map[string]int{"r2": 1}},
	}
	for _, st := range steps {
		st.change()
		if diff := cmp.Diff(st.want, values(tr.Snapshot(defaultFilters()))); diff != "" {
			t.Errorf("%s: domains (-want +got):\n%s", st.name, diff)
		}
	}
	if diff := cmp.Diff(map[string]int{"r1": 2}, values(before)); diff != "" {
		t.Errorf("the snapshot taken first: domains (-want +got):\n%s", diff)
	}
}

// TestTopologyDevices: DRA devices are placed jointly within the domain:
// a rack whose nodes have room by cpu but no devices is given back whole,
// and a gang whose devices exist only across racks waits.
func TestTopologyDevices(t *testing.T) {
	nodes := []*corev1.Node{
		node("a", "8", "64Gi", withLabel(rackKey, "r1")), node("b", "8", "64Gi", withLabel(rackKey, "r1")),
		// Rack r2 has the least cpu room, so best fit tries it first; it has
		// one device.
		node("c", "4", "64Gi", withLabel(rackKey, "r2")), node("d", "4", "64Gi", withLabel(rackKey, "r2")),
	}
	t.Run("the rack with the devices", func(t *testing.T) {
		f := filtersFor(t, append(append(draCluster(2, "a", "b"), draCluster(1, "c")[1:]...), claims("g", 4)...)...)
		v := Admit(trackerOf(nodes).Snapshot(f), []Candidate{{Key: gk("ns/g"), Pods: devicePods("g", "g", 4), Need: 4, Topology: required(rackKey)}},
			Options{Strategy: BestEffortFIFO})
		if len(v) != 1 || !v[0].Admit {
			t.Fatalf("verdicts %+v: want the gang admitted in rack r1", v)
		}
		if v[0].Domain == nil || v[0].Domain.Value != "r1" {
			t.Errorf("domain %+v, want r1", v[0].Domain)
		}
		for _, a := range v[0].Assignments {
			if a.Node != "a" && a.Node != "b" {
				t.Errorf("pod %s on node %s, outside rack r1", a.Pod.Name, a.Node)
			}
		}
	})
	t.Run("devices only across racks", func(t *testing.T) {
		f := filtersFor(t, append(append(draCluster(2, "a"), draCluster(2, "c")[1:]...), claims("g", 4)...)...)
		v := Admit(trackerOf(nodes).Snapshot(f), []Candidate{{Key: gk("ns/g"), Pods: devicePods("g", "g", 4), Need: 4, Topology: required(rackKey)}},
			Options{Strategy: BestEffortFIFO})
		if len(v) != 1 || v[0].Admit || len(v[0].Assignments) > 0 {
			t.Fatalf("verdicts %+v: want the gang waiting whole", v)
		}
		if !strings.Contains(v[0].Message, "needs 4 pods in one rack (example.com/rack); the best rack") || !strings.Contains(v[0].Message, "fits 2") {
			t.Errorf("message %q, want it to say that the best rack fits 2", v[0].Message)
		}
	})
}
