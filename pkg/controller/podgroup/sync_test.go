package podgroup

import (
	"context"
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

func TestSyncErrors(t *testing.T) {
	cases := []struct {
		name    string
		key     string
		objs    []runtime.Object
		setup   func(h *harness)
		wantErr bool
		check   func(t *testing.T, h *harness)
	}{{
		name: "a malformed key is dropped without an error",
		key:  "a/b/c",
	}, {
		name: "a failed first status write acts on nothing",
		key:  testKey.String(),
		objs: objects(newGroup(2), pods("p", 2)...),
		setup: func(h *harness) {
			h.muster.PrependReactor("update", "podgroups", func(k8sAction) (bool, runtime.Object, error) {
				return true, nil, errors.New("injected")
			})
		},
		wantErr: true,
		check: func(t *testing.T, h *harness) {
			if got := h.podPatches(); len(got) != 0 {
				t.Errorf("pods patched after a failed status write: %v", got)
			}
		},
	}, {
		name: "a failed first status write removes no finalizer",
		key:  testKey.String(),
		objs: objects(admitted(2), newPod("ok", succeeded), newPod("busy", running)),
		setup: func(h *harness) {
			h.muster.PrependReactor("update", "podgroups", func(k8sAction) (bool, runtime.Object, error) {
				return true, nil, errors.New("injected")
			})
		},
		wantErr: true,
		check: func(t *testing.T, h *harness) {
			if got := h.podPatches(); len(got) != 0 {
				t.Errorf("finalizers removed before their UIDs were stored: %v", got)
			}
			if !scheduling.HasTrackingFinalizer(h.pod("ok")) {
				t.Errorf("ok lost its finalizer")
			}
		},
	}, {
		name: "a failed first status write still takes the finalizer off pods recorded in status and off deleted pods that never ran",
		key:  testKey.String(),
		objs: objects(admitted(2, uncounted(uids("ok"), nil)), newPod("ok", succeeded), newPod("fresh", succeeded),
			newPod("gone", deletedAt(t0.Add(time.Minute))), newPod("busy", running)),
		setup: func(h *harness) {
			h.muster.PrependReactor("update", "podgroups", func(k8sAction) (bool, runtime.Object, error) {
				return true, nil, errors.New("injected")
			})
		},
		wantErr: true,
		check: func(t *testing.T, h *harness) {
			for _, n := range []string{"ok", "gone"} {
				if scheduling.HasTrackingFinalizer(h.pod(n)) {
					t.Errorf("%s keeps its finalizer: releasing it waited on a failed status write", n)
				}
			}
			if !scheduling.HasTrackingFinalizer(h.pod("fresh")) {
				t.Errorf("fresh lost its finalizer before its UID was stored")
			}
		},
	}, {
		name: "a failing gate patch does not stop the finalizer removal and the count of a recorded pod in the same sync",
		key:  testKey.String(),
		objs: objects(admitted(2, uncounted(uids("ok"), nil)), newPod("ok", succeeded), newPod("busy", running), newPod("joiner")),
		setup: func(h *harness) {
			h.failPatches(apierrors.NewServiceUnavailable("injected"), "joiner")
		},
		wantErr: true,
		check: func(t *testing.T, h *harness) {
			if scheduling.HasTrackingFinalizer(h.pod("ok")) {
				t.Errorf("ok keeps its finalizer: releasing it waited on a failed gate patch")
			}
			wantCounts(t, h.group(), 1, 0)
			if g := gateNames(h.pod("joiner")); len(g) != 1 {
				t.Errorf("joiner gates = %v, want still gated", g)
			}
			h.heal()
			h.step(time.Second)
			if g := gateNames(h.pod("joiner")); len(g) != 0 {
				t.Errorf("joiner gates = %v after the retry, want released", g)
			}
			wantCounts(t, h.group(), 1, 0)
		},
	}, {
		name: "a failed second status write is returned; the next sync counts from what was stored",
		key:  testKey.String(),
		objs: objects(admitted(2), newPod("ok", succeeded), newPod("busy", running)),
		setup: func(h *harness) {
			n := 0
			h.muster.PrependReactor("update", "podgroups", func(k8sAction) (bool, runtime.Object, error) {
				n++
				if n == 2 && !h.healed.Load() {
					return true, nil, errors.New("injected")
				}
				return false, nil, nil
			})
		},
		wantErr: true,
		check: func(t *testing.T, h *harness) {
			pg := h.group()
			wantUncounted(t, pg, uids("ok"), nil)
			wantCounts(t, pg, 0, 0)
			h.heal()
			h.step(time.Second)
			pg = h.group()
			wantUncounted(t, pg, nil, nil)
			wantCounts(t, pg, 1, 0)
		},
	}, {
		name: "a sync from a stale PodGroup cache starts from the controller's own last write: no Conflict, nothing counted twice",
		key:  testKey.String(),
		objs: objects(admitted(2), newPod("ok", succeeded), newPod("busy", running)),
		setup: func(h *harness) {
			h.sync() // counts ok; the group's cache does not see it.
			h.observePods()
			h.reset()
			// Past the batch period, so that the refreshed counters are written.
			h.clock.Step(2 * time.Second)
		},
		check: func(t *testing.T, h *harness) {
			if got := h.mutations(); len(got) > 1 {
				t.Errorf("calls = %q, want at most one status write", got)
			}
			pg := h.group()
			wantCounts(t, pg, 1, 0)
			wantUncounted(t, pg, nil, nil)
			h.step(time.Second)
			wantCounts(t, h.group(), 1, 0)
		},
	}, {
		name: "a stale cache after someone else's write still fails with a Conflict and writes nothing",
		key:  testKey.String(),
		objs: objects(admitted(2), newPod("ok", succeeded), newPod("busy", running)),
		setup: func(h *harness) {
			h.sync() // counts ok; the group's cache does not see it.
			pg := h.group()
			pg.Status.Conditions[0].Message = "written by another client"
			pg.ResourceVersion = "written-by-another-client"
			if err := h.muster.Tracker().Update(podGroupsGVR, pg, testNS); err != nil {
				t.Fatalf("updating group: %v", err)
			}
			h.setPod(newPod("busy", running, ready)) // something for the next sync to write
			h.observePods()
			h.reset()
			h.clock.Step(2 * time.Second)
		},
		wantErr: true,
		check: func(t *testing.T, h *harness) {
			if got := h.mutations(); len(got) != 1 || got[0] != "update podgroups/status pg" {
				t.Errorf("calls = %q, want one rejected status write", got)
			}
			pg := h.group()
			wantCounts(t, pg, 1, 0)
			wantUncounted(t, pg, nil, nil)
			h.step(time.Second)
			wantCounts(t, h.group(), 1, 0)
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Errors, not batching: every change is written at once.
			h := newHarness(t, func(c *Config) { c.StatusBatchPeriod = 0 }, tc.objs...)
			if tc.setup != nil {
				tc.setup(h)
			}
			_, err := h.c.sync(t.Context(), gk(tc.key))
			if (err != nil) != tc.wantErr {
				t.Fatalf("sync error = %v, want error %v", err, tc.wantErr)
			}
			if tc.check != nil {
				tc.check(t, h)
			}
		})
	}
}

// TestProcessNextWorkItem checks what the queue does with a sync's result,
// on a queue driven by the fake clock.
func TestProcessNextWorkItem(t *testing.T) {
	cases := []struct {
		name string
		objs []runtime.Object
		// failStatus makes status writes fail.
		failStatus bool
		requeues   int
		// back is when the key comes back to the queue; 0 for never.
		back time.Duration
	}{{
		name: "a successful sync with nothing to wait for forgets the key",
		objs: objects(newGroup(2), pods("p", 2)...),
	}, {
		name:       "a failed sync goes back to the queue with backoff",
		objs:       objects(newGroup(2), pods("p", 2)...),
		failStatus: true,
		requeues:   1,
		back:       5 * time.Millisecond,
	}, {
		name: "a sync that waits for the release grace comes back when it ends",
		objs: objects(admitted(2), newPod("a", failed)),
		back: 30 * time.Second,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil, tc.objs...)
			h.c.queue.ShutDown()
			h.c.queue = workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[scheduling.GroupKey](),
				workqueue.TypedRateLimitingQueueConfig[scheduling.GroupKey]{Clock: h.clock})
			t.Cleanup(h.c.queue.ShutDown)
			if tc.failStatus {
				h.muster.PrependReactor("update", "podgroups", func(k8sAction) (bool, runtime.Object, error) {
					return true, nil, errors.New("injected")
				})
			}
			h.c.queue.Add(testKey)
			if !h.c.processNextWorkItem(t.Context()) {
				t.Fatal("processNextWorkItem reported a shut-down queue")
			}
			if got := h.c.queue.NumRequeues(testKey); got != tc.requeues {
				t.Errorf("requeues = %d, want %d", got, tc.requeues)
			}
			if got := h.c.queue.Len(); got != 0 {
				t.Fatalf("queue length = %d right after the sync, want 0", got)
			}
			if tc.back == 0 {
				return // the sync returned no delay; the tables above check that.
			}
			h.clock.Step(tc.back - time.Nanosecond)
			if h.c.queue.Len() != 0 {
				t.Errorf("the key came back before %s", tc.back)
			}
			h.clock.Step(time.Nanosecond)
			err := wait.PollUntilContextTimeout(t.Context(), time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
				return h.c.queue.Len() == 1, nil
			})
			if err != nil {
				t.Errorf("the key did not come back after %s", tc.back)
			}
		})
	}
}
