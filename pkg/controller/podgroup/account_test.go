package podgroup

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

func TestSyncAccount(t *testing.T) {
	noBatching := func(c *Config) { c.StatusBatchPeriod = 0 }
	cases := []struct {
		name    string
		cfg     func(*Config)
		objs    []runtime.Object
		setup   func(h *harness)
		wantErr bool
		// requeue is what the first sync returns.
		requeue time.Duration
		check   func(t *testing.T, h *harness)
	}{{
		name: "finished pods are recorded in status before their finalizers come off, then counted in a later write",
		cfg:  noBatching, // the order of writes, not their batching
		objs: objects(admitted(3), newPod("ok", succeeded), newPod("bad", failed), newPod("busy", running)),
		check: func(t *testing.T, h *harness) {
			calls := h.mutations()
			if len(calls) != 4 {
				t.Fatalf("calls = %q, want status, 2 finalizer patches, status", calls)
			}
			pods := slices.Sorted(slices.Values(calls[1:3]))
			if calls[0] != "update podgroups/status pg" || calls[3] != "update podgroups/status pg" ||
				!slices.Equal(pods, []string{"patch pods bad", "patch pods ok"}) {
				t.Errorf("calls = %q, want status, finalizer patches of bad and ok, status", calls)
			}
			writes := h.statusWrites()
			wantUncounted(t, writes[0], uids("ok"), uids("bad"))
			wantCounts(t, writes[0], 0, 0)
			wantUncounted(t, writes[1], nil, nil)
			wantCounts(t, writes[1], 1, 1)
			patches := h.podPatches()
			for n, result := range map[string]corev1.PodPhase{"ok": corev1.PodSucceeded, "bad": corev1.PodFailed} {
				if want := []string{countedFinalizerPatch(newPod(n), 0, result, h.group().UID)}; !slices.Equal(patches[n], want) {
					t.Errorf("patches of %s:\n got %s\nwant %s", n, patches[n], want)
				}
				if scheduling.HasTrackingFinalizer(h.pod(n)) {
					t.Errorf("%s keeps its tracking finalizer", n)
				}
			}
			if !scheduling.HasTrackingFinalizer(h.pod("busy")) {
				t.Errorf("the running pod lost its tracking finalizer")
			}
		},
	}, {
		name: "a counted pod is not counted again once the informer shows its finalizer gone",
		cfg:  noBatching, // the order of writes, not their batching
		objs: objects(admitted(3), newPod("ok", succeeded), newPod("busy", running)),
		check: func(t *testing.T, h *harness) {
			h.step(time.Minute)
			h.step(time.Minute)
			pg := h.group()
			wantCounts(t, pg, 1, 0)
			wantUncounted(t, pg, nil, nil)
			if got := h.podPatches(); len(got) != 0 {
				t.Errorf("pods patched again: %v", got)
			}
		},
	}, {
		name: "stale cache after a crash-free removal: a pod awaiting its observed removal is not recorded again",
		cfg:  noBatching, // the order of writes, not their batching
		objs: objects(admitted(3), newPod("ok", succeeded), newPod("busy", running)),
		check: func(t *testing.T, h *harness) {
			// The group's informer caught up, the pod's has not: it still shows the finalizer.
			h.clock.Step(time.Minute)
			h.observeGroups()
			h.reset()
			h.sync()
			for i, w := range h.statusWrites() {
				wantUncounted(t, w, nil, nil)
				if w.Status.Succeeded != 1 {
					t.Errorf("write %d: succeeded = %d, want 1", i, w.Status.Succeeded)
				}
			}
			if got := h.podPatches(); len(got) != 0 {
				t.Errorf("pods patched again: %v", got)
			}
			wantCounts(t, h.group(), 1, 0)
			// Once a sync's snapshot shows the removal, the expectation is gone.
			h.observePods()
			h.sync()
			if h.c.memory.expecting(testKey, finalizersRemoved, "uid-ok") {
				t.Errorf("expectation for ok still pending after a sync saw its finalizer gone")
			}
		},
	}, {
		name: "crash after recording: the next sync removes the finalizers and counts them",
		objs: objects(admitted(3, uncounted(uids("ok"), uids("bad"))), newPod("ok", succeeded), newPod("bad", failed), newPod("busy", running)),
		check: func(t *testing.T, h *harness) {
			writes := h.statusWrites()
			if len(writes) == 0 {
				t.Fatal("no status write")
			}
			last := writes[len(writes)-1]
			wantCounts(t, last, 1, 1)
			wantUncounted(t, last, nil, nil)
			for _, w := range writes[:len(writes)-1] {
				wantUncounted(t, w, uids("ok"), uids("bad"))
				wantCounts(t, w, 0, 0)
			}
			if got := h.podPatches(); len(got["ok"]) != 1 || len(got["bad"]) != 1 {
				t.Errorf("patches = %v, want one finalizer patch each for ok and bad", got)
			}
		},
	}, {
		name: "crash after step 3: a recorded pod whose finalizer is gone is counted exactly once",
		objs: objects(admitted(3, uncounted(uids("ok"), uids("bad"))),
			newPod("ok", succeeded, noFinalizer), newPod("bad", failed, noFinalizer), newPod("busy", running)),
		check: func(t *testing.T, h *harness) {
			if got := h.podPatches(); len(got) != 0 {
				t.Errorf("pods patched: %v", got)
			}
			pg := h.group()
			wantCounts(t, pg, 1, 1)
			wantUncounted(t, pg, nil, nil)
			h.step(time.Minute)
			wantCounts(t, h.group(), 1, 1)
		},
	}, {
		name: "a recorded pod that no longer exists is counted",
		objs: objects(admitted(3, uncounted(uids("gone"), nil), counts(2, 0)), newPod("busy", running)),
		check: func(t *testing.T, h *harness) {
			pg := h.group()
			wantCounts(t, pg, 3, 0)
			wantUncounted(t, pg, nil, nil)
		},
	}, {
		name: "a pod whose finalizer patch finds it gone is counted",
		cfg:  noBatching, // the order of writes, not their batching
		objs: objects(admitted(3), newPod("ok", succeeded), newPod("busy", running)),
		setup: func(h *harness) {
			h.deletePod("ok") // the cache still shows it.
		},
		check: func(t *testing.T, h *harness) {
			if got := h.podPatches(); len(got["ok"]) != 1 {
				t.Errorf("ok patches = %v, want 1", got["ok"])
			}
			pg := h.group()
			wantCounts(t, pg, 1, 0)
			wantUncounted(t, pg, nil, nil)
		},
	}, {
		name: "a failed finalizer removal keeps its pod uncounted and still counts the pods whose removal worked",
		cfg:  noBatching, // the order of writes, not their batching
		objs: objects(admitted(3), newPod("ok", succeeded), newPod("stuck", succeeded), newPod("busy", running)),
		setup: func(h *harness) {
			h.failPatches(apierrors.NewServiceUnavailable("injected"), "stuck")
		},
		wantErr: true,
		check: func(t *testing.T, h *harness) {
			pg := h.group()
			wantCounts(t, pg, 1, 0)
			wantUncounted(t, pg, uids("stuck"), nil)
			wantNoCondition(t, pg, v1alpha1.ConditionFinished)
			// The retry removes it and counts it, once.
			h.heal()
			h.step(time.Minute)
			pg = h.group()
			wantCounts(t, pg, 2, 0)
			wantUncounted(t, pg, nil, nil)
			if got := h.podPatches(); len(got) != 1 || len(got["stuck"]) != 1 {
				t.Errorf("patches on retry = %v, want one for stuck", got)
			}
		},
	}, {
		name: "a running pod deleted past its grace period and the report margin is counted as failed and released",
		cfg:  noBatching, // the order of writes, not their batching
		objs: objects(admitted(2), newPod("killed", running, deletedAt(t0.Add(-time.Second-reportMargin))), newPod("busy", running)),
		check: func(t *testing.T, h *harness) {
			writes := h.statusWrites()
			wantUncounted(t, writes[0], nil, uids("killed"))
			pg := h.group()
			wantCounts(t, pg, 0, 1)
			if scheduling.HasTrackingFinalizer(h.pod("killed")) {
				t.Errorf("killed keeps its finalizer")
			}
		},
	}, {
		name:    "a running pod deleted within its grace period is not counted yet, and the sync comes back just after the report margin",
		cfg:     noBatching, // deletion, not batching
		objs:    objects(admitted(2), newPod("leaving", running, deletedAt(t0.Add(10*time.Second))), newPod("busy", running)),
		requeue: 11*time.Second + reportMargin,
		check: func(t *testing.T, h *harness) {
			if got := h.podPatches(); len(got) != 0 {
				t.Errorf("pods patched: %v", got)
			}
			pg := h.group()
			wantCounts(t, pg, 0, 0)
			wantUncounted(t, pg, nil, nil)
			if pg.Status.Active != 1 {
				t.Errorf("active = %d, want 1: a deleted pod is released at once", pg.Status.Active)
			}
			h.step(11*time.Second + reportMargin)
			pg = h.group()
			wantCounts(t, pg, 0, 1)
			if scheduling.HasTrackingFinalizer(h.pod("leaving")) {
				t.Errorf("leaving keeps its finalizer after its grace period")
			}
		},
	}, {
		name:    "a deleted running pod that reports its end within its grace period and the margin counts by its phase",
		cfg:     noBatching, // deletion, not batching
		objs:    objects(admitted(2), newPod("leaving", running, deletedAt(t0.Add(10*time.Second))), newPod("busy", running)),
		requeue: 11*time.Second + reportMargin,
		check: func(t *testing.T, h *harness) {
			h.step(11 * time.Second) // past its deletionTimestamp, in the margin
			wantCounts(t, h.group(), 0, 0)
			p := h.pod("leaving")
			p.Status.Phase = corev1.PodSucceeded
			h.setPod(p)
			h.step(time.Second)
			wantCounts(t, h.group(), 1, 0)
		},
	}, {
		name: "without fast release a deleted running pod stays active, and still counts as failed after its grace period",
		cfg:  func(c *Config) { c.FastRelease = false; c.StatusBatchPeriod = 0 },
		objs: objects(admitted(2), newPod("leaving", running, deletedAt(t0.Add(10*time.Second))), newPod("busy", running)),
		check: func(t *testing.T, h *harness) {
			pg := h.group()
			if pg.Status.Active != 2 {
				t.Errorf("active = %d, want 2", pg.Status.Active)
			}
			h.step(11*time.Second + reportMargin)
			wantCounts(t, h.group(), 0, 1)
		},
		requeue: 11*time.Second + reportMargin,
	}, {
		name: "a deleted pod that never ran loses its finalizer without being counted",
		cfg:  noBatching, // deletion, not batching
		objs: objects(admitted(2), newPod("never-ran", ungated, deletedAt(t0.Add(30*time.Second))), newPod("busy", running)),
		check: func(t *testing.T, h *harness) {
			if got := h.podPatches(); !slices.Equal(got["never-ran"], []string{finalizerPatch(newPod("never-ran"), 0)}) {
				t.Errorf("patches = %v, want a finalizer patch for never-ran", got)
			}
			for _, w := range h.statusWrites() {
				wantUncounted(t, w, nil, nil)
				wantCounts(t, w, 0, 0)
			}
			if scheduling.HasTrackingFinalizer(h.pod("never-ran")) {
				t.Errorf("never-ran keeps its finalizer")
			}
		},
	}, {
		name: "a gated pod deleted before admission loses its finalizer without being counted",
		objs: objects(newGroup(2), newPod("never-ran", deletedAt(t0.Add(30*time.Second))), newPod("waiting")),
		check: func(t *testing.T, h *harness) {
			if scheduling.HasTrackingFinalizer(h.pod("never-ran")) {
				t.Errorf("never-ran keeps its finalizer")
			}
			if !scheduling.HasTrackingFinalizer(h.pod("waiting")) {
				t.Errorf("waiting lost its finalizer")
			}
			wantCounts(t, h.group(), 0, 0)
		},
	}, {
		name:    "at most 500 UIDs per list are recorded; the rest follow on a quick requeue",
		objs:    objects(admitted(502), pods("p", 502, succeeded)...),
		requeue: time.Millisecond,
		check: func(t *testing.T, h *harness) {
			writes := h.statusWrites()
			if len(writes) != 2 {
				t.Fatalf("%d status writes, want 2", len(writes))
			}
			if u := writes[0].Status.UncountedTerminatedPods; u == nil || len(u.Succeeded) != scheduling.MaxUncountedTerminatedPods {
				t.Errorf("first write records %v UIDs, want %d", u, scheduling.MaxUncountedTerminatedPods)
			}
			if got := len(h.podPatches()); got != scheduling.MaxUncountedTerminatedPods {
				t.Errorf("%d finalizers removed, want %d", got, scheduling.MaxUncountedTerminatedPods)
			}
			pg := h.group()
			wantCounts(t, pg, 500, 0)
			wantNoCondition(t, pg, v1alpha1.ConditionFinished)
			if d := h.step(time.Millisecond); d != 0 {
				t.Errorf("second sync requeues after %s, want no requeue", d)
			}
			pg = h.group()
			wantCounts(t, pg, 502, 0)
			wantUncounted(t, pg, nil, nil)
			wantCondition(t, pg, v1alpha1.ConditionFinished, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "")
		},
	}, {
		name: "each list has its own cap of 500",
		objs: objects(admitted(1), concat(pods("s", 500, succeeded), pods("f", 500, failed), []*corev1.Pod{newPod("busy", running)})...),
		check: func(t *testing.T, h *harness) {
			u := h.statusWrites()[0].Status.UncountedTerminatedPods
			if u == nil || len(u.Succeeded) != 500 || len(u.Failed) != 500 {
				t.Errorf("first write records %v, want 500 succeeded and 500 failed", u)
			}
			wantCounts(t, h.group(), 500, 500)
		},
	}, {
		name:    "while pods are active, finished pods wait one batch period from the first of them, then go in one batch",
		objs:    objects(admitted(3), newPod("a", succeeded), newPod("b", running), newPod("c", running)),
		requeue: time.Second,
		check: func(t *testing.T, h *harness) {
			if got := h.podPatches(); len(got) != 0 {
				t.Errorf("pods patched before the batch period ended: %v", got)
			}
			wantCounts(t, h.group(), 0, 0)
			p := h.pod("b")
			p.Status.Phase = corev1.PodSucceeded
			h.setPod(p)
			if d := h.step(100 * time.Millisecond); d != 900*time.Millisecond {
				t.Errorf("requeue = %s, want the rest of the 1s batch period, 900ms", d)
			}
			if got := h.podPatches(); len(got) != 0 {
				t.Errorf("pods patched within the batch period: %v", got)
			}
			if n := len(h.statusWrites()); n != 0 {
				t.Errorf("%d status writes within the batch period, want 0", n)
			}
			h.step(900 * time.Millisecond)
			wantCounts(t, h.group(), 2, 0)
			if n := len(h.statusWrites()); n != 2 {
				t.Errorf("%d status writes for the batch, want 2: record, then count", n)
			}
			if got := h.podPatches(); len(got["a"]) != 1 || len(got["b"]) != 1 {
				t.Errorf("patches = %v, want 1 each for a and b", got)
			}
		},
	}, {
		name:    "the batch period never delays a group with nothing active left",
		objs:    objects(admitted(2), newPod("a", succeeded), newPod("b", running)),
		requeue: time.Second,
		check: func(t *testing.T, h *harness) {
			p := h.pod("b")
			p.Status.Phase = corev1.PodSucceeded
			h.setPod(p)
			h.step(100 * time.Millisecond)
			pg := h.group()
			wantCounts(t, pg, 2, 0)
			wantCondition(t, pg, v1alpha1.ConditionFinished, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "")
		},
	}, {
		name: "a full batch of 500 is recorded at once despite the batch period",
		objs: objects(admitted(1), append(pods("p", 500, succeeded), newPod("busy", running))...),
		setup: func(h *harness) {
			h.c.flushWait(testKey, t0.Add(-100*time.Millisecond)) // a batch is waiting
		},
		check: func(t *testing.T, h *harness) {
			wantCounts(t, h.group(), 500, 0)
		},
	}, {
		name: "a batch period of zero never defers",
		cfg:  func(c *Config) { c.StatusBatchPeriod = 0 },
		objs: objects(admitted(3), newPod("a", succeeded), newPod("b", running), newPod("c", running)),
		check: func(t *testing.T, h *harness) {
			wantCounts(t, h.group(), 1, 0)
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.cfg, tc.objs...)
			if tc.setup != nil {
				tc.setup(h)
			}
			if d := h.syncExpectingErr(tc.wantErr); !tc.wantErr && d != tc.requeue {
				t.Errorf("requeue after %s, want %s", d, tc.requeue)
			}
			tc.check(t, h)
		})
	}
}

// TestSyncCountsExactlyOnce crashes the controller at every point of the
// accounting of a gang and checks that a new controller, starting from what
// the API holds, ends with exact counts.
func TestSyncCountsExactlyOnce(t *testing.T) {
	const n = 6
	start := func() []runtime.Object {
		var ps []*corev1.Pod
		for i := range n {
			mod := succeeded
			if i%3 == 0 {
				mod = failed
			}
			ps = append(ps, newPod(fmt.Sprintf("p-%d", i), mod))
		}
		return objects(admitted(4), ps...)
	}
	forEachCrashPoint(t, start, func(t *testing.T, h *harness) {
		// A new controller: empty expectations, fresh caches.
		after := newHarness(t, nil, h.snapshot()...)
		after.sync()
		after.step(time.Minute)
		pg := after.group()
		wantCounts(t, pg, 4, 2)
		wantUncounted(t, pg, nil, nil)
		wantCondition(t, pg, v1alpha1.ConditionFinished, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "")
		for i := range n {
			if p := after.pod(fmt.Sprintf("p-%d", i)); scheduling.HasTrackingFinalizer(p) {
				t.Errorf("%s keeps its finalizer", p.Name)
			}
		}
	})
}

// forEachCrashPoint runs a sync of the objects start returns, crashing it
// after k writes for every k until a sync makes all its writes, and calls
// check with each crashed harness: every write the first controller made up
// to k is in the API, and none after.
func forEachCrashPoint(t *testing.T, start func() []runtime.Object, check func(t *testing.T, h *harness)) {
	for k := 0; ; k++ {
		h := newHarness(t, nil, start()...)
		writes := 0
		crashed := false
		crash := func() (bool, runtime.Object, error) {
			if writes >= k {
				crashed = true
				return true, nil, errors.New("crashed")
			}
			writes++
			return false, nil, nil
		}
		h.kube.PrependReactor("patch", "pods", func(a k8sAction) (bool, runtime.Object, error) { return crash() })
		h.muster.PrependReactor("update", "podgroups", func(a k8sAction) (bool, runtime.Object, error) { return crash() })
		_, _ = h.c.sync(t.Context(), testKey)
		if !crashed {
			return // every write happened: no crash point is left.
		}
		t.Run(fmt.Sprintf("crash after %d writes", k), func(t *testing.T) { check(t, h) })
	}
}
