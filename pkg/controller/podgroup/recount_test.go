package podgroup

import (
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// TestSyncRefusesRecounts (issue 21, item 7): a tracking finalizer put back
// on a pod that was already counted never counts it again, however often it
// is put back, and it is taken off again so that nothing is left stuck. A
// finished pod whose finalizer was never taken off is still counted once.
func TestSyncRefusesRecounts(t *testing.T) {
	noBatching := func(c *Config) { c.StatusBatchPeriod = 0 }
	finishedGroup := func(mods ...groupMod) *v1alpha1.PodGroup {
		return admitted(2, append([]groupMod{finishedAt(v1alpha1.ReasonSucceeded, t0.Add(-time.Minute)), counts(2, 0)}, mods...)...)
	}
	cases := []struct {
		name string
		objs []runtime.Object
		// readds is how many times the finalizer is put back on pod "a",
		// after a first sync, each followed by syncs until nothing changes.
		readds        int
		wantSucceeded int32
		wantFailed    int32
		// wantRefused says a FinalizerReadded event is expected on "a".
		wantRefused bool
	}{{
		name:          "after the group finished: a finished pod with the finalizer is never counted, even after a restart",
		objs:          objects(finishedGroup(), newPod("a", succeeded), newPod("b", succeeded, noFinalizer)),
		wantSucceeded: 2,
		wantRefused:   true,
	}, {
		name:          "after the group finished: three re-adds leave succeeded at 2 (the confirmed 2 to 5)",
		objs:          objects(finishedGroup(), newPod("a", succeeded, noFinalizer), newPod("b", succeeded, noFinalizer)),
		readds:        3,
		wantSucceeded: 2,
		wantRefused:   true,
	}, {
		name:          "after the group finished: a failed pod put back is not counted as failed either",
		objs:          objects(finishedGroup(), newPod("a", failed)),
		wantSucceeded: 2,
		wantRefused:   true,
	}, {
		name:          "a running group: a pod counted by this controller and put back three times is counted once",
		objs:          objects(admitted(2), newPod("a", succeeded), newPod("busy", running)),
		readds:        3,
		wantSucceeded: 1,
		wantRefused:   true,
	}, {
		name:          "a running group: a finished pod that kept its finalizer since creation is counted once",
		objs:          objects(admitted(2), newPod("a", failed), newPod("busy", running)),
		wantFailed:    1,
		wantSucceeded: 0,
	}, {
		name:          "a recorded, uncounted pod is counted, not refused, although the group finished meanwhile",
		objs:          objects(finishedGroup(uncounted(uids("a"), nil)), newPod("a", succeeded)),
		wantSucceeded: 3,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, noBatching, tc.objs...)
			var events []string
			settle := func() {
				for range 3 {
					h.step(time.Second)
					events = append(events, h.events()...)
				}
			}
			h.sync()
			events = append(events, h.events()...)
			settle()
			for range tc.readds {
				a := h.pod("a")
				if scheduling.HasTrackingFinalizer(a) {
					t.Fatalf("a still carries the finalizer before it is put back: %v", a.Finalizers)
				}
				a.Finalizers = append(a.Finalizers, scheduling.TrackingFinalizer)
				h.setPod(a)
				settle()
			}
			pg := h.group()
			wantCounts(t, pg, tc.wantSucceeded, tc.wantFailed)
			wantUncounted(t, pg, nil, nil)
			if scheduling.HasTrackingFinalizer(h.pod("a")) {
				t.Errorf("a keeps the finalizer put back on it: nothing may be left stuck")
			}
			refused := slices.ContainsFunc(events, func(e string) bool {
				return e == "Warning FinalizerReadded finalizer scheduling.muster.dev/tracking was added back after this pod ended and was counted in PodGroup pg; it is removed again and the pod is not counted twice"
			})
			if refused != tc.wantRefused {
				t.Errorf("FinalizerReadded event = %v, want %v (events %q)", refused, tc.wantRefused, events)
			}
		})
	}
}

// TestCountedPodsAreBounded: the UIDs remembered as counted go with their
// pods, so deleted pods leave nothing behind.
func TestCountedPodsAreBounded(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.StatusBatchPeriod = 0 }, objects(admitted(2), newPod("a", succeeded), newPod("busy", running))...)
	h.sync()
	h.step(time.Second)
	if !h.c.memory.expecting(testKey, uidsCounted, "uid-a") {
		t.Fatalf("a, counted, is not remembered")
	}
	h.deletePod("a")
	h.step(time.Second)
	if h.c.memory.expecting(testKey, uidsCounted, "uid-a") {
		t.Errorf("a is remembered after it was deleted")
	}
}
