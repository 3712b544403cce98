package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// The topology tests (issue 35): kwok nodes labelled with a block, a rack
// and their hostname; gangs that must, or would rather, share a rack or a
// block. Each test's racks are named after its namespace, so that no two
// tests share a domain.
const (
	blockLabel = "e2e.muster.dev/block"
	rackLabel  = "e2e.muster.dev/rack"
)

// rackNodes adds hosts nodes of cpu CPUs in rack <ns>-<rack> of block
// <ns>-<block>, and returns their names.
func rackNodes(t *testing.T, ctx context.Context, ns, block, rack string, hosts int, cpu string) []string {
	t.Helper()
	return placementNodes(t, ctx, ns, rack, hosts, cpu, map[string]string{blockLabel: ns + "-" + block, rackLabel: ns + "-" + rack})
}

// createTopologyGroup creates a gang of minCount with constraints.
func createTopologyGroup(t *testing.T, ctx context.Context, ns, name string, minCount int32, c *v1alpha1.PodGroupSchedulingConstraints) {
	t.Helper()
	pg := newGroupObject(ns, name, minCount)
	pg.Spec.SchedulingConstraints = c
	if _, err := muster.SchedulingV1alpha1().PodGroups(ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating PodGroup %s: %v", name, err)
	}
}

// createTopologyGang creates a gang of n pods of cpu CPUs each, running
// until deleted, whose PodGroup has constraints c.
func createTopologyGang(t *testing.T, ctx context.Context, ns, name string, n int, cpu string, c *v1alpha1.PodGroupSchedulingConstraints, mods ...func(*corev1.Pod)) {
	t.Helper()
	createTopologyGroup(t, ctx, ns, name, int32(n), c)
	createPods(t, ctx, gangPods(ns, name, n, cpu, "", mods...))
}

func requiredLevel(key string) *v1alpha1.PodGroupSchedulingConstraints {
	return &v1alpha1.PodGroupSchedulingConstraints{Topology: []v1alpha1.TopologyConstraint{{Key: key}}}
}

// domainsOf maps each of pods, by name, to the value of label key on the
// node it runs on.
func domainsOf(t *testing.T, ctx context.Context, pods []corev1.Pod, key string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range pods {
		n, err := kube.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("getting node %s of pod %s: %v", p.Spec.NodeName, p.Name, err)
		}
		out[p.Name] = n.Labels[key]
	}
	return out
}

// expectOneDomain wants every pod in the domain want of key, and the
// group's status to record it.
func expectOneDomain(t *testing.T, ctx context.Context, ns, group string, pods []corev1.Pod, key, want string) {
	t.Helper()
	for pod, got := range domainsOf(t, ctx, pods, key) {
		if got != want {
			t.Errorf("pod %s runs in %s %q, want %q", pod, key, got, want)
		}
	}
	pg, err := getGroup(ctx, ns, group)
	if err != nil {
		t.Fatalf("getting PodGroup %s: %v", group, err)
	}
	if d := pg.Status.TopologyDomain; d == nil || d.Key != key || d.Value != want {
		t.Errorf("status.topologyDomain %+v, want %s=%s", d, key, want)
	}
}

// TestTopologyRequiredRack: a gang that must share a rack waits whole while
// no rack has room for all of it, saying how close the best rack comes,
// and runs in one rack once one has room, never across racks.
func TestTopologyRequiredRack(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	ns := namespace(t, ctx)
	// Racks of 2 nodes of 4 CPUs: 8 pods of 1 CPU each.
	rackNodes(t, ctx, ns, "b1", "r1", 2, "4")
	rackNodes(t, ctx, ns, "b1", "r2", 2, "4")
	w := watchPlacement(t, ctx, ns)

	createTopologyGang(t, ctx, ns, "g", 10, "1", requiredLevel(rackLabel))
	// No rack could hold it even idle: it can never fit as the cluster
	// stands, though the two racks together have room for 16.
	pg := waitAdmitted(t, ctx, ns, "g", metav1.ConditionFalse, scheduling.ReasonExceedsClusterCapacity)
	want := fmt.Sprintf("can never fit: even on the idle cluster, it needs 10 pods in one rack (%s); the best rack, %s-r1, fits 8", rackLabel, ns)
	if msg := admittedCondition(pg).Message; !strings.Contains(msg, want) {
		t.Errorf("waiting message %q, want it to contain %q", msg, want)
	}
	if pg.Status.Gated != 10 {
		t.Fatalf("the gang waits with %d of its 10 pods gated, want all", pg.Status.Gated)
	}

	// A third node in rack r2 gives it room for 12: the gang goes there
	// whole.
	placementNodes(t, ctx, ns, "r2-third", 1, "4", map[string]string{blockLabel: ns + "-b1", rackLabel: ns + "-r2"})
	pods := expectRunningWhole(t, ctx, w, ns, "g", 10)
	expectOneDomain(t, ctx, ns, "g", pods, rackLabel, ns+"-r2")
}

// TestTopologyPreferredRackFallsBackToBlock: a gang that would rather share
// a rack, and must share a block, runs in one block across its racks when
// no rack has room; a smaller one gets a rack of its own.
func TestTopologyPreferredRackFallsBackToBlock(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	ns := namespace(t, ctx)
	for _, r := range []struct{ block, rack string }{{"b1", "r1"}, {"b1", "r2"}, {"b2", "r3"}, {"b2", "r4"}} {
		rackNodes(t, ctx, ns, r.block, r.rack, 2, "4")
	}
	w := watchPlacement(t, ctx, ns)
	c := &v1alpha1.PodGroupSchedulingConstraints{
		Topology:          []v1alpha1.TopologyConstraint{{Key: blockLabel}},
		PreferredTopology: []v1alpha1.TopologyConstraint{{Key: rackLabel}},
	}
	createTopologyGang(t, ctx, ns, "wide", 12, "1", c)
	wide := expectRunningWhole(t, ctx, w, ns, "wide", 12)
	blocks := domainsOf(t, ctx, wide, blockLabel)
	block := blocks[wide[0].Name]
	expectOneDomain(t, ctx, ns, "wide", wide, blockLabel, block)
	racks := map[string]bool{}
	for _, r := range domainsOf(t, ctx, wide, rackLabel) {
		racks[r] = true
	}
	if len(racks) != 2 {
		t.Errorf("gang wide runs in racks %v, want both racks of its block", racks)
	}

	createTopologyGang(t, ctx, ns, "narrow", 8, "1", c)
	narrow := expectRunningWhole(t, ctx, w, ns, "narrow", 8)
	rack := domainsOf(t, ctx, narrow, rackLabel)[narrow[0].Name]
	expectOneDomain(t, ctx, ns, "narrow", narrow, rackLabel, rack)
	if b := domainsOf(t, ctx, narrow, blockLabel)[narrow[0].Name]; b == block {
		t.Errorf("gang narrow runs in block %s beside wide, whose racks have 4 CPUs left: want a rack of the other block", b)
	}
}

// TestTopologySlices: a gang of 16 in one block, in slices of 4 pods per
// rack: each 4 pods, in order of name, share a rack.
func TestTopologySlices(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	ns := namespace(t, ctx)
	// Block b1 has 4 racks of 6 CPUs (one node each): a slice of 4 fits a
	// rack, two do not, so the 4 slices take the 4 racks.
	for _, r := range []string{"r1", "r2", "r3", "r4"} {
		rackNodes(t, ctx, ns, "b1", r, 1, "6")
	}
	w := watchPlacement(t, ctx, ns)
	createTopologyGang(t, ctx, ns, "g", 16, "1", &v1alpha1.PodGroupSchedulingConstraints{
		Topology: []v1alpha1.TopologyConstraint{{Key: blockLabel}},
		Slice:    &v1alpha1.TopologySlice{Key: rackLabel, Size: 4},
	})
	pods := expectRunningWhole(t, ctx, w, ns, "g", 16)
	expectOneDomain(t, ctx, ns, "g", pods, blockLabel, ns+"-b1")
	racks := domainsOf(t, ctx, pods, rackLabel)
	names := make([]string, 0, len(racks))
	for n := range racks {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return podIndex(names[i]) < podIndex(names[j]) })
	for i := 0; i < len(names); i += 4 {
		for _, n := range names[i : i+4] {
			if racks[n] != racks[names[i]] {
				t.Errorf("slice from %s: %s runs in rack %s, %s in %s", names[i], n, racks[n], names[i], racks[names[i]])
			}
		}
	}
}

// podIndex is the number a gang pod's name ends in (g-12 is 12).
func podIndex(name string) int {
	var i int
	fmt.Sscanf(name[strings.LastIndex(name, "-")+1:], "%d", &i)
	return i
}

// TestTopologyBestFit: a small gang admitted first takes the small rack,
// not the first rack by name, so that the large gang that comes next
// still finds a rack whole. First fit would have left it waiting.
func TestTopologyBestFit(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	ns := namespace(t, ctx)
	rackNodes(t, ctx, ns, "b1", "a-big", 2, "4")
	rackNodes(t, ctx, ns, "b1", "b-small", 1, "4")
	w := watchPlacement(t, ctx, ns)
	createTopologyGang(t, ctx, ns, "small", 4, "1", requiredLevel(rackLabel))
	small := expectRunningWhole(t, ctx, w, ns, "small", 4)
	expectOneDomain(t, ctx, ns, "small", small, rackLabel, ns+"-b-small")

	createTopologyGang(t, ctx, ns, "large", 8, "1", requiredLevel(rackLabel))
	large := expectRunningWhole(t, ctx, w, ns, "large", 8)
	expectOneDomain(t, ctx, ns, "large", large, rackLabel, ns+"-a-big")
}

// TestTopologyPreemptsOneRack: a gang of higher priority that needs a
// whole rack preempts the one gang that holds part of one rack, not bits
// of both: the two racks together had room enough without any victim. Of
// the two low gangs, of equal priority, the one admitted later is the
// victim; the other is untouched.
func TestTopologyPreemptsOneRack(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	ns := namespace(t, ctx)
	rackNodes(t, ctx, ns, "b1", "r1", 2, "4")
	rackNodes(t, ctx, ns, "b1", "r2", 2, "4")
	low := priorityClass(t, ctx, ns+"-low", 100)
	high := priorityClass(t, ctx, ns+"-high", 1000)
	w := watchPreemption(t, ctx, ns)
	// Each low gang takes 4 of the 8 CPUs of a rack of its own.
	running := map[string][]corev1.Pod{}
	for _, g := range []struct{ name, rack string }{{"low-1", "r1"}, {"low-2", "r2"}} {
		createGroup(t, ctx, ns, g.name, 2)
		createPods(t, ctx, gangPods(ns, g.name, 2, "2", "", withPriorityClass(low), func(p *corev1.Pod) {
			p.Spec.NodeSelector[rackLabel] = ns + "-" + g.rack
		}))
		running[g.name] = w.expectRunning(t, ctx, g.name, 2, nil)
		if g.name == "low-1" {
			// Admission times are stored to the second: let the clock
			// pass low-1's, so that low-2 is admitted later.
			first, err := getGroup(ctx, ns, g.name)
			if err != nil || first.Status.AdmissionTime == nil {
				t.Fatalf("gang low-1 has no admission time: %v", err)
			}
			w.poll(t, ctx, "the clock to pass low-1's admission second", func() bool {
				return time.Now().Truncate(time.Second).After(first.Status.AdmissionTime.Time)
			})
		}
	}

	createTopologyGang(t, ctx, ns, "high", 8, "1", requiredLevel(rackLabel), withPriorityClass(high))
	decided := w.waitPreemption(t, ctx, "high")
	expectVictims(t, ctx, ns, decided.preemption, 1000, map[string]v1alpha1.PreemptionVictim{"low-2": {Priority: 100, Pods: 2}})
	w.waitPreempted(t, ctx, "low-2")
	w.expectEvicted(t, ctx, "low-2", running["low-2"])
	pods := w.expectRunning(t, ctx, "high", 8, nil)
	expectOneDomain(t, ctx, ns, "high", pods, rackLabel, ns+"-r2")
	w.expectUntouched(t, ctx, "low-1", running["low-1"])
	w.check(t)
}

// TestTopologyRoleInItsRack: a gang that must share a block, whose 8
// workers must also share a rack, runs with its workers in one rack and
// its driver elsewhere in the same block; the group's status records the
// block, and the worker role's the rack. The other block, one rack of 8
// CPUs, is too small for the gang.
func TestTopologyRoleInItsRack(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	ns := namespace(t, ctx)
	rackNodes(t, ctx, ns, "b1", "r1", 2, "4")
	rackNodes(t, ctx, ns, "b1", "r2", 2, "4")
	rackNodes(t, ctx, ns, "b2", "r3", 2, "4")
	w := watchPlacement(t, ctx, ns)
	pg := newGroupObject(ns, "g", 9)
	pg.Spec.SchedulingConstraints = requiredLevel(blockLabel)
	pg.Spec.Roles = []v1alpha1.PodGroupRole{
		{Name: "driver", Count: 1},
		{Name: "worker", Count: 8, SchedulingConstraints: requiredLevel(rackLabel)},
	}
	if _, err := muster.SchedulingV1alpha1().PodGroups(ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating PodGroup g: %v", err)
	}
	pods := []*corev1.Pod{rolePod(ns, "driver", "g", "driver", "3", "", nil)}
	for i := range 8 {
		pods = append(pods, rolePod(ns, fmt.Sprintf("worker-%d", i), "g", "worker", "1", "", nil))
	}
	createPods(t, ctx, pods)
	running := expectRunningWhole(t, ctx, w, ns, "g", 9)
	expectOneDomain(t, ctx, ns, "g", running, blockLabel, ns+"-b1")
	racks := domainsOf(t, ctx, running, rackLabel)
	workerRack := racks["worker-0"]
	for name, rack := range racks {
		if strings.HasPrefix(name, "worker-") && rack != workerRack {
			t.Errorf("worker %s runs in rack %s, worker-0 in %s", name, rack, workerRack)
		}
	}
	if racks["driver"] == workerRack {
		t.Errorf("the driver runs in the workers' rack %s, which the 8 workers fill", workerRack)
	}
	got, err := getGroup(ctx, ns, "g")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range got.Status.Roles {
		switch {
		case r.Name == "worker" && (r.TopologyDomain == nil || r.TopologyDomain.Key != rackLabel || r.TopologyDomain.Value != workerRack):
			t.Errorf("status.roles[worker].topologyDomain %+v, want %s=%s", r.TopologyDomain, rackLabel, workerRack)
		case r.Name == "driver" && r.TopologyDomain != nil:
			t.Errorf("status.roles[driver].topologyDomain %+v, want none: the driver's role has no constraint", r.TopologyDomain)
		}
	}
}
