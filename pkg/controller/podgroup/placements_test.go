package podgroup

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/component-base/metrics/testutil"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

func capacityMode(c *Config) { c.Admission = AdmissionCapacity }

// capacityHarness is a harness with capacity-aware admission over nodes.
func capacityHarness(t *testing.T, nodes []*corev1.Node, objs ...runtime.Object) *harness {
	t.Helper()
	for _, n := range nodes {
		objs = append(objs, n)
	}
	return newHarness(t, capacityMode, objs...)
}

// admitRound is what happens when a gang completes: its sync offers it, an
// admission cycle decides, and the sync that the decision queues carries it out.
func (h *harness) admitRound() {
	h.t.Helper()
	h.sync()
	h.admission().RunCycle()
	h.observe()
	h.sync()
}

func placedNodes(pg *v1alpha1.PodGroup) map[string]string {
	out := map[string]string{}
	for _, p := range pg.Status.Placements {
		out[p.Pod] = p.Node
	}
	return out
}

func TestCapacityAdmission(t *testing.T) {
	type want struct {
		admitted   metav1.ConditionStatus
		reason     string
		msg        string // substring of the Admitted message
		released   []string
		placements int
	}
	tests := []struct {
		name  string
		nodes []*corev1.Node
		objs  []runtime.Object
		want  want
	}{
		{
			name:  "a gang that fits is placed, recorded, pinned and released",
			nodes: []*corev1.Node{newNode("n1", "8"), newNode("n2", "8")},
			objs:  objects(newGroup(3), pods("p", 3, requests("4"))...),
			want:  want{admitted: metav1.ConditionTrue, reason: scheduling.ReasonGangFits, released: []string{"p-0", "p-1", "p-2"}, placements: 3},
		},
		{
			name:  "a gang that does not fit waits whole and says what is short",
			nodes: []*corev1.Node{newNode("n1", "8"), newNode("n2", "8"), newNode("n3", "8")},
			objs: append(objects(newGroup(3), pods("p", 3, requests("6"))...),
				newPod("x", inGroup("other"), running, onNode("n3"), requests("4"))),
			want: want{admitted: metav1.ConditionFalse, reason: scheduling.ReasonInsufficientCapacity,
				msg: "3 pods requesting cpu 6 each, 2 fit; 3 of 3 nodes refuse the rest: 3 Insufficient cpu (NodeResourcesFit)"},
		},
		{
			name:  "a gang larger than the idle cluster says it can never fit",
			nodes: []*corev1.Node{newNode("n1", "4")},
			objs:  objects(newGroup(2), pods("p", 2, requests("4"))...),
			want:  want{admitted: metav1.ConditionFalse, reason: scheduling.ReasonExceedsClusterCapacity, msg: "can never fit"},
		},
		{
			name:  "pods beyond minCount that fit go with the gang",
			nodes: []*corev1.Node{newNode("n1", "8")},
			objs:  objects(newGroup(2), pods("p", 3, requests("2"))...),
			want:  want{admitted: metav1.ConditionTrue, reason: scheduling.ReasonGangFits, released: []string{"p-0", "p-1", "p-2"}, placements: 3},
		},
		{
			name:  "pods beyond minCount that do not fit wait, still gated",
			nodes: []*corev1.Node{newNode("n1", "8")},
			objs:  objects(newGroup(2), pods("p", 3, requests("4"))...),
			want:  want{admitted: metav1.ConditionTrue, reason: scheduling.ReasonGangFits, released: []string{"p-0", "p-1"}, placements: 2},
		},
		{
			name:  "pods for another scheduler are never pinned: they are released unpinned with the gang, and the group says why",
			nodes: []*corev1.Node{newNode("n1", "8")},
			objs: objects(newGroup(3), append(pods("p", 2, requests("2")),
				newPod("q", inGroup(testGroup), requests("2"), func(p *corev1.Pod) { p.Spec.SchedulerName = "volcano" }))...),
			want: want{admitted: metav1.ConditionTrue, reason: scheduling.ReasonGangFits, released: []string{"p-0", "p-1", "q"}, placements: 2,
				msg: "1 pods are released unpinned, since placement cannot check where they may run (schedulerName volcano is not kube-scheduler's default profile)"},
		},
		{
			name:  "a gang whose every pod is for another scheduler is admitted once complete, and none is pinned",
			nodes: []*corev1.Node{newNode("n1", "1")},
			objs:  objects(newGroup(2), pods("p", 2, requests("4"), func(p *corev1.Pod) { p.Spec.SchedulerName = "kai" })...),
			want:  want{admitted: metav1.ConditionTrue, reason: scheduling.ReasonGangFits, released: []string{"p-0", "p-1"}, msg: "2 pods are released unpinned"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := capacityHarness(t, tc.nodes, tc.objs...)
			h.admitRound()
			pg := h.group()
			c := cond(pg, v1alpha1.ConditionAdmitted)
			if c == nil || c.Status != tc.want.admitted || c.Reason != tc.want.reason || !strings.Contains(c.Message, tc.want.msg) {
				t.Fatalf("Admitted = %+v, want %s/%s with %q", c, tc.want.admitted, tc.want.reason, tc.want.msg)
			}
			if got := len(pg.Status.Placements); got != tc.want.placements {
				t.Errorf("%d placements recorded, want %d", got, tc.want.placements)
			}
			patches := h.podPatches()
			if len(patches) != len(tc.want.released) {
				t.Errorf("patched %d pods, want %d: %v", len(patches), len(tc.want.released), patches)
			}
			nodes := placedNodes(pg)
			for _, name := range tc.want.released {
				if len(patches[name]) != 1 {
					t.Errorf("pod %s got %d patches, want 1 that pins and ungates", name, len(patches[name]))
				}
				p := h.pod(name)
				if scheduling.HasGate(p) {
					t.Errorf("pod %s still gated", name)
				}
				if got := scheduling.PinnedNode(p); (got == "" && nodes[name] != "") || got != nodes[name] {
					t.Errorf("pod %s pinned to %q, want the recorded %q", name, got, nodes[name])
				}
			}
		})
	}
}

// TestClaimsWithoutDRAAreNotPinned: on a cluster that does not serve
// resource.k8s.io/v1, a pod with resource claims is released unpinned with
// its gang, and the group says why.
func TestClaimsWithoutDRAAreNotPinned(t *testing.T) {
	withClaim := func(p *corev1.Pod) {
		template := "gpu"
		p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &template}}
	}
	h := capacityHarness(t, []*corev1.Node{newNode("n1", "8")}, objects(newGroup(2), pods("p", 2, requests("1"), withClaim)...)...)
	h.admission().UseFilters(filtersWithoutDRA(t))
	h.admitRound()
	c := cond(h.group(), v1alpha1.ConditionAdmitted)
	if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "2 pods are released unpinned") ||
		!strings.Contains(c.Message, "resource claims need resource.k8s.io/v1, which this cluster does not serve") {
		t.Fatalf("Admitted = %+v, want True, saying the 2 pods with claims are released unpinned and why", c)
	}
	for _, name := range []string{"p-0", "p-1"} {
		p := h.pod(name)
		if scheduling.HasGate(p) || scheduling.PinnedNode(p) != "" {
			t.Errorf("pod %s: gated %v, pinned to %q; want released unpinned", name, scheduling.HasGate(p), scheduling.PinnedNode(p))
		}
	}
}

// TestCapacityAdmissionWritesBeforePatching: the placements are in the
// status write that admits, and that write comes before any pod patch.
func TestCapacityAdmissionWritesBeforePatching(t *testing.T) {
	h := capacityHarness(t, []*corev1.Node{newNode("n1", "8")}, objects(newGroup(2), pods("p", 2, requests("1"))...)...)
	h.admitRound()
	writes := h.statusWrites()
	admitting := -1
	for k, w := range writes {
		if isAdmitted(w) {
			admitting = k
			break
		}
	}
	if admitting < 0 || len(writes[admitting].Status.Placements) != 2 {
		t.Fatalf("no status write admits the gang with its 2 placements")
	}
	// The k-th status update among the calls is writes[k].
	calls := h.mutations()
	firstPatch, admitCall, seen := -1, -1, 0
	for i, c := range calls {
		if strings.Contains(c, "pods") && strings.HasPrefix(c, "patch") && firstPatch < 0 {
			firstPatch = i
		}
		if strings.Contains(c, "podgroups") && strings.Contains(c, "status") {
			if seen == admitting {
				admitCall = i
			}
			seen++
		}
	}
	if firstPatch < 0 || admitCall < 0 || admitCall > firstPatch {
		t.Fatalf("calls %v: want the admitting status write before the first pod patch", calls)
	}
}

// TestCapacityResumesRecordedPlacement: a controller that restarts after the
// admission write carries out the recorded placement, with no new cycle.
func TestCapacityResumesRecordedPlacement(t *testing.T) {
	pg := admitted(2, func(pg *v1alpha1.PodGroup) {
		pg.Status.Placements = []v1alpha1.PodPlacement{{Pod: "p-0", UID: "uid-p-0", Node: "n2"}, {Pod: "p-1", UID: "uid-p-1", Node: "n1"}}
	})
	h := capacityHarness(t, []*corev1.Node{newNode("n1", "8"), newNode("n2", "8")}, objects(pg, pods("p", 2, requests("1"))...)...)
	h.sync()
	for name, node := range map[string]string{"p-0": "n2", "p-1": "n1"} {
		if p := h.pod(name); scheduling.HasGate(p) || scheduling.PinnedNode(p) != node {
			t.Errorf("pod %s: gated=%v pinned to %q, want released on the recorded %s", name, scheduling.HasGate(p), scheduling.PinnedNode(p), node)
		}
	}
	// Once the pods show released, the placements are pruned.
	h.step(2 * time.Second)
	if n := len(h.group().Status.Placements); n != 0 {
		t.Errorf("%d placements left after every pod was released, want 0", n)
	}
}

// twoGangsOnOneNode: gang a, admitted with both its pods placed on n1 (8
// CPUs), and gang b waiting with two pods of 4 CPUs, which fit only in the
// room a holds.
func twoGangsOnOneNode(t *testing.T) (*v1alpha1.PodGroup, *harness) {
	t.Helper()
	pg := admitted(2, func(pg *v1alpha1.PodGroup) {
		pg.Status.Placements = []v1alpha1.PodPlacement{{Pod: "a-0", UID: "uid-a-0", Node: "n1"}, {Pod: "a-1", UID: "uid-a-1", Node: "n1"}}
	})
	other := newGroup(2, func(g *v1alpha1.PodGroup) { g.Name = "b"; g.UID = "uid-b" })
	objs := objects(pg, pods("a", 2, requests("4"))...)
	objs = append(objs, other)
	for _, p := range pods("b", 2, requests("4"), inGroup("b")) {
		objs = append(objs, p)
	}
	h := capacityHarness(t, []*corev1.Node{newNode("n1", "8")}, objs...)
	return pg, h
}

// TestCapacityReservationsAreNotOfferedTwice: the placements a group records
// reserve their nodes, so a second gang does not get the same capacity
// before the first is bound.
func TestCapacityReservationsAreNotOfferedTwice(t *testing.T) {
	_, h := twoGangsOnOneNode(t)
	if _, err := h.c.sync(t.Context(), gk(testNS+"/b")); err != nil {
		t.Fatal(err)
	}
	h.admission().RunCycle()
	reason, msg, ok := h.admission().WaitReason(gk(testNS + "/b"))
	if !ok || reason != scheduling.ReasonInsufficientCapacity {
		t.Fatalf("gang b: %s %q, want it to wait with InsufficientCapacity behind the reservation", reason, msg)
	}
}

// TestCapacityReleasedPodHoldsItsNodeAtOnce: admission records what the
// release patch returned, so a released pod holds its node even while the
// informer still shows it gated and the group's status no longer places it
// (the sync that saw it released pruned the placement first). Before, the
// node looked free for that moment, and a second gang was released into
// room kube-scheduler saw full.
func TestCapacityReleasedPodHoldsItsNodeAtOnce(t *testing.T) {
	pg, h := twoGangsOnOneNode(t)
	if _, err := h.c.sync(t.Context(), gk(testNS+"/"+pg.Name)); err != nil {
		t.Fatal(err)
	}
	if p := h.pod("a-0"); scheduling.HasGate(p) {
		t.Fatalf("a-0 was not released")
	}
	// The informer is not told of the release; the status drops the placements.
	pruned := pg.DeepCopy()
	pruned.Status.Placements = nil
	h.admission().ObserveGroup(gk(testNS+"/"+pg.Name), pruned)

	if _, err := h.c.sync(t.Context(), gk(testNS+"/b")); err != nil {
		t.Fatal(err)
	}
	h.admission().RunCycle()
	reason, msg, ok := h.admission().WaitReason(gk(testNS + "/b"))
	if !ok || reason != scheduling.ReasonInsufficientCapacity {
		t.Fatalf("gang b: %s %q, want it to wait with InsufficientCapacity: gang a's released pods hold n1", reason, msg)
	}
}

// TestCapacityJoinerPlacedAndPinned: a pod that joins an admitted group is
// placed by the next cycle, recorded, then pinned and released.
func TestCapacityJoinerPlacedAndPinned(t *testing.T) {
	h := capacityHarness(t, []*corev1.Node{newNode("n1", "8")},
		objects(admitted(1), newPod("p-0", running, onNode("n1"), requests("2")), newPod("p-1", requests("2")))...)
	h.admitRound()
	p := h.pod("p-1")
	if scheduling.HasGate(p) || scheduling.PinnedNode(p) != "n1" {
		t.Fatalf("joiner: gated=%v pinned to %q, want released on n1", scheduling.HasGate(p), scheduling.PinnedNode(p))
	}
}

// TestCapacityStaleDecisionIsPlacedAgain: a pod of the decision was deleted
// before the sync carried it out, leaving the gang short: nothing is
// released, and the gang is offered again.
func TestCapacityStaleDecisionIsPlacedAgain(t *testing.T) {
	h := capacityHarness(t, []*corev1.Node{newNode("n1", "8")}, objects(newGroup(2), pods("p", 2, requests("1"))...)...)
	h.sync()
	h.admission().RunCycle()
	h.deletePod("p-1")
	h.addPod(newPod("p-2", requests("1")))
	h.observe()
	h.sync()
	if len(h.podPatches()) != 0 {
		t.Fatalf("released pods from a decision that no longer holds: %v", h.podPatches())
	}
	h.admission().RunCycle()
	h.observe()
	h.sync()
	for _, n := range []string{"p-0", "p-2"} {
		if p := h.pod(n); scheduling.HasGate(p) || scheduling.PinnedNode(p) != "n1" {
			t.Errorf("pod %s: gated=%v pinned to %q, want released on n1", n, scheduling.HasGate(p), scheduling.PinnedNode(p))
		}
	}
}

// TestCapacityStalled: a released pod the scheduler cannot bind on its
// reserved node for longer than the timeout makes the group Stalled, with
// an event; once it is bound, Stalled goes False.
// unschedulableSince marks a pod as the scheduler leaves one it cannot bind.
func unschedulableSince(msg string) podMod {
	return func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
			Message: msg, LastTransitionTime: metav1.NewTime(t0)}}
	}
}

// pinnedTo pins a pod to node by the pin rule.
func pinnedTo(node string) podMod {
	return func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{scheduling.PinRequirement(node)}}}}}}
	}
}

func TestCapacityStalled(t *testing.T) {
	h := capacityHarness(t, []*corev1.Node{newNode("n1", "8")},
		objects(admitted(1), newPod("p-0", ungated, pinnedTo("n1"), unschedulableSince("0/1 nodes are available: 1 Insufficient cpu."), requests("2")))...)
	stalledGauge := func() float64 {
		v, err := testutil.GetGaugeMetricValue(h.c.metrics.stalledGroups)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := stalledGauge()
	if after := h.sync(); after <= 0 || after > time.Minute {
		t.Errorf("sync asked to look again after %s, want within the stalled timeout", after)
	}
	if c := cond(h.group(), v1alpha1.ConditionStalled); c != nil {
		t.Fatalf("Stalled set before the timeout: %+v", c)
	}
	h.step(time.Minute + time.Second)
	wantCondition(t, h.group(), v1alpha1.ConditionStalled, metav1.ConditionTrue, scheduling.ReasonReservedCapacityTaken, "")
	if ev := h.events(); len(ev) == 0 || !strings.Contains(strings.Join(ev, "\n"), "Warning Stalled") {
		t.Errorf("events %v, want a Stalled warning", ev)
	}
	if got := stalledGauge(); got != before+1 {
		t.Errorf("muster_podgroups_stalled = %v, want %v", got, before+1)
	}
	p := h.pod("p-0")
	p.Spec.NodeName = "n1"
	p.Status.Conditions = nil
	h.setPod(p)
	h.step(time.Second)
	wantCondition(t, h.group(), v1alpha1.ConditionStalled, metav1.ConditionFalse, scheduling.ReasonNoStalledPods, "")
	if got := stalledGauge(); got != before {
		t.Errorf("muster_podgroups_stalled = %v after the pod was bound, want %v", got, before)
	}
}

// TestWaitingEventPerReason: a group records one Waiting event each time the
// reason it waits for changes (here from WaitingForPods to
// InsufficientCapacity), and none while only the message changes.
func TestWaitingEventPerReason(t *testing.T) {
	h := capacityHarness(t, []*corev1.Node{newNode("n1", "8"), newNode("n2", "8")},
		objects(newGroup(2), newPod("x", inGroup("other"), running, onNode("n2"), requests("6")))...)
	h.sync()
	if ev := h.events(); len(ev) != 1 || !strings.Contains(ev[0], "has 0 of the 2 active pods") {
		t.Fatalf("events %v, want one Waiting event for pods", ev)
	}
	h.addPod(newPod("p-0", requests("5")))
	h.observe()
	h.sync()
	if ev := h.events(); len(ev) != 0 {
		t.Fatalf("events %v after a pod arrived, want none: the reason did not change", ev)
	}
	h.addPod(newPod("p-1", requests("5")))
	h.observe()
	h.sync()
	h.admission().RunCycle()
	h.observe()
	h.sync()
	if ev := h.events(); len(ev) != 1 || !strings.Contains(ev[0], "Waiting needs 2 pods placed at once; 1 fit now") {
		t.Fatalf("events %v, want one Waiting event saying the gang does not fit", ev)
	}
}

// TestCapacityDecisionDroppedWhenGroupIsDeleted: a group deleted after a
// cycle placed it, before its sync recorded that, gives the capacity back.
func TestCapacityDecisionDroppedWhenGroupIsDeleted(t *testing.T) {
	h := capacityHarness(t, []*corev1.Node{newNode("n1", "8")}, objects(newGroup(2), pods("p", 2, requests("4"))...)...)
	h.sync()
	h.admission().RunCycle()
	if !h.admission().Decided(testKey) {
		t.Fatal("the cycle did not admit the gang")
	}
	if free := h.admission().Snapshot().Place(pods("q", 1, requests("1"))); len(free.Assignments) != 0 {
		t.Fatal("the decision reserved nothing")
	}
	pg := h.group()
	pg.DeletionTimestamp = &metav1.Time{Time: t0}
	pg.Finalizers = []string{"scheduling.muster.dev/pod-cleanup"}
	if err := h.muster.Tracker().Update(podGroupsGVR, pg, testNS); err != nil {
		t.Fatal(err)
	}
	h.observe()
	h.sync()
	if h.admission().Decided(testKey) {
		t.Error("the decision outlived its group")
	}
	if free := h.admission().Snapshot().Place(pods("q", 2, requests("4"))); len(free.Assignments) != 2 {
		t.Errorf("after the group was deleted %d of 2 pods of 4 cpu fit on the 8-cpu node, want 2", len(free.Assignments))
	}
}

// TestCapacityStalledNamesTheFilter: the Stalled message names the scheduler
// filter that now refuses a released pod on its node, or says that capacity
// was taken when every filter passes.
func TestCapacityStalledNamesTheFilter(t *testing.T) {
	unschedulable := unschedulableSince("0/1 nodes are available: 1 node(s) had untolerated taint(s).")
	tainted := func(n *corev1.Node) {
		n.Spec.Taints = []corev1.Taint{{Key: "maintenance", Effect: corev1.TaintEffectNoSchedule}}
	}
	tests := []struct {
		name string
		node *corev1.Node
		want []string
	}{
		{
			name: "a taint added after placement: TaintToleration is named",
			node: newNode("n1", "8", tainted),
			want: []string{"the nodes changed since placement", "pod p-0 on node n1, refused by node(s) had untolerated taint(s) (TaintToleration)"},
		},
		{
			name: "every filter passes: capacity came and went",
			node: newNode("n1", "8"),
			want: []string{"capacity was likely taken by pods Muster does not manage", "pod p-0 on node n1, the scheduler reports: 0/1 nodes"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := capacityHarness(t, []*corev1.Node{tc.node}, objects(admitted(1), newPod("p-0", ungated, pinnedTo("n1"), unschedulable, requests("2")))...)
			h.sync()
			h.step(time.Minute + time.Second)
			c := cond(h.group(), v1alpha1.ConditionStalled)
			if c == nil || c.Status != metav1.ConditionTrue {
				t.Fatalf("Stalled = %+v, want True", c)
			}
			for _, w := range tc.want {
				if !strings.Contains(c.Message, w) {
					t.Errorf("Stalled message %q, want it to contain %q", c.Message, w)
				}
			}
		})
	}
}
