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

func groupFinalizerPatch(pg *v1alpha1.PodGroup, index int) string {
	return fmt.Sprintf(`[{"op":"test","path":"/metadata/uid","value":%q},`+
		`{"op":"test","path":"/metadata/finalizers/%d","value":%q},`+
		`{"op":"remove","path":"/metadata/finalizers/%d"}]`, pg.UID, index, scheduling.PodCleanupFinalizer, index)
}

const deletedEvent = "Warning PodGroupDeleted PodGroup pg was deleted; this pod stays gated until a PodGroup of that name is created again"

func TestSyncCleanup(t *testing.T) {
	deleting := func(mods ...groupMod) *v1alpha1.PodGroup {
		return admitted(2, append([]groupMod{groupDeletedAt(t0.Add(-time.Second))}, mods...)...)
	}
	cases := []struct {
		name    string
		objs    []runtime.Object
		setup   func(h *harness)
		wantErr bool
		check   func(t *testing.T, h *harness)
	}{{
		name: "a deleted group's pods lose the tracking finalizer first, then the group loses pod-cleanup",
		objs: objects(deleting(groupFinalizers("example.com/other", scheduling.PodCleanupFinalizer)),
			newPod("busy", running), newPod("done", succeeded), newPod("waiting"), newPod("untracked", running, noFinalizer),
			newPod("shared", running, finalizers("example.com/keep", scheduling.TrackingFinalizer))),
		check: func(t *testing.T, h *harness) {
			calls := h.mutations()
			if len(calls) != 5 || calls[4] != "patch podgroups pg" {
				t.Fatalf("calls = %q, want 4 pod patches, then the group's", calls)
			}
			pods := slices.Sorted(slices.Values(calls[:4]))
			if want := []string{"patch pods busy", "patch pods done", "patch pods shared", "patch pods waiting"}; !slices.Equal(pods, want) {
				t.Errorf("pod patches = %q, want %q", pods, want)
			}
			patches := h.podPatches()
			if want := []string{finalizerPatch(newPod("shared"), 1)}; !slices.Equal(patches["shared"], want) {
				t.Errorf("patches of shared:\n got %s\nwant %s", patches["shared"], want)
			}
			for _, a := range h.muster.Actions() {
				if p, ok := a.(k8sPatchAction); ok {
					if want := groupFinalizerPatch(deleting(), 1); string(p.GetPatch()) != want {
						t.Errorf("group patch:\n got %s\nwant %s", p.GetPatch(), want)
					}
				}
			}
			if got := h.statusWrites(); len(got) != 0 {
				t.Errorf("status written for a deleted group: %+v", got)
			}
			for _, n := range []string{"busy", "done", "waiting", "untracked"} {
				if p := h.pod(n); len(p.Finalizers) != 0 {
					t.Errorf("%s keeps finalizers %v", n, p.Finalizers)
				}
			}
			if f := h.pod("shared").Finalizers; !slices.Equal(f, []string{"example.com/keep"}) {
				t.Errorf("shared finalizers = %v, want only example.com/keep", f)
			}
			if f := h.group().Finalizers; !slices.Equal(f, []string{"example.com/other"}) {
				t.Errorf("group finalizers = %v, want only example.com/other", f)
			}
			if g := gateNames(h.pod("waiting")); !slices.Equal(g, []string{scheduling.AdmissionGate}) {
				t.Errorf("waiting gates = %v, want it to stay gated", g)
			}
			wantEvents(t, h.events(), deletedEvent)
		},
	}, {
		name: "gated pods of a deleted group are told once",
		objs: objects(deleting(groupFinalizers("example.com/other", scheduling.PodCleanupFinalizer)), newPod("waiting")),
		check: func(t *testing.T, h *harness) {
			h.step(time.Second)
			wantEvents(t, h.events())
		},
	}, {
		name:    "a failed pod patch keeps the group's finalizer",
		objs:    objects(deleting(), newPod("busy", running), newPod("stuck", running)),
		setup:   func(h *harness) { h.failPatches(apierrors.NewServiceUnavailable("injected"), "stuck") },
		wantErr: true,
		check: func(t *testing.T, h *harness) {
			if calls := h.mutations(); slices.Contains(calls, "patch podgroups pg") {
				t.Errorf("calls = %q: the group lost its finalizer while a pod kept its own", calls)
			}
			if f := h.group().Finalizers; !slices.Equal(f, []string{scheduling.PodCleanupFinalizer}) {
				t.Errorf("group finalizers = %v, want pod-cleanup kept", f)
			}
			h.heal()
			h.step(time.Second)
			if f := h.group().Finalizers; len(f) != 0 {
				t.Errorf("group finalizers = %v after the retry, want none", f)
			}
		},
	}, {
		name: "the group finalizer patch fails rather than touch a group re-created under the same name",
		objs: objects(deleting()),
		setup: func(h *harness) {
			// The cache still shows the deleted group; the API holds a new one.
			h.recreateGroup(newGroup(2, func(pg *v1alpha1.PodGroup) { pg.UID = "uid-group-2" }))
		},
		wantErr: true,
		check: func(t *testing.T, h *harness) {
			if f := h.group().Finalizers; !slices.Equal(f, []string{scheduling.PodCleanupFinalizer}) {
				t.Errorf("the new group's finalizers = %v, want pod-cleanup kept", f)
			}
		},
	}, {
		name: "a deleted group without pods loses pod-cleanup at once",
		objs: objects(deleting()),
		check: func(t *testing.T, h *harness) {
			if calls := h.mutations(); !slices.Equal(calls, []string{"patch podgroups pg"}) {
				t.Errorf("calls = %q, want only the group's finalizer patch", calls)
			}
			if len(h.group().Finalizers) != 0 {
				t.Errorf("group finalizers = %v, want none", h.group().Finalizers)
			}
		},
	}, {
		name: "a deleted group without the pod-cleanup finalizer is not patched",
		objs: objects(deleting(groupFinalizers("example.com/other")), newPod("busy", running)),
		check: func(t *testing.T, h *harness) {
			if calls := h.mutations(); !slices.Equal(calls, []string{"patch pods busy"}) {
				t.Errorf("calls = %q, want only busy's finalizer patch", calls)
			}
		},
	}, {
		name: "a PodGroup re-created with the same name adopts the gated pods of the deleted one and counts them",
		objs: objects(deleting(), pods("p", 2)...),
		check: func(t *testing.T, h *harness) {
			// The old group is gone; a new one of the same name appears.
			h.recreateGroup(newGroup(2, func(pg *v1alpha1.PodGroup) { pg.UID = "uid-group-2" }))
			h.step(time.Second)
			wantCondition(t, h.group(), v1alpha1.ConditionAdmitted, metav1.ConditionTrue, scheduling.ReasonGangComplete, "")
			for _, n := range []string{"p-0", "p-1"} {
				p := h.pod(n)
				if g := gateNames(p); g != nil {
					t.Errorf("%s still gated: %v", n, g)
				}
				if !scheduling.HasTrackingFinalizer(p) {
					t.Errorf("%s was released without the tracking finalizer: its end would never be counted", n)
				}
				succeeded(p)
				h.setPod(p)
			}
			h.step(time.Second)
			pg := h.group()
			wantCounts(t, pg, 2, 0)
			wantCondition(t, pg, v1alpha1.ConditionFinished, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "")
		},
	}, {
		name: "a re-created group waits for the cache to show the removed finalizer before it adopts a gated pod",
		objs: objects(deleting(), pods("p", 2)...),
		check: func(t *testing.T, h *harness) {
			h.recreateGroup(newGroup(2, func(pg *v1alpha1.PodGroup) { pg.UID = "uid-group-2" }))
			// Only the group's informer caught up: the pods still show the finalizer.
			h.clock.Step(time.Second)
			h.observeGroups()
			h.reset()
			h.sync()
			wantCondition(t, h.group(), v1alpha1.ConditionAdmitted, metav1.ConditionTrue, scheduling.ReasonGangComplete, "")
			if got := h.podPatches(); len(got) != 0 {
				t.Errorf("pods released from a stale cache, without their finalizer: %v", got)
			}
			// The pods' informer shows the removal, and the group is queued again.
			h.observe()
			if h.c.queue.Len() == 0 {
				t.Errorf("the informer's update did not queue the group")
			}
			h.reset()
			h.sync()
			for _, n := range []string{"p-0", "p-1"} {
				if p := h.pod(n); gateNames(p) != nil || !scheduling.HasTrackingFinalizer(p) {
					t.Errorf("%s: gates %v, finalizers %v; want released with the tracking finalizer", n, gateNames(p), p.Finalizers)
				}
			}
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil, tc.objs...)
			if tc.setup != nil {
				tc.setup(h)
			}
			if d := h.syncExpectingErr(tc.wantErr); d != 0 {
				t.Errorf("requeue after %s, want none", d)
			}
			tc.check(t, h)
		})
	}
}
