package podgroup

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/controller/capacityadmission"
)

// TestHeldJoinersGiveCapacityBack (issue 21, item 2): a pod that joined an
// admitted group that is short of minCount is placed but stays gated; its
// placement is kept at most MaxHeldPlacementSeconds, then given back with
// a condition that says why, and the group's pods are not placed again
// until they change.
func TestHeldJoinersGiveCapacityBack(t *testing.T) {
	tests := []struct {
		name          string
		after         time.Duration // since the placement was first seen held
		addPod        bool          // a pod joins after the expiry
		wantPlacement bool
		wantReason    string // of CapacityReserved; "" for none
		wantOffered   bool
	}{
		{name: "within the bound: kept", after: capacityadmission.MaxHeldPlacement - time.Second, wantPlacement: true},
		{name: "past the bound: given back, and the group says why", after: capacityadmission.MaxHeldPlacement, wantReason: scheduling.ReasonHeldPlacementsExpired},
		{name: "given back: not placed again while the pods are the same", after: capacityadmission.MaxHeldPlacement + time.Minute, wantReason: scheduling.ReasonHeldPlacementsExpired},
		{name: "given back: placed again once a pod joins", after: capacityadmission.MaxHeldPlacement, addPod: true, wantReason: scheduling.ReasonHeldPlacementsExpired, wantOffered: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// minCount 3: one pod runs and one joined, so the joiner is held.
			pg := newGroup(3, admittedAt(t0.Add(-time.Hour)), func(pg *v1alpha1.PodGroup) {
				pg.Status.Placements = []v1alpha1.PodPlacement{{Pod: "j", UID: "uid-j", Node: "n1"}}
			})
			h := capacityHarness(t, []*corev1.Node{newNode("n1", "8")}, objects(pg,
				newPod("r", requests("1"), ungated, running, onNode("n1")), newPod("j", requests("1")))...)
			h.sync()
			if got := h.group(); len(got.Status.Placements) != 1 || !scheduling.HasGate(h.pod("j")) {
				t.Fatalf("placements %v, j gated %v: want the joiner placed and held", got.Status.Placements, scheduling.HasGate(h.pod("j")))
			}
			next := h.step(tc.after)
			if tc.after < capacityadmission.MaxHeldPlacement && next != capacityadmission.MaxHeldPlacement-tc.after {
				t.Errorf("sync requeues after %s, want %s (when the placement ends)", next, capacityadmission.MaxHeldPlacement-tc.after)
			}
			if tc.after > capacityadmission.MaxHeldPlacement {
				h.step(0)
			}
			if tc.addPod {
				h.addPod(newPod("j2", requests("1")))
				h.step(0)
			}
			got := h.group()
			if placed := len(placedNodes(got)) > 0; placed != tc.wantPlacement {
				t.Errorf("placements %v, want placed=%v", got.Status.Placements, tc.wantPlacement)
			}
			if tc.wantReason == "" {
				wantNoCondition(t, got, v1alpha1.ConditionCapacityReserved)
			} else {
				wantCondition(t, got, v1alpha1.ConditionCapacityReserved, metav1.ConditionFalse, tc.wantReason, "")
				if ev := h.events(); !tc.addPod && tc.after == capacityadmission.MaxHeldPlacement && !containsPrefix(ev, "Warning "+scheduling.ReasonHeldPlacementsExpired) {
					t.Errorf("events %q, want a %s warning", ev, scheduling.ReasonHeldPlacementsExpired)
				}
			}
			offered := h.admission().Offered(testKey)
			if offered != tc.wantOffered {
				t.Errorf("offered to the admission cycle = %v, want %v", offered, tc.wantOffered)
			}
			if !scheduling.HasGate(h.pod("j")) {
				t.Errorf("the held joiner was released alone")
			}
		})
	}
}

// TestHeldJoinersEachKeepTheirClock: a placement made after another keeps
// its own clock, and is given back when that ends, even while the group's
// pods are those whose held placements were given back before.
func TestHeldJoinersEachKeepTheirClock(t *testing.T) {
	pg := newGroup(4, admittedAt(t0.Add(-time.Hour)), func(pg *v1alpha1.PodGroup) {
		pg.Status.Placements = []v1alpha1.PodPlacement{{Pod: "j", UID: "uid-j", Node: "n1"}}
	})
	h := capacityHarness(t, []*corev1.Node{newNode("n1", "8")}, objects(pg,
		newPod("r", requests("1"), ungated, running, onNode("n1")), newPod("j", requests("1")), newPod("k", requests("1")))...)
	h.sync() // j is seen held; k waits to be placed.
	h.step(time.Minute)
	// k is placed a minute after j was first seen held.
	got := h.group()
	got.Status.Placements = append(got.Status.Placements, v1alpha1.PodPlacement{Pod: "k", UID: "uid-k", Node: "n1"})
	if _, err := h.muster.SchedulingV1alpha1().PodGroups(testNS).UpdateStatus(t.Context(), got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.step(0)
	h.step(capacityadmission.MaxHeldPlacement - time.Minute)
	if placed := placedNodes(h.group()); len(placed) != 1 || placed["k"] == "" {
		t.Fatalf("placements %v after j's bound, want k's alone", placed)
	}
	h.step(time.Minute)
	h.step(time.Second) // a write that only removes a placement waits for the status batch period.
	if placed := placedNodes(h.group()); len(placed) != 0 {
		t.Errorf("placements %v after k's bound, want none", placed)
	}
}
