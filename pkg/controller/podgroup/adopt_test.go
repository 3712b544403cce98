package podgroup

import (
	"fmt"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// wantAdoptPatch is the patch that adopts p as the API holds it now.
func wantAdoptPatch(h *harness, name string) string {
	p := h.pod(name)
	add := fmt.Sprintf(`{"op":"add","path":"/metadata/finalizers","value":[%q]}`, scheduling.TrackingFinalizer)
	if len(p.Finalizers) > 0 {
		add = fmt.Sprintf(`{"op":"add","path":"/metadata/finalizers/-","value":%q}`, scheduling.TrackingFinalizer)
	}
	return fmt.Sprintf(`[{"op":"test","path":"/metadata/uid","value":%q},{"op":"test","path":"/metadata/resourceVersion","value":%q},%s]`,
		p.UID, p.ResourceVersion, add)
}

func TestSyncAdopt(t *testing.T) {
	cases := []struct {
		name string
		objs []runtime.Object
		// setup runs before the first sync; wantErr says that sync fails.
		setup   func(h *harness)
		wantErr bool
		check   func(t *testing.T, h *harness, before map[string]string)
	}{{
		name: "a group re-created while its pods run puts the tracking finalizer back on each, with a patch guarded by uid and resourceVersion",
		objs: objects(newGroup(2), newPod("p-0", running, noFinalizer), newPod("p-1", running, finalizers("example.com/keep"))),
		check: func(t *testing.T, h *harness, before map[string]string) {
			patches := h.podPatches()
			for _, n := range []string{"p-0", "p-1"} {
				if want := []string{before[n]}; !slices.Equal(patches[n], want) {
					t.Errorf("patches of %s:\n got %s\nwant %s", n, patches[n], want)
				}
				if p := h.pod(n); !scheduling.HasTrackingFinalizer(p) {
					t.Errorf("%s not adopted: finalizers %v", n, p.Finalizers)
				}
			}
			if f := h.pod("p-1").Finalizers; !slices.Equal(f, []string{"example.com/keep", scheduling.TrackingFinalizer}) {
				t.Errorf("p-1 finalizers = %v, want the other tool's kept and Muster's appended", f)
			}
		},
	}, {
		name: "adopted pods are counted when they end: the re-created group succeeds with every pod counted",
		objs: objects(newGroup(2), newPod("p-0", running, noFinalizer), newPod("p-1", running, noFinalizer)),
		check: func(t *testing.T, h *harness, _ map[string]string) {
			for _, n := range []string{"p-0", "p-1"} {
				p := h.pod(n)
				succeeded(p)
				h.setPod(p)
			}
			h.step(time.Second)
			pg := h.group()
			wantCounts(t, pg, 2, 0)
			wantCondition(t, pg, v1alpha1.ConditionFinished, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "")
			for _, n := range []string{"p-0", "p-1"} {
				if p := h.pod(n); scheduling.HasTrackingFinalizer(p) {
					t.Errorf("%s keeps the finalizer after it was counted", n)
				}
			}
		},
	}, {
		name: "a running pod of a group that is not admitted yet is adopted too",
		objs: objects(newGroup(3), newPod("p-0", running, noFinalizer), newPod("p-1")),
		check: func(t *testing.T, h *harness, before map[string]string) {
			if got := h.podPatches(); len(got) != 1 || !slices.Equal(got["p-0"], []string{before["p-0"]}) {
				t.Errorf("patches = %v, want only p-0's adoption", got)
			}
		},
	}, {
		name: "finished, deleted, gated and already tracked pods are not adopted",
		objs: objects(newGroup(5),
			newPod("done", succeeded, noFinalizer), newPod("lost", failed, noFinalizer),
			newPod("leaving", running, noFinalizer, deletedAt(t0.Add(time.Minute))),
			newPod("gated", noFinalizer), newPod("tracked", running)),
		check: func(t *testing.T, h *harness, _ map[string]string) {
			if got := h.podPatches(); len(got) != 0 {
				t.Errorf("pods patched: %v", got)
			}
		},
	}, {
		name: "a finished group adopts nobody",
		objs: objects(admitted(1, finishedAt(v1alpha1.ReasonSucceeded, t0.Add(-time.Minute)), counts(1, 0)), newPod("late", running, noFinalizer)),
		check: func(t *testing.T, h *harness, _ map[string]string) {
			if got := h.podPatches(); len(got) != 0 {
				t.Errorf("pods patched: %v", got)
			}
		},
	}, {
		name: "an adoption the cache does not show yet is not sent again",
		objs: objects(newGroup(1), newPod("p-0", running, noFinalizer)),
		check: func(t *testing.T, h *harness, _ map[string]string) {
			h.reset()
			h.clock.Step(time.Second)
			h.sync() // the pod cache still shows p-0 without the finalizer.
			if got := h.podPatches(); len(got) != 0 {
				t.Errorf("adopted again from a stale cache: %v", got)
			}
			h.step(time.Second) // the cache shows it: the expectation settles.
			if got := h.podPatches(); len(got) != 0 {
				t.Errorf("patched once the cache showed the adoption: %v", got)
			}
		},
	}, {
		name: "a pod that changed since it was read fails the resourceVersion test; the next sync adopts it from a fresh read",
		objs: objects(newGroup(1), newPod("p-0", running, noFinalizer)),
		setup: func(h *harness) {
			p := h.pod("p-0")
			p.Annotations = map[string]string{"example.com/touched": "yes"}
			h.setPod(p) // the cache does not show it.
		},
		wantErr: true,
		check: func(t *testing.T, h *harness, _ map[string]string) {
			if p := h.pod("p-0"); scheduling.HasTrackingFinalizer(p) {
				t.Fatalf("adopted from a stale read")
			}
			h.step(time.Second)
			if p := h.pod("p-0"); !scheduling.HasTrackingFinalizer(p) {
				t.Errorf("not adopted from a fresh read: finalizers %v", p.Finalizers)
			}
		},
	}, {
		name:    "a failed adoption is returned for a retry",
		objs:    objects(newGroup(1), newPod("p-0", running, noFinalizer)),
		setup:   func(h *harness) { h.failPatches(apierrors.NewServiceUnavailable("injected"), "p-0") },
		wantErr: true,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil, tc.objs...)
			before := map[string]string{}
			for _, o := range tc.objs {
				if m, ok := o.(metav1.Object); ok && m.GetNamespace() == testNS {
					if _, isGroup := o.(*v1alpha1.PodGroup); !isGroup {
						before[m.GetName()] = wantAdoptPatch(h, m.GetName())
					}
				}
			}
			if tc.setup != nil {
				tc.setup(h)
			}
			h.syncExpectingErr(tc.wantErr)
			if tc.check != nil {
				tc.check(t, h, before)
			}
		})
	}
}
