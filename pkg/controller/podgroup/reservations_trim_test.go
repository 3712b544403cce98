package podgroup

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/apis/scheduling/validation"
)

// TestSyncTrimsReservationsOfALoweredCount (issue 21, item 10): a
// createdLater role's count lowered after admission leaves no more places
// reserved than the role still misses, so the status write the sync makes
// is one validation accepts, and so is every later one.
func TestSyncTrimsReservationsOfALoweredCount(t *testing.T) {
	res := func(node string, n int32) v1alpha1.RoleReservation {
		return v1alpha1.RoleReservation{Role: "worker", Node: node, Count: n}
	}
	tests := []struct {
		name    string
		workers int32 // the role's count, after the change
		running int   // workers that run
		want    map[string]int32
	}{
		{name: "lowered below the reservations: trimmed to the count", workers: 1, want: map[string]int32{"n1": 1}},
		{name: "lowered to the workers that run: none left", workers: 2, running: 2, want: map[string]int32{}},
		{name: "lowered, one worker running: trimmed to what is missing", workers: 3, running: 1, want: map[string]int32{"n1": 2}},
		{name: "unchanged: kept", workers: 4, want: map[string]int32{"n1": 2, "n2": 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pg := newGroup(tc.workers+1, sparkRoles(tc.workers, "1"), admittedAt(t0.Add(-time.Minute)), reserved(res("n1", 2), res("n2", 2)))
			ps := []*corev1.Pod{newPod("d", inRole("driver"), requests("1"), ungated, running, onNode("n1"))}
			for _, w := range pods("w", tc.running, inRole("worker"), requests("1"), ungated, running, onNode("n2")) {
				ps = append(ps, w)
			}
			h := newHarness(t, capacityMode, append(objects(pg, ps...), newNode("n1", "8"), newNode("n2", "8"))...)
			h.sync()
			got := h.group()
			if have := reservedCount(got); len(have) != len(tc.want) || !mapsEqual(have, tc.want) {
				t.Errorf("reservations %v, want %v by node", got.Status.Reservations, tc.want)
			}
			if errs := validateStatusWrite(t, got, pg); len(errs) > 0 {
				t.Errorf("the status written is invalid: %v", errs)
			}
		})
	}
}

func mapsEqual(a, b map[string]int32) bool {
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return len(a) == len(b)
}

// validateStatusWrite runs the server's validation of a status write from
// old to pg.
func validateStatusWrite(t *testing.T, pg, old *v1alpha1.PodGroup) []error {
	t.Helper()
	var in, was scheduling.PodGroup
	if err := v1alpha1.Convert_v1alpha1_PodGroup_To_scheduling_PodGroup(pg, &in, nil); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.Convert_v1alpha1_PodGroup_To_scheduling_PodGroup(old, &was, nil); err != nil {
		t.Fatal(err)
	}
	var out []error
	for _, e := range validation.ValidatePodGroupStatusUpdate(&in, &was) {
		out = append(out, e)
	}
	return out
}
