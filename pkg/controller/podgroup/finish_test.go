package podgroup

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

const waitingMsg2of3 = "no active pods and 1 of 3 needed pods succeeded; failing in 30s unless a replacement pod appears"

func TestSyncFinish(t *testing.T) {
	cases := []struct {
		name    string
		cfg     func(*Config)
		objs    []runtime.Object
		requeue time.Duration
		check   func(t *testing.T, h *harness)
	}{{
		name: "no pod active and succeeded >= minCount: Finished=True/Succeeded with completionTime, in the write that counts them",
		objs: objects(admitted(2), newPod("a", succeeded), newPod("b", succeeded), newPod("c", failed)),
		check: func(t *testing.T, h *harness) {
			writes := h.statusWrites()
			if len(writes) != 2 {
				t.Fatalf("%d status writes, want 2", len(writes))
			}
			wantNoCondition(t, writes[0], v1alpha1.ConditionFinished)
			pg := h.group()
			wantCounts(t, pg, 2, 1)
			wantCondition(t, pg, v1alpha1.ConditionFinished, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "2 pods succeeded (2 needed), 1 failed")
			wantTime(t, "completionTime", pg.Status.CompletionTime, t0)
			wantEvents(t, h.events(), "Normal Finished 2 pods succeeded (2 needed), 1 failed")
		},
	}, {
		name: "a finished group stays finished: completionTime and the condition do not move",
		objs: objects(admitted(2), newPod("a", succeeded), newPod("b", succeeded)),
		check: func(t *testing.T, h *harness) {
			h.step(time.Hour)
			pg := h.group()
			wantTime(t, "completionTime", pg.Status.CompletionTime, t0)
			if c := cond(pg, v1alpha1.ConditionFinished); c == nil || !c.LastTransitionTime.Time.Equal(t0) {
				t.Errorf("Finished = %+v, want its transition at %s", c, t0)
			}
			wantEvents(t, h.events())
		},
	}, {
		name:    "a group with an active pod does not finish",
		objs:    objects(admitted(2), newPod("a", succeeded), newPod("b", succeeded), newPod("c", running)),
		requeue: time.Second, // the finished pods wait for the batch period while c runs.
		check: func(t *testing.T, h *harness) {
			h.step(time.Second)
			pg := h.group()
			wantCounts(t, pg, 2, 0)
			wantNoCondition(t, pg, v1alpha1.ConditionFinished)
			if pg.Status.CompletionTime != nil {
				t.Errorf("completionTime = %v, want unset", pg.Status.CompletionTime)
			}
		},
	}, {
		name:    "a group with a deleted pod still in its grace period does not finish yet",
		objs:    objects(admitted(1), newPod("a", succeeded), newPod("leaving", running, deletedAt(t0.Add(5*time.Second)))),
		requeue: 6*time.Second + reportMargin,
		check: func(t *testing.T, h *harness) {
			pg := h.group()
			wantCounts(t, pg, 1, 0)
			wantNoCondition(t, pg, v1alpha1.ConditionFinished)
			h.step(6 * time.Second)
			wantCounts(t, h.group(), 1, 0) // past the deletionTimestamp, within the report margin
			h.step(reportMargin)
			pg = h.group()
			wantCounts(t, pg, 1, 1)
			wantCondition(t, pg, v1alpha1.ConditionFinished, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "")
		},
	}, {
		name: "a group that was never admitted never finishes",
		objs: objects(newGroup(2)),
		check: func(t *testing.T, h *harness) {
			wantNoCondition(t, h.group(), v1alpha1.ConditionFinished)
		},
	}, {
		name:    "fewer than minCount succeeded: Finished=False/WaitingForReplacement for the release grace, then Failed",
		objs:    objects(admitted(3), newPod("a", succeeded), newPod("b", failed), newPod("c", failed)),
		requeue: 30 * time.Second,
		check: func(t *testing.T, h *harness) {
			pg := h.group()
			wantCounts(t, pg, 1, 2)
			wantCondition(t, pg, v1alpha1.ConditionFinished, metav1.ConditionFalse, scheduling.ReasonWaitingForReplacement, waitingMsg2of3)
			if pg.Status.CompletionTime != nil {
				t.Errorf("completionTime = %v while waiting, want unset", pg.Status.CompletionTime)
			}
			wantEvents(t, h.events())

			// Part-way through the grace, the wait goes on for the rest of it.
			if d := h.step(10 * time.Second); d != 20*time.Second {
				t.Errorf("requeue = %s part-way through the grace, want 20s", d)
			}
			if got := h.mutations(); len(got) != 0 {
				t.Errorf("writes while waiting: %v", got)
			}

			if d := h.step(20 * time.Second); d != 0 {
				t.Errorf("requeue = %s after failing, want none", d)
			}
			pg = h.group()
			msg := "only 1 of 3 needed pods succeeded and no replacement appeared within 30s; 2 failed"
			wantCondition(t, pg, v1alpha1.ConditionFinished, metav1.ConditionTrue, v1alpha1.ReasonFailed, msg)
			wantTime(t, "completionTime", pg.Status.CompletionTime, t0.Add(30*time.Second))
			wantEvents(t, h.events(), "Warning Finished "+msg)
		},
	}, {
		name:    "the release grace is a flag",
		cfg:     func(c *Config) { c.ReleaseGrace = 5 * time.Second },
		objs:    objects(admitted(2), newPod("a", failed)),
		requeue: 5 * time.Second,
		check: func(t *testing.T, h *harness) {
			h.step(5 * time.Second)
			wantCondition(t, h.group(), v1alpha1.ConditionFinished, metav1.ConditionTrue, v1alpha1.ReasonFailed, "")
		},
	}, {
		name: "a release grace of zero fails at once",
		cfg:  func(c *Config) { c.ReleaseGrace = 0 },
		objs: objects(admitted(2), newPod("a", failed)),
		check: func(t *testing.T, h *harness) {
			wantCondition(t, h.group(), v1alpha1.ConditionFinished, metav1.ConditionTrue, v1alpha1.ReasonFailed, "")
		},
	}, {
		name: "the wait survives a restart: it runs from the waiting condition's lastTransitionTime",
		objs: objects(admitted(2, counts(1, 1),
			condition(v1alpha1.ConditionFinished, metav1.ConditionFalse, scheduling.ReasonWaitingForReplacement, t0.Add(-31*time.Second)))),
		check: func(t *testing.T, h *harness) {
			pg := h.group()
			wantCondition(t, pg, v1alpha1.ConditionFinished, metav1.ConditionTrue, v1alpha1.ReasonFailed, "")
			wantTime(t, "completionTime", pg.Status.CompletionTime, t0)
		},
	}, {
		name:    "a replacement during the grace clears the waiting condition and is ungated at once",
		objs:    objects(admitted(3), newPod("a", succeeded), newPod("b", failed), newPod("c", succeeded)),
		requeue: 30 * time.Second,
		check: func(t *testing.T, h *harness) {
			h.addPod(newPod("replacement"))
			if d := h.step(10 * time.Second); d != 0 {
				t.Errorf("requeue = %s with a replacement, want none", d)
			}
			pg := h.group()
			wantNoCondition(t, pg, v1alpha1.ConditionFinished)
			if got := h.podPatches(); len(got["replacement"]) != 1 {
				t.Errorf("replacement patches = %v, want one gate removal", got["replacement"])
			}
			if g := gateNames(h.pod("replacement")); g != nil {
				t.Errorf("replacement still gated: %v", g)
			}
			// The replacement succeeds: the group finishes Succeeded, counting b's failure once.
			p := h.pod("replacement")
			succeeded(p)
			h.setPod(p)
			h.step(time.Minute)
			pg = h.group()
			wantCounts(t, pg, 3, 1)
			wantCondition(t, pg, v1alpha1.ConditionFinished, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "3 pods succeeded (3 needed), 1 failed")
		},
	}, {
		name: "a replacement that also fails starts a new grace",
		objs: objects(admitted(1), newPod("a", failed)),
		check: func(t *testing.T, h *harness) {
			h.addPod(newPod("replacement"))
			h.step(10 * time.Second)
			if g := gateNames(h.pod("replacement")); g != nil {
				t.Fatalf("replacement still gated: %v", g)
			}
			p := h.pod("replacement")
			failed(p)
			h.setPod(p)
			if d := h.step(10 * time.Second); d != 30*time.Second {
				t.Errorf("requeue = %s, want a full new grace of 30s", d)
			}
			pg := h.group()
			wantCounts(t, pg, 0, 2)
			wantCondition(t, pg, v1alpha1.ConditionFinished, metav1.ConditionFalse, scheduling.ReasonWaitingForReplacement, "")
			if c := cond(pg, v1alpha1.ConditionFinished); c != nil && !c.LastTransitionTime.Time.Equal(t0.Add(20*time.Second)) {
				t.Errorf("waiting since %s, want %s", c.LastTransitionTime, t0.Add(20*time.Second))
			}
		},
		requeue: 30 * time.Second,
	}, {
		name:    "a gated pod present when the last pods succeed is released as a joiner, and the group succeeds only once it has ended",
		objs:    objects(admitted(2), newPod("a", succeeded), newPod("b", succeeded), newPod("joiner")),
		requeue: time.Second, // a and b wait one batch period while the joiner is active.
		check: func(t *testing.T, h *harness) {
			if g := gateNames(h.pod("joiner")); len(g) != 0 {
				t.Fatalf("joiner gates = %v, want released", g)
			}
			wantNoCondition(t, h.group(), v1alpha1.ConditionFinished)
			h.step(time.Second)
			wantCounts(t, h.group(), 2, 0)
			wantNoCondition(t, h.group(), v1alpha1.ConditionFinished)
			p := h.pod("joiner")
			succeeded(p)
			h.setPod(p)
			h.step(time.Second)
			pg := h.group()
			wantCounts(t, pg, 3, 0)
			wantCondition(t, pg, v1alpha1.ConditionFinished, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "3 pods succeeded (2 needed), 0 failed")
		},
	}, {
		name: "a pod that arrives after the group succeeded stays gated, and is told so once",
		objs: objects(admitted(2), newPod("a", succeeded), newPod("b", succeeded)),
		check: func(t *testing.T, h *harness) {
			wantCondition(t, h.group(), v1alpha1.ConditionFinished, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "")
			h.addPod(newPod("late"))
			h.step(time.Second)
			h.step(time.Minute)
			if g := gateNames(h.pod("late")); len(g) != 1 {
				t.Errorf("late gates = %v, want still gated: a finished group releases nobody", g)
			}
			wantCounts(t, h.group(), 2, 0)
		},
	}, {
		name:    "a replacement held because the group is short stops the grace: the group waits for enough pods, then releases them together",
		objs:    objects(admitted(2), newPod("a", failed)),
		requeue: 30 * time.Second,
		check: func(t *testing.T, h *harness) {
			// Replacements are created after the group was admitted.
			h.addPod(newPod("r-0", createdAt(t0)))
			h.step(10 * time.Second)
			h.step(time.Hour)
			pg := h.group()
			wantNoCondition(t, pg, v1alpha1.ConditionFinished)
			if g := gateNames(h.pod("r-0")); len(g) != 1 {
				t.Errorf("r-0 gates = %v, want held: with it the group has 1 of 2", g)
			}
			h.addPod(newPod("r-1", createdAt(t0)))
			h.step(time.Second)
			for _, n := range []string{"r-0", "r-1"} {
				if g := gateNames(h.pod(n)); g != nil {
					t.Errorf("%s still gated: %v", n, g)
				}
			}
		},
	}, {
		name: "completionTime never precedes startTime",
		objs: objects(newGroup(1, admittedAt(t0.Add(-time.Hour)), scheduledAt(t0.Add(time.Minute))), newPod("a", succeeded)),
		check: func(t *testing.T, h *harness) {
			wantTime(t, "completionTime", h.group().Status.CompletionTime, t0.Add(time.Minute))
		},
	}, {
		name: "a gang runs from gated to Succeeded, counting each pod once",
		objs: objects(newGroup(3), pods("p", 3)...),
		check: func(t *testing.T, h *harness) {
			wantCondition(t, h.group(), v1alpha1.ConditionAdmitted, metav1.ConditionTrue, scheduling.ReasonGangComplete, "")
			for _, n := range []string{"p-0", "p-1", "p-2"} {
				p := h.pod(n)
				running(p)
				h.setPod(p)
			}
			h.step(time.Second)
			pg := h.group()
			wantCondition(t, pg, v1alpha1.ConditionScheduled, metav1.ConditionTrue, scheduling.ReasonMinCountBound, "")
			wantTime(t, "startTime", pg.Status.StartTime, t0.Add(time.Second))
			for i, n := range []string{"p-0", "p-1", "p-2"} {
				p := h.pod(n)
				p.Status.Phase = corev1.PodSucceeded
				h.setPod(p)
				h.step(2 * time.Second)
				if i < 2 {
					h.step(time.Second) // while others run, a finished pod waits one batch period.
				}
				wantCounts(t, h.group(), int32(i+1), 0)
			}
			h.step(time.Second)
			pg = h.group()
			wantCounts(t, pg, 3, 0)
			wantUncounted(t, pg, nil, nil)
			wantCondition(t, pg, v1alpha1.ConditionFinished, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "")
			wantTime(t, "completionTime", pg.Status.CompletionTime, t0.Add(9*time.Second)) // 1s, then 3s, 3s and 2s
			if s := pg.Status; s.Pods != 3 || s.Active != 0 || s.Gated != 0 {
				t.Errorf("pods/active/gated = %d/%d/%d, want 3/0/0", s.Pods, s.Active, s.Gated)
			}
			for _, n := range []string{"p-0", "p-1", "p-2"} {
				if p := h.pod(n); scheduling.HasTrackingFinalizer(p) || len(p.Finalizers) != 0 {
					t.Errorf("%s keeps finalizers %v", n, p.Finalizers)
				}
			}
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.cfg, tc.objs...)
			if d := h.sync(); d != tc.requeue {
				t.Errorf("requeue after %s, want %s", d, tc.requeue)
			}
			tc.check(t, h)
		})
	}
}
