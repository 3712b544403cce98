package podgroup

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// TestSyncExpireCreatedGroups: a group the controller created from pod
// annotations is deleted --created-group-ttl (1h by default) after it
// finished, once no pod is left; any other group, or one with pods left,
// stays.
func TestSyncExpireCreatedGroups(t *testing.T) {
	createdFromPods := func(pg *v1alpha1.PodGroup) {
		pg.Annotations = map[string]string{scheduling.CreatedFromPodAnnotation: "p-0"}
	}
	tests := []struct {
		name        string
		mods        []groupMod
		pods        []*corev1.Pod
		wantDeleted bool
		wantNext    time.Duration // the sync's requeue when kept
	}{
		{name: "created from pods, finished over an hour ago, no pods: deleted",
			mods: []groupMod{createdFromPods, finishedAt(v1alpha1.ReasonSucceeded, t0.Add(-61*time.Minute)), counts(2, 0)}, wantDeleted: true},
		{name: "created from pods, finished 40 minutes ago: kept until the hour is up",
			mods: []groupMod{createdFromPods, finishedAt(v1alpha1.ReasonSucceeded, t0.Add(-40*time.Minute)), counts(2, 0)}, wantNext: 20 * time.Minute},
		{name: "created from pods, finished, a pod left: kept",
			mods: []groupMod{createdFromPods, finishedAt(v1alpha1.ReasonSucceeded, t0.Add(-2*time.Hour)), counts(2, 0)},
			pods: []*corev1.Pod{newPod("p-0", succeeded, noFinalizer)}},
		{name: "created by a user: kept",
			mods: []groupMod{finishedAt(v1alpha1.ReasonSucceeded, t0.Add(-2*time.Hour)), counts(2, 0)}},
		{name: "created from pods, not finished: kept",
			mods: []groupMod{createdFromPods}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mods := append([]groupMod{admittedAt(t0.Add(-3 * time.Hour)), scheduledAt(t0.Add(-3 * time.Hour))}, tc.mods...)
			h := newHarness(t, nil, objects(newGroup(2, mods...), tc.pods...)...)
			next := h.sync()
			deleted := false
			for _, c := range h.mutations() {
				deleted = deleted || strings.HasPrefix(c, "delete podgroups")
			}
			if deleted != tc.wantDeleted {
				t.Fatalf("deleted = %v, want %v (calls %v)", deleted, tc.wantDeleted, h.mutations())
			}
			if tc.wantDeleted {
				if ev := h.events(); !containsPrefix(ev, "Normal Expired deleted: created from pod annotations") {
					t.Errorf("events %q, want an Expired event", ev)
				}
			} else if tc.wantNext > 0 {
				// Kept for now; deleted once the rest of the hour has passed.
				if next <= 0 || next > tc.wantNext {
					t.Errorf("requeue after %s, want at most %s", next, tc.wantNext)
				}
				h.step(tc.wantNext)
				if calls := strings.Join(h.mutations(), ";"); !strings.Contains(calls, "delete podgroups") {
					t.Errorf("not deleted once the TTL passed: calls %v", calls)
				}
			}
		})
	}
}

// TestLastPodSeenIsBounded: the time a group's newest pod was seen is kept
// only while the group has pods, so pods of groups that never come, once
// deleted, leave nothing behind.
func TestLastPodSeenIsBounded(t *testing.T) {
	h := newHarness(t, nil)
	h.addPod(newPod("p-0"))
	h.observe()
	_, seen := h.c.memory.lastPodSeenOf(testKey)
	if !seen {
		t.Fatalf("lastPodSeen has no entry for a group with a pod")
	}
	h.deletePod("p-0")
	h.observe()
	h.sync()
	if n := h.c.memory.lastPodsSeen(); n != 0 {
		t.Errorf("lastPodSeen holds %d entries after the group's last pod went, want 0", n)
	}
}

// TestSyncExpireNeverAdmittedCreatedGroups (issue 21, item 5): a group the
// controller created from pod annotations that was never admitted, and
// whose pods are all gone, is deleted --created-group-ttl after its last pod
// went, measured from a condition so that a restart does not reset it. A
// group with a pod, or one a user created, stays.
func TestSyncExpireNeverAdmittedCreatedGroups(t *testing.T) {
	createdFromPods := func(pg *v1alpha1.PodGroup) {
		pg.Annotations = map[string]string{scheduling.CreatedFromPodAnnotation: "p-0"}
	}
	tests := []struct {
		name       string
		mods       []groupMod
		pods       []*corev1.Pod
		wantReason string
		// wantDeletedAfter is when, from the first sync, the group is
		// deleted; 0 when it stays.
		wantDeletedAfter time.Duration
	}{
		{name: "created from pods, never admitted, its pods gone: deleted an hour after they went",
			mods: []groupMod{createdFromPods}, wantReason: scheduling.ReasonNoPods, wantDeletedAfter: time.Hour},
		{name: "created from pods, waiting for pods for a day when its last pod went: the hour starts when it went",
			mods:       []groupMod{createdFromPods, condition(v1alpha1.ConditionAdmitted, metav1.ConditionFalse, scheduling.ReasonWaitingForPods, t0.Add(-24*time.Hour))},
			wantReason: scheduling.ReasonNoPods, wantDeletedAfter: time.Hour},
		{name: "created from pods, never admitted, with a gated pod: kept",
			mods: []groupMod{createdFromPods}, pods: []*corev1.Pod{newPod("p-0")}, wantReason: scheduling.ReasonWaitingForPods},
		{name: "created by a user, never admitted, no pods: kept, waiting for pods",
			wantReason: scheduling.ReasonWaitingForPods},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil, objects(newGroup(2, tc.mods...), tc.pods...)...)
			next := h.sync()
			wantCondition(t, h.group(), v1alpha1.ConditionAdmitted, metav1.ConditionFalse, tc.wantReason, "")
			deleted := func() bool {
				return slices.ContainsFunc(h.mutations(), func(c string) bool { return strings.HasPrefix(c, "delete podgroups") })
			}
			if deleted() {
				t.Fatalf("deleted at once: calls %v", h.mutations())
			}
			if tc.wantDeletedAfter == 0 {
				if next >= time.Hour {
					t.Errorf("requeued after %s for a group that stays", next)
				}
				h.step(25 * time.Hour)
				if deleted() {
					t.Errorf("deleted: calls %v", h.mutations())
				}
				return
			}
			if next <= 0 || next > tc.wantDeletedAfter {
				t.Errorf("requeue after %s, want at most %s", next, tc.wantDeletedAfter)
			}
			// A restart keeps the wait: a new controller reads it from status.
			h2 := newHarness(t, nil, h.snapshot()...)
			h2.clock.SetTime(h.clock.Now())
			h2.step(tc.wantDeletedAfter - time.Minute)
			if slices.ContainsFunc(h2.mutations(), func(c string) bool { return strings.HasPrefix(c, "delete podgroups") }) {
				t.Fatalf("deleted before the TTL: calls %v", h2.mutations())
			}
			h2.step(time.Minute)
			if !slices.ContainsFunc(h2.mutations(), func(c string) bool { return strings.HasPrefix(c, "delete podgroups") }) {
				t.Fatalf("not deleted once the TTL passed: calls %v", h2.mutations())
			}
			if ev := h2.events(); !containsPrefix(ev, "Normal Expired deleted: created from pod annotations, never admitted, its last pod gone 1h0m0s ago") {
				t.Errorf("events %q, want an Expired event", ev)
			}
		})
	}
}

// TestNoPodsEndsWhenAPodAppears: a created group waiting out its TTL with
// no pods waits for pods again, and is kept, once a pod of it appears.
func TestNoPodsEndsWhenAPodAppears(t *testing.T) {
	h := newHarness(t, nil, newGroup(2, func(pg *v1alpha1.PodGroup) {
		pg.Annotations = map[string]string{scheduling.CreatedFromPodAnnotation: "p-0"}
	}))
	h.sync()
	wantCondition(t, h.group(), v1alpha1.ConditionAdmitted, metav1.ConditionFalse, scheduling.ReasonNoPods, "")
	h.clock.Step(40 * time.Minute)
	h.addPod(newPod("p-1"))
	h.step(0)
	wantCondition(t, h.group(), v1alpha1.ConditionAdmitted, metav1.ConditionFalse, scheduling.ReasonWaitingForPods, "")
	h.step(2 * time.Hour)
	if slices.ContainsFunc(h.mutations(), func(c string) bool { return strings.HasPrefix(c, "delete podgroups") }) {
		t.Errorf("deleted with a pod: calls %v", h.mutations())
	}
}
