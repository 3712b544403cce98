package podgroup

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// sparkRoles is a driver and workers it creates later, each worker as the
// template says (cpu).
func sparkRoles(workers int32, workerCPU string) groupMod {
	return withRoles(v1alpha1.PodGroupRole{Name: "driver", Count: 1},
		v1alpha1.PodGroupRole{Name: "worker", Count: workers, CreatedLater: true, Template: &v1alpha1.PodGroupRoleTemplate{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(workerCPU)},
		}})
}

func reserved(rs ...v1alpha1.RoleReservation) groupMod {
	return func(pg *v1alpha1.PodGroup) { pg.Status.Reservations = rs }
}

func reservedCount(pg *v1alpha1.PodGroup) map[string]int32 {
	out := map[string]int32{}
	for _, r := range pg.Status.Reservations {
		out[r.Node] += r.Count
	}
	return out
}

// TestSyncReservesForRolesCreatedLater: a driver whose workers do not exist
// yet is admitted only where it and its workers' templates fit, all at
// once; its workers' places go into status.reservations in the write that
// admits it, and only the driver is released.
func TestSyncReservesForRolesCreatedLater(t *testing.T) {
	tests := []struct {
		name         string
		cfg          func(*Config)
		nodes        []*corev1.Node
		group        *v1alpha1.PodGroup
		wantAdmitted metav1.ConditionStatus
		wantReason   string
		wantMsg      string
		wantReserved map[string]int32 // node: places
		wantReleased bool
	}{
		{
			name:         "driver and workers fit: the driver is released and the workers reserved",
			cfg:          capacityMode,
			nodes:        []*corev1.Node{newNode("n1", "8"), newNode("n2", "8")},
			group:        newGroup(5, sparkRoles(4, "3")),
			wantAdmitted: metav1.ConditionTrue, wantReason: scheduling.ReasonGangFits, wantMsg: "capacity is reserved for the 4 pods created later",
			wantReserved: map[string]int32{"n1": 2, "n2": 2}, wantReleased: true,
		},
		{
			name:         "the workers do not fit: the driver stays gated and the group says why",
			cfg:          capacityMode,
			nodes:        []*corev1.Node{newNode("n1", "8"), newNode("n2", "8")},
			group:        newGroup(9, sparkRoles(8, "3")),
			wantAdmitted: metav1.ConditionFalse, wantReason: scheduling.ReasonExceedsClusterCapacity, wantMsg: "8 pods requesting cpu 3 each, 4 fit",
		},
		{
			name:         "a role of 2,000,000 workers stored before the bound is refused, naming the field, and nothing is placed",
			cfg:          capacityMode,
			nodes:        []*corev1.Node{newNode("n1", "8")},
			group:        newGroup(2_000_001, sparkRoles(2_000_000, "1")),
			wantAdmitted: metav1.ConditionFalse, wantReason: scheduling.ReasonMinCountTooLarge, wantMsg: "spec.schedulingPolicy.gang.minCount: Invalid value: 2000001: must be at most 5000",
		},
		{
			name:         "count admission reserves nothing and releases the driver",
			nodes:        []*corev1.Node{newNode("n1", "1")},
			group:        newGroup(9, sparkRoles(8, "3")),
			wantAdmitted: metav1.ConditionTrue, wantReason: scheduling.ReasonGangComplete, wantMsg: "the 8 pods created later are not waited for",
			wantReleased: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs := objects(tc.group, newPod("d", inRole("driver"), requests("1")))
			for _, n := range tc.nodes {
				objs = append(objs, n)
			}
			h := newHarness(t, tc.cfg, objs...)
			if tc.cfg != nil {
				h.admitRound()
			} else {
				h.sync()
			}
			pg := h.group()
			wantCondition(t, pg, v1alpha1.ConditionAdmitted, tc.wantAdmitted, tc.wantReason, "")
			if c := cond(pg, v1alpha1.ConditionAdmitted); !strings.Contains(c.Message, tc.wantMsg) {
				t.Errorf("Admitted message %q, want it to contain %q", c.Message, tc.wantMsg)
			}
			got := reservedCount(pg)
			if len(got) != len(tc.wantReserved) {
				t.Errorf("reservations %v, want %v", pg.Status.Reservations, tc.wantReserved)
			}
			for node, n := range tc.wantReserved {
				if got[node] != n {
					t.Errorf("reservations %v, want %v", pg.Status.Reservations, tc.wantReserved)
				}
			}
			if tc.wantReserved != nil {
				wantCondition(t, pg, v1alpha1.ConditionCapacityReserved, metav1.ConditionTrue, scheduling.ReasonAwaitingPods, "capacity is reserved for 4 pods not yet created: worker 4 on 2 nodes; each pod of the role that arrives is pinned to a reserved node and released at once")
			} else {
				wantNoCondition(t, pg, v1alpha1.ConditionCapacityReserved)
			}
			if released := !scheduling.HasGate(h.pod("d")); released != tc.wantReleased {
				t.Errorf("driver released = %v, want %v", released, tc.wantReleased)
			}
		})
	}
}

// TestSyncWorkersClaimReservations: each worker that arrives takes a
// reserved place: it is recorded on that node in the write that shrinks
// the reservation, then pinned there and released. A worker larger than
// its template takes no place and waits to be placed like any joiner.
func TestSyncWorkersClaimReservations(t *testing.T) {
	tests := []struct {
		name          string
		workers       []*corev1.Pod
		wantPinned    map[string]string // pod: node
		wantGated     []string
		wantReserved  map[string]int32
		wantCondition string // reason of CapacityReserved
	}{
		{
			name:          "workers fill the reservations, and the condition says all were claimed",
			workers:       pods("w", 3, inRole("worker"), requests("3")),
			wantPinned:    map[string]string{"w-0": "n1", "w-1": "n1", "w-2": "n2"},
			wantReserved:  map[string]int32{},
			wantCondition: scheduling.ReasonAllClaimed,
		},
		{
			name:          "a worker smaller than its template claims too; the rest stays reserved",
			workers:       pods("w", 1, inRole("worker"), requests("1")),
			wantPinned:    map[string]string{"w-0": "n1"},
			wantReserved:  map[string]int32{"n1": 1, "n2": 1},
			wantCondition: scheduling.ReasonAwaitingPods,
		},
		{
			name:          "a worker larger than its template claims nothing",
			workers:       pods("w", 1, inRole("worker"), requests("6")),
			wantGated:     []string{"w-0"},
			wantReserved:  map[string]int32{"n1": 2, "n2": 1},
			wantCondition: scheduling.ReasonAwaitingPods,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pg := newGroup(4, sparkRoles(3, "3"), admittedAt(t0.Add(-time.Minute)), reserved(
				v1alpha1.RoleReservation{Role: "worker", Node: "n1", Count: 2},
				v1alpha1.RoleReservation{Role: "worker", Node: "n2", Count: 1}))
			// n1 has 8 cpu: the driver (1) and two places (6); n2 has one place
			// (3) of 4: a worker of 6 fits nowhere else.
			objs := objects(pg, append(tc.workers, newPod("d", inRole("driver"), requests("1"), ungated, running, onNode("n1")))...)
			objs = append(objs, newNode("n1", "8"), newNode("n2", "4"))
			h := newHarness(t, capacityMode, objs...)
			h.sync()
			got := h.group()
			for name, node := range tc.wantPinned {
				if p := h.pod(name); scheduling.HasGate(p) || scheduling.PinnedNode(p) != node {
					t.Errorf("pod %s: gated=%v pinned to %q, want released on %s", name, scheduling.HasGate(p), scheduling.PinnedNode(p), node)
				}
			}
			for _, name := range tc.wantGated {
				if !scheduling.HasGate(h.pod(name)) {
					t.Errorf("pod %s released, want it gated", name)
				}
			}
			if r := reservedCount(got); len(r) != len(tc.wantReserved) || func() bool {
				for n, c := range tc.wantReserved {
					if r[n] != c {
						return true
					}
				}
				return false
			}() {
				t.Errorf("reservations %v, want %v", got.Status.Reservations, tc.wantReserved)
			}
			c := cond(got, v1alpha1.ConditionCapacityReserved)
			if c == nil || c.Reason != tc.wantCondition {
				t.Errorf("CapacityReserved = %+v, want reason %s", c, tc.wantCondition)
			}
			// The claim is recorded before the pod is pinned.
			if len(tc.wantPinned) > 0 {
				calls := h.mutations()
				if len(calls) == 0 || !strings.Contains(calls[0], "podgroups") {
					t.Errorf("calls %v: want the status write that claims before any pod patch", calls)
				}
			}
		})
	}
}

// TestSyncReservationsExpire: places not claimed within the timeout,
// counted from admission, are given back: the group says so, and its
// capacity goes to the next gang. A role's own timeout overrides the flag.
func TestSyncReservationsExpire(t *testing.T) {
	roleTimeout := func(seconds int32) groupMod {
		return func(pg *v1alpha1.PodGroup) { pg.Spec.Roles[1].ReservationTimeoutSeconds = &seconds }
	}
	tests := []struct {
		name     string
		mods     []groupMod
		admitted time.Duration // before t0
		wantKept bool
		wantNext time.Duration // the sync's requeue, when kept
	}{
		{name: "within the flag's 5m: kept, and the sync comes back when it ends", admitted: 4 * time.Minute, wantKept: true, wantNext: time.Minute},
		{name: "past the flag's 5m: given back", admitted: 6 * time.Minute},
		{name: "a role's own 10m keeps it past the flag's", admitted: 6 * time.Minute, mods: []groupMod{roleTimeout(600)}, wantKept: true, wantNext: 4 * time.Minute},
		{name: "a role's own 60s gives it back before the flag's", admitted: 2 * time.Minute, mods: []groupMod{roleTimeout(60)}},
		{name: "a role's 68 years, stored before the bound, end at the bound's hour", admitted: time.Hour + time.Second, mods: []groupMod{roleTimeout(2147483647)}},
		{name: "within the bound's hour a long timeout keeps it", admitted: 59 * time.Minute, mods: []groupMod{roleTimeout(2147483647)}, wantKept: true, wantNext: time.Minute},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mods := append([]groupMod{sparkRoles(2, "3")}, tc.mods...)
			mods = append(mods, admittedAt(t0.Add(-tc.admitted)), reserved(v1alpha1.RoleReservation{Role: "worker", Node: "n1", Count: 2}))
			pg := newGroup(3, mods...)
			h := newHarness(t, capacityMode, append(objects(pg, newPod("d", inRole("driver"), requests("1"), ungated, running, onNode("n1"))), newNode("n1", "8"))...)
			next := h.sync()
			got := h.group()
			c := cond(got, v1alpha1.ConditionCapacityReserved)
			if tc.wantKept {
				if len(got.Status.Reservations) != 1 || c == nil || c.Status != metav1.ConditionTrue {
					t.Fatalf("reservations %v, CapacityReserved %+v: want kept, True", got.Status.Reservations, c)
				}
				if next != tc.wantNext {
					t.Errorf("sync requeues after %s, want %s (when the reservation ends)", next, tc.wantNext)
				}
				return
			}
			if len(got.Status.Reservations) != 0 {
				t.Errorf("reservations %v, want none", got.Status.Reservations)
			}
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != scheduling.ReasonReservationExpired || !strings.Contains(c.Message, "2 of the 2 pods of role worker did not arrive within") {
				t.Errorf("CapacityReserved = %+v, want False/%s naming the role", c, scheduling.ReasonReservationExpired)
			}
			if ev := h.events(); !containsPrefix(ev, "Warning ReservationExpired") {
				t.Errorf("events %q, want a ReservationExpired warning", ev)
			}
		})
	}
}

// TestReservationsHoldCapacity: while a group holds reservations, the
// capacity is not given to another gang; once they expire, it is.
func TestReservationsHoldCapacity(t *testing.T) {
	spark := newGroup(3, sparkRoles(2, "3"), admittedAt(t0.Add(-time.Minute)), reserved(v1alpha1.RoleReservation{Role: "worker", Node: "n1", Count: 2}))
	objs := append(objects(spark, newPod("d", inRole("driver"), requests("1"), ungated, running, onNode("n1"))), newNode("n1", "8"))
	objs = append(objs, newGroup(2, func(g *v1alpha1.PodGroup) { g.Name = "b"; g.UID = "uid-b" }))
	for _, p := range pods("b", 2, requests("2"), inGroup("b")) {
		objs = append(objs, p)
	}
	h := newHarness(t, func(c *Config) { capacityMode(c); c.ReservationTimeout = 2 * time.Minute }, objs...)
	syncB := func() {
		t.Helper()
		if _, err := h.c.sync(t.Context(), gk(testNS+"/b")); err != nil {
			t.Fatal(err)
		}
		h.admission().RunCycle()
	}
	syncB()
	if reason, msg, ok := h.admission().WaitReason(gk(testNS + "/b")); !ok || reason != scheduling.ReasonInsufficientCapacity {
		t.Fatalf("gang b: %s %q, %v; want it waiting for capacity the reservation holds", reason, msg, ok)
	}
	h.step(2 * time.Minute) // the reservation expires, and its write is observed.
	h.observe()
	syncB()
	if ok := h.admission().Decided(gk(testNS + "/b")); !ok {
		t.Fatalf("gang b not admitted after the reservation was given back")
	}
}

func containsPrefix(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}
