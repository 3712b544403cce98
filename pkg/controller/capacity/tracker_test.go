package capacity

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// requestedCPU returns the millicores each node holds in a snapshot.
func requestedCPU(t *Tracker) map[string]int64 {
	out := map[string]int64{}
	s := t.Snapshot(defaultFilters())
	for i, n := range s.Nodes {
		if cpu := s.infos[i].Requested.MilliCPU; cpu != 0 {
			out[n.Name()] = cpu
		}
	}
	return out
}

func TestTrackerHoldings(t *testing.T) {
	type step func(tr *Tracker)
	setManaged := func(p *corev1.Pod, gated bool) step {
		return func(tr *Tracker) { tr.SetManagedPod(gk("ns/g"), p, gated) }
	}
	tests := []struct {
		name        string
		fastRelease bool
		steps       []step
		want        map[string]int64
	}{
		{
			name:  "bound unmanaged pod holds its node",
			steps: []step{func(tr *Tracker) { tr.SetUnmanagedPod(pod("u", "2", onNode("a"))) }},
			want:  map[string]int64{"a": 2000},
		},
		{
			name: "unmanaged pod that finishes holds nothing",
			steps: []step{
				func(tr *Tracker) { tr.SetUnmanagedPod(pod("u", "2", onNode("a"))) },
				func(tr *Tracker) { tr.SetUnmanagedPod(pod("u", "2", onNode("a"), phase(corev1.PodSucceeded))) },
			},
			want: map[string]int64{},
		},
		{
			name:        "fast release: a pod being deleted holds nothing",
			fastRelease: true,
			steps:       []step{func(tr *Tracker) { tr.SetUnmanagedPod(pod("u", "2", onNode("a"), deleting)) }},
			want:        map[string]int64{},
		},
		{
			name:  "without fast release a pod being deleted holds until it is gone",
			steps: []step{func(tr *Tracker) { tr.SetUnmanagedPod(pod("u", "2", onNode("a"), deleting)) }},
			want:  map[string]int64{"a": 2000},
		},
		{
			name: "relist replaces every unmanaged holding",
			steps: []step{
				func(tr *Tracker) { tr.SetUnmanagedPod(pod("u1", "2", onNode("a"))) },
				func(tr *Tracker) { tr.ReplaceUnmanagedPods([]*corev1.Pod{pod("u2", "3", onNode("b"))}) },
			},
			want: map[string]int64{"b": 3000},
		},
		{
			name:  "gated managed pod without a placement holds nothing",
			steps: []step{setManaged(pod("m", "4"), true)},
			want:  map[string]int64{},
		},
		{
			name: "gated managed pod with a placement in status is reserved there",
			steps: []step{
				setManaged(pod("m", "4"), true),
				func(tr *Tracker) { tr.SetPlacements(gk("ns/g"), map[types.UID]string{"uid-m": "a"}) },
			},
			want: map[string]int64{"a": 4000},
		},
		{
			name: "assumed placement is reserved until forgotten",
			steps: []step{
				setManaged(pod("m", "4"), true),
				func(tr *Tracker) { tr.Assume(gk("ns/g"), map[types.UID]string{"uid-m": "b"}) },
				func(tr *Tracker) { tr.Forget(gk("ns/g")) },
			},
			want: map[string]int64{},
		},
		{
			name: "assumed placement, then status shows it: held once",
			steps: []step{
				setManaged(pod("m", "4"), true),
				func(tr *Tracker) { tr.Assume(gk("ns/g"), map[types.UID]string{"uid-m": "b"}) },
				func(tr *Tracker) { tr.SetPlacements(gk("ns/g"), map[types.UID]string{"uid-m": "b"}) },
				func(tr *Tracker) { tr.Forget(gk("ns/g")) },
			},
			want: map[string]int64{"b": 4000},
		},
		{
			name: "released and pinned, not bound: reserved on the pinned node",
			steps: []step{
				setManaged(pod("m", "4"), true),
				func(tr *Tracker) { tr.SetPlacements(gk("ns/g"), map[types.UID]string{"uid-m": "a"}) },
				setManaged(pod("m", "4", pinnedTo("a")), false),
			},
			want: map[string]int64{"a": 4000},
		},
		{
			// The controller records what its release patch returned
			// (version 7); the informer then delivers the pod's older,
			// gated state (version 6), and the group's status drops the
			// placement: the pod still holds its node.
			name: "a released pod's older, gated state delivered late is ignored",
			steps: []step{
				setManaged(pod("m", "4", version(6)), true),
				func(tr *Tracker) { tr.SetPlacements(gk("ns/g"), map[types.UID]string{"uid-m": "a"}) },
				setManaged(pod("m", "4", pinnedTo("a"), version(7)), false),
				setManaged(pod("m", "4", version(6)), true),
				func(tr *Tracker) { tr.SetPlacements(gk("ns/g"), nil) },
			},
			want: map[string]int64{"a": 4000},
		},
		{
			name: "a newer state replaces the one recorded",
			steps: []step{
				setManaged(pod("m", "4", pinnedTo("a"), version(7)), false),
				setManaged(pod("m", "4", pinnedTo("a"), onNode("a"), phase(corev1.PodSucceeded), version(9)), false),
				setManaged(pod("m", "4", pinnedTo("a"), onNode("a"), version(8)), false),
			},
			want: map[string]int64{},
		},
		{
			name: "pinned then bound: held once, on its node",
			steps: []step{
				setManaged(pod("m", "4", pinnedTo("a")), false),
				setManaged(pod("m", "4", pinnedTo("a"), onNode("a")), false),
			},
			want: map[string]int64{"a": 4000},
		},
		{
			name: "managed pod that finishes gives its node back",
			steps: []step{
				setManaged(pod("m", "4", onNode("a")), false),
				setManaged(pod("m", "4", onNode("a"), phase(corev1.PodFailed)), false),
			},
			want: map[string]int64{},
		},
		{
			name: "managed pod deleted gives back its reservation",
			steps: []step{
				setManaged(pod("m", "4"), true),
				func(tr *Tracker) { tr.Assume(gk("ns/g"), map[types.UID]string{"uid-m": "b"}) },
				func(tr *Tracker) { tr.RemoveManagedPod("uid-m") },
			},
			want: map[string]int64{},
		},
		{
			name: "released pod that was not pinned holds nothing until bound",
			steps: []step{
				setManaged(pod("m", "4"), false),
			},
			want: map[string]int64{},
		},
		{
			name: "reservations recorded in status hold their nodes",
			steps: []step{
				func(tr *Tracker) { tr.SetReservations(gk("ns/g"), []Slot{cpuSlot("a", 2, 3), cpuSlot("b", 1, 1)}) },
			},
			want: map[string]int64{"a": 6000, "b": 1000},
		},
		{
			name: "a smaller reservation replaces the old one",
			steps: []step{
				func(tr *Tracker) { tr.SetReservations(gk("ns/g"), []Slot{cpuSlot("a", 2, 3)}) },
				func(tr *Tracker) { tr.SetReservations(gk("ns/g"), []Slot{cpuSlot("a", 2, 1)}) },
			},
			want: map[string]int64{"a": 2000},
		},
		{
			name: "assumed reservations hold until forgotten",
			steps: []step{
				func(tr *Tracker) { tr.AssumeReservations(gk("ns/g"), []Slot{cpuSlot("b", 4, 2)}) },
				func(tr *Tracker) { tr.Forget(gk("ns/g")) },
			},
			want: map[string]int64{},
		},
		{
			name: "assumed reservations give way to the recorded ones",
			steps: []step{
				func(tr *Tracker) { tr.AssumeReservations(gk("ns/g"), []Slot{cpuSlot("b", 4, 2)}) },
				func(tr *Tracker) { tr.SetReservations(gk("ns/g"), []Slot{cpuSlot("b", 4, 2)}) },
				func(tr *Tracker) { tr.Forget(gk("ns/g")) },
			},
			want: map[string]int64{"b": 8000},
		},
		{
			name: "reservations given back hold nothing",
			steps: []step{
				func(tr *Tracker) { tr.SetReservations(gk("ns/g"), []Slot{cpuSlot("a", 2, 3)}) },
				func(tr *Tracker) { tr.SetReservations(gk("ns/g"), nil) },
			},
			want: map[string]int64{},
		},
		{
			name: "a deleted group's reservations are dropped",
			steps: []step{
				func(tr *Tracker) { tr.SetReservations(gk("ns/g"), []Slot{cpuSlot("a", 2, 3)}) },
				func(tr *Tracker) { tr.AssumeReservations(gk("ns/g"), []Slot{cpuSlot("b", 1, 1)}) },
				func(tr *Tracker) { tr.ForgetGroup(gk("ns/g")) },
			},
			want: map[string]int64{},
		},
		{
			name: "deleted group's placements are dropped",
			steps: []step{
				setManaged(pod("m", "4"), true),
				func(tr *Tracker) { tr.SetPlacements(gk("ns/g"), map[types.UID]string{"uid-m": "a"}) },
				func(tr *Tracker) { tr.ForgetGroup(gk("ns/g")) },
			},
			want: map[string]int64{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTracker(tc.fastRelease)
			for _, n := range []string{"a", "b"} {
				tr.SetNode(node(n, "32", "64Gi"))
			}
			for _, s := range tc.steps {
				s(tr)
			}
			if diff := cmp.Diff(tc.want, requestedCPU(tr)); diff != "" {
				t.Errorf("requested cpu per node (-want +got):\n%s", diff)
			}
		})
	}
}

func cpuSlot(node string, cpu, count int64) Slot {
	return Slot{Node: node, Requests: Resources{MilliCPU: cpu * 1000}, Count: count}
}

func TestClaims(t *testing.T) {
	slot := Resources{MilliCPU: 2000, Memory: 1 << 30}
	tests := []struct {
		name string
		node *corev1.Node
		pod  *corev1.Pod
		want bool
	}{
		{"a pod as large as the template claims", node("a", "8", "8Gi"), pod("w", "2", withMemory("1Gi")), true},
		{"a smaller pod claims", node("a", "8", "8Gi"), pod("w", "1"), true},
		{"more cpu than the template does not", node("a", "8", "8Gi"), pod("w", "3"), false},
		{"more memory than the template does not", node("a", "8", "8Gi"), pod("w", "1", withMemory("2Gi")), false},
		{"an extended resource the template lacks does not", node("a", "8", "8Gi", withAllocatable("example.com/gpu", "4")), pod("w", "1", withRequest("example.com/gpu", "1")), false},
		{"a node that is not ready does not take it", node("a", "8", "8Gi", notReady), pod("w", "1"), false},
		{"an untolerated taint keeps the pod off", node("a", "8", "8Gi", withTaint("gpu", corev1.TaintEffectNoSchedule)), pod("w", "1"), false},
		{"a tolerated taint does not", node("a", "8", "8Gi", withTaint("gpu", corev1.TaintEffectNoSchedule)), pod("w", "1", withToleration("gpu")), true},
		{"a node selector the node does not match", node("a", "8", "8Gi"), pod("w", "1", withNodeSelector("pool", "gpu")), false},
		{"a node selector the node matches", node("a", "8", "8Gi", withLabel("pool", "gpu")), pod("w", "1", withNodeSelector("pool", "gpu")), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Claims(NewNode(tc.node), tc.pod, slot); got != tc.want {
				t.Errorf("Claims = %v, want %v", got, tc.want)
			}
		})
	}
	if Claims(nil, pod("w", "1"), slot) {
		t.Error("Claims on a node the tracker does not know = true, want false")
	}
}

// TestTrackerUnbound: a pod of Muster's with volumes or devices is replayed
// by a cycle while it holds a node it is not bound to, and only then.
func TestTrackerUnbound(t *testing.T) {
	unbound := func(tr *Tracker) []string {
		var out []string
		for _, h := range tr.Snapshot(defaultFilters()).unbound {
			out = append(out, h.pod.Name+"@"+h.node)
		}
		return out
	}
	tr := trackerOf([]*corev1.Node{node("a", "32", "256Gi")})
	withVolume := pod("v", "1", withClaim("data"))
	tr.SetManagedPod(gk("ns/g"), withVolume, true)
	tr.SetManagedPod(gk("ns/g"), pod("plain", "1"), true)
	if got := unbound(tr); len(got) != 0 {
		t.Fatalf("unbound = %v before any placement, want none", got)
	}
	tr.Assume(gk("ns/g"), map[types.UID]string{withVolume.UID: "a", "uid-plain": "a"})
	if got := unbound(tr); !cmp.Equal(got, []string{"v@a"}) {
		t.Fatalf("unbound = %v once placed, want [v@a]: only the pod with a volume", got)
	}
	bound := withVolume.DeepCopy()
	bound.Spec.NodeName = "a"
	tr.SetManagedPod(gk("ns/g"), bound, false)
	if got := unbound(tr); len(got) != 0 {
		t.Fatalf("unbound = %v once bound, want none", got)
	}
	tr.SetManagedPod(gk("ns/g"), withVolume, true)
	tr.RemoveManagedPod(withVolume.UID)
	if got := unbound(tr); len(got) != 0 {
		t.Fatalf("unbound = %v once removed, want none", got)
	}
}

// TestTrackerAntiAffinityKeys: the label keys that running pods' required
// anti-affinity terms select on are kept by the tracker as pods come, and
// never dropped: a snapshot starts from them, and a pod placed on it adds
// its own. Past maxAntiKeys, every label matters.
func TestTrackerAntiAffinityKeys(t *testing.T) {
	tr := trackerOf([]*corev1.Node{node("a", "64", "64Gi")})
	keysOf := func() map[string]bool {
		p := &placer{s: tr.Snapshot(defaultFilters())}
		return p.antiAffinityKeys()
	}
	if got := keysOf(); len(got) != 0 {
		t.Fatalf("keys %v with no pod, want none", got)
	}
	tr.SetUnmanagedPod(pod("web", "1", onNode("a"), antiAffinity("app", "web", corev1.LabelHostname)))
	tr.SetUnmanagedPod(pod("plain", "1", onNode("a"), withLabels("tier", "x")))
	if diff := cmp.Diff(map[string]bool{"app": true}, keysOf()); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
	tr.RemoveUnmanagedPod("uid-web")
	if diff := cmp.Diff(map[string]bool{"app": true}, keysOf()); diff != "" {
		t.Errorf("keys once the pod left (-want +got): a superset is kept:\n%s", diff)
	}
	s := tr.Snapshot(defaultFilters())
	s.noteAntiAffinity(pod("g", "1", antiAffinity("gang", "g", corev1.LabelHostname)))
	if got := (&placer{s: s}).antiAffinityKeys(); !got["gang"] || !got["app"] {
		t.Errorf("keys %v after a pod with anti-affinity on gang was placed, want app and gang", got)
	}
	if keysOf()["gang"] {
		t.Errorf("a pod placed on one snapshot added its keys to the tracker's")
	}
	for i := range maxAntiKeys + 1 {
		tr.SetUnmanagedPod(pod(fmt.Sprint("k", i), "0", onNode("a"), antiAffinity(fmt.Sprint("key-", i), "v", corev1.LabelHostname)))
	}
	if got := keysOf(); got != nil {
		t.Errorf("%d keys kept past the bound of %d, want nil: every label matters", len(got), maxAntiKeys)
	}
}
