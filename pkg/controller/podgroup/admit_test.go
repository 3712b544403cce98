package podgroup

import (
	"errors"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

func TestSyncAdmit(t *testing.T) {
	cases := []struct {
		name string
		cfg  func(*Config)
		objs []runtime.Object
		// setup runs before the first sync; wantErr says that sync fails.
		setup   func(h *harness)
		wantErr bool
		check   func(t *testing.T, h *harness)
	}{{
		name: "a group short of pods stays unadmitted, says how many it has and needs, and patches no pod",
		objs: objects(newGroup(3), pods("p", 2)...),
		check: func(t *testing.T, h *harness) {
			if got := h.podPatches(); len(got) != 0 {
				t.Errorf("pods patched: %v", got)
			}
			pg := h.group()
			wantCondition(t, pg, v1alpha1.ConditionAdmitted, metav1.ConditionFalse, condReasonWaitingForPods, "has 2 of the 3 active pods it needs")
			if pg.Status.AdmissionTime != nil {
				t.Errorf("admissionTime = %v, want unset", pg.Status.AdmissionTime)
			}
			if s := pg.Status; s.Pods != 2 || s.Gated != 2 || s.Active != 2 {
				t.Errorf("pods/gated/active = %d/%d/%d, want 2/2/2", s.Pods, s.Gated, s.Active)
			}
			if pg.Status.ObservedGeneration != 1 {
				t.Errorf("observedGeneration = %d, want 1", pg.Status.ObservedGeneration)
			}
			wantEvents(t, h.events(), "Normal Waiting has 2 of the 3 active pods it needs")
		},
	}, {
		name: "a group that is still short of pods is not told so again",
		objs: objects(newGroup(3), pods("p", 2)...),
		check: func(t *testing.T, h *harness) {
			h.step(time.Second)
			if got := h.mutations(); len(got) != 0 {
				t.Errorf("second sync wrote %v, want nothing", got)
			}
			wantEvents(t, h.events())
		},
	}, {
		name: "fast release: a deleted pod does not count toward admission",
		objs: objects(newGroup(2), newPod("p-0"), newPod("p-1", deletedAt(t0.Add(time.Minute)))),
		check: func(t *testing.T, h *harness) {
			pg := h.group()
			wantCondition(t, pg, v1alpha1.ConditionAdmitted, metav1.ConditionFalse, condReasonWaitingForPods, "has 1 of the 2 active pods it needs")
			if got := h.podPatches(); len(got["p-0"]) != 0 {
				t.Errorf("p-0 patched: %v", got["p-0"])
			}
		},
	}, {
		name: "without fast release a deleted pod still counts toward admission",
		cfg:  func(c *Config) { c.FastRelease = false },
		objs: objects(newGroup(2), newPod("p-0"), newPod("p-1", deletedAt(t0.Add(time.Minute)))),
		check: func(t *testing.T, h *harness) {
			pg := h.group()
			wantCondition(t, pg, v1alpha1.ConditionAdmitted, metav1.ConditionTrue, condReasonGangComplete, "")
			if pg.Status.Active != 2 {
				t.Errorf("active = %d, want 2", pg.Status.Active)
			}
		},
	}, {
		name: "group-level schedulingGates hold a complete group",
		objs: objects(newGroup(2, groupGates("example.com/approval", "example.com/quota")), pods("p", 2)...),
		check: func(t *testing.T, h *harness) {
			if got := h.podPatches(); len(got) != 0 {
				t.Errorf("pods patched: %v", got)
			}
			pg := h.group()
			msg := "held by scheduling gates: example.com/approval, example.com/quota"
			wantCondition(t, pg, v1alpha1.ConditionAdmitted, metav1.ConditionFalse, condReasonSchedulingGated, msg)
			if pg.Status.AdmissionTime != nil {
				t.Errorf("admissionTime = %v, want unset", pg.Status.AdmissionTime)
			}
			wantEvents(t, h.events(), "Normal Waiting "+msg)
			// Still held on the next sync, and not told again.
			h.step(time.Minute)
			if got := h.mutations(); len(got) != 0 {
				t.Errorf("second sync wrote %v, want nothing", got)
			}
			wantEvents(t, h.events())
		},
	}, {
		name: "a complete gang is admitted in status before any pod is ungated, with one guarded patch per pod",
		objs: objects(newGroup(3),
			newPod("p-0"), newPod("p-1", gates("example.com/first", scheduling.AdmissionGate)),
			newPod("p-2", gates(scheduling.AdmissionGate, "example.com/last"))),
		check: func(t *testing.T, h *harness) {
			calls := h.mutations()
			if len(calls) != 4 || calls[0] != "update podgroups/status pg" {
				t.Fatalf("calls = %q, want the status write first, then 3 pod patches", calls)
			}
			slices.Sort(calls[1:])
			if want := []string{"patch pods p-0", "patch pods p-1", "patch pods p-2"}; !slices.Equal(calls[1:], want) {
				t.Errorf("pod calls = %q, want %q", calls[1:], want)
			}
			writes := h.statusWrites()
			wantCondition(t, writes[0], v1alpha1.ConditionAdmitted, metav1.ConditionTrue, condReasonGangComplete,
				"3 of 3 needed pods are present; releasing the gang")
			wantTime(t, "admissionTime", writes[0].Status.AdmissionTime, t0)
			patches := h.podPatches()
			for name, index := range map[string]int{"p-0": 0, "p-1": 1, "p-2": 0} {
				if want := []string{gatePatch(newPod(name), index)}; !slices.Equal(patches[name], want) {
					t.Errorf("patches of %s:\n got %s\nwant %s", name, patches[name], want)
				}
			}
			for name, want := range map[string][]string{"p-0": nil, "p-1": {"example.com/first"}, "p-2": {"example.com/last"}} {
				p := h.pod(name)
				if got := gateNames(p); !slices.Equal(got, want) {
					t.Errorf("gates of %s = %v, want %v", name, got, want)
				}
				if !hasTrackingFinalizer(p) {
					t.Errorf("%s lost its tracking finalizer on admission", name)
				}
			}
			wantEvents(t, h.events(), "Normal Admitted 3 of 3 needed pods are present; releasing the gang")
		},
	}, {
		name: "a basic group is admitted with its first pod",
		objs: objects(newGroup(0, basicPolicy), newPod("p-0")),
		check: func(t *testing.T, h *harness) {
			wantCondition(t, h.group(), v1alpha1.ConditionAdmitted, metav1.ConditionTrue, condReasonGangComplete, "1 of 1 needed pods are present; releasing the gang")
			if got := h.podPatches(); len(got["p-0"]) != 1 {
				t.Errorf("p-0 patches = %v, want 1", got["p-0"])
			}
		},
	}, {
		name: "admission is decided once: the next sync neither rewrites admissionTime nor patches again",
		objs: objects(newGroup(2), pods("p", 2)...),
		check: func(t *testing.T, h *harness) {
			h.step(time.Minute)
			pg := h.group()
			wantTime(t, "admissionTime", pg.Status.AdmissionTime, t0)
			if got := h.podPatches(); len(got) != 0 {
				t.Errorf("pods patched again: %v", got)
			}
			if c := cond(pg, v1alpha1.ConditionAdmitted); c == nil || !c.LastTransitionTime.Time.Equal(t0) {
				t.Errorf("Admitted condition = %+v, want its transition at %s", c, t0)
			}
			wantEvents(t, h.events())
		},
	}, {
		name:    "a failed gate removal is retried without admitting twice",
		objs:    objects(newGroup(2), pods("p", 2)...),
		setup:   func(h *harness) { h.failPatches(errors.New("injected"), "p-1") },
		wantErr: true,
		check: func(t *testing.T, h *harness) {
			pg := h.group()
			wantCondition(t, pg, v1alpha1.ConditionAdmitted, metav1.ConditionTrue, condReasonGangComplete, "")
			if gateNames(h.pod("p-0")) != nil {
				t.Errorf("p-0 still gated after its patch succeeded")
			}
			h.heal()
			h.step(time.Minute)
			if got := h.podPatches(); len(got) != 1 || len(got["p-1"]) != 1 {
				t.Errorf("patches = %v, want one for p-1", got)
			}
			for _, w := range h.statusWrites() {
				wantTime(t, "admissionTime written on retry", w.Status.AdmissionTime, t0)
			}
			wantTime(t, "admissionTime", h.group().Status.AdmissionTime, t0)
			wantEvents(t, h.events())
			if gateNames(h.pod("p-1")) != nil {
				t.Errorf("p-1 still gated: %v", gateNames(h.pod("p-1")))
			}
		},
	}, {
		name: "a gate patch built from a pod that was re-created under the same name fails its uid test",
		objs: objects(newGroup(1), newPod("p-0")),
		setup: func(h *harness) {
			h.deletePod("p-0")
			h.addPod(newPod("p-0", func(p *corev1.Pod) { p.UID = "uid-p-0-again" }))
		},
		wantErr: true,
		check: func(t *testing.T, h *harness) {
			if g := gateNames(h.pod("p-0")); !slices.Equal(g, []string{scheduling.AdmissionGate}) {
				t.Errorf("the new p-0 was ungated from the old one's patch: gates %v", g)
			}
		},
	}, {
		name: "a pod that joins an admitted group is ungated at once",
		objs: objects(newGroup(2, admittedAt(t0.Add(-time.Hour))),
			newPod("p-0", running), newPod("p-1", running), newPod("joiner")),
		check: func(t *testing.T, h *harness) {
			if got := h.podPatches(); len(got) != 1 || !slices.Equal(got["joiner"], []string{gatePatch(newPod("joiner"), 0)}) {
				t.Errorf("patches = %v, want one gate patch for joiner", got)
			}
			wantTime(t, "admissionTime", h.group().Status.AdmissionTime, t0.Add(-time.Hour))
			if g := gateNames(h.pod("joiner")); g != nil {
				t.Errorf("joiner still gated: %v", g)
			}
		},
	}, {
		name: "a scale-up joiner of an admitted group is ungated even while the group is short of the new minCount",
		objs: objects(newGroup(4, admittedAt(t0.Add(-time.Hour))), newPod("p-0", running), newPod("p-1", running), newPod("joiner")),
		check: func(t *testing.T, h *harness) {
			if got := h.podPatches(); len(got["joiner"]) != 1 {
				t.Errorf("joiner patches = %v, want 1", got["joiner"])
			}
		},
	}, {
		name: "a finished group admits no joiner and tells it once why it stays gated",
		objs: objects(newGroup(1, admittedAt(t0.Add(-time.Hour)), finishedAt(v1alpha1.ReasonSucceeded, t0.Add(-time.Minute)), counts(1, 0)),
			newPod("joiner")),
		check: func(t *testing.T, h *harness) {
			if got := h.podPatches(); len(got) != 0 {
				t.Errorf("pods patched: %v", got)
			}
			if g := gateNames(h.pod("joiner")); !slices.Equal(g, []string{scheduling.AdmissionGate}) {
				t.Errorf("joiner gates = %v, want Muster's gate", g)
			}
			wantEvents(t, h.events(), "Warning PodGroupFinished PodGroup pg has finished; this pod stays gated")
			h.step(time.Minute)
			wantEvents(t, h.events())
			if got := h.podPatches(); len(got) != 0 {
				t.Errorf("pods patched on the second sync: %v", got)
			}
		},
	}, {
		name: "Scheduled=True and startTime once minCount pods are bound",
		objs: objects(newGroup(2, admittedAt(t0.Add(-time.Hour))), newPod("p-0", running, ready), newPod("p-1", running)),
		check: func(t *testing.T, h *harness) {
			pg := h.group()
			wantCondition(t, pg, v1alpha1.ConditionScheduled, metav1.ConditionTrue, condReasonMinCountBound, "at least 2 pods were bound to nodes")
			wantTime(t, "startTime", pg.Status.StartTime, t0)
			if s := pg.Status; s.Scheduled != 2 || s.Ready != 1 || s.Active != 2 || s.Gated != 0 {
				t.Errorf("scheduled/ready/active/gated = %d/%d/%d/%d, want 2/1/2/0", s.Scheduled, s.Ready, s.Active, s.Gated)
			}
		},
	}, {
		name: "Scheduled is not set while fewer than minCount pods are bound",
		objs: objects(newGroup(2, admittedAt(t0.Add(-time.Hour))), newPod("p-0", running), newPod("p-1", ungated)),
		check: func(t *testing.T, h *harness) {
			pg := h.group()
			wantNoCondition(t, pg, v1alpha1.ConditionScheduled)
			if pg.Status.StartTime != nil {
				t.Errorf("startTime = %v, want unset", pg.Status.StartTime)
			}
		},
	}, {
		name: "Scheduled stays True, with its startTime, when the pods go away",
		objs: objects(newGroup(2, admittedAt(t0.Add(-time.Hour)), scheduledAt(t0.Add(-time.Minute))), newPod("p-0", running)),
		check: func(t *testing.T, h *harness) {
			pg := h.group()
			if c := cond(pg, v1alpha1.ConditionScheduled); c == nil || c.Status != metav1.ConditionTrue || !c.LastTransitionTime.Time.Equal(t0.Add(-time.Minute)) {
				t.Errorf("Scheduled = %+v, want True since %s", c, t0.Add(-time.Minute))
			}
			wantTime(t, "startTime", pg.Status.StartTime, t0.Add(-time.Minute))
		},
	}, {
		name: "a group that grew its minCount keeps its first startTime",
		objs: objects(newGroup(3, admittedAt(t0.Add(-time.Hour)), scheduledAt(t0.Add(-time.Minute))), pods("p", 3, running)...),
		check: func(t *testing.T, h *harness) {
			h.step(time.Second) // the new message is a refresh: it is written with the next batch.
			pg := h.group()
			wantCondition(t, pg, v1alpha1.ConditionScheduled, metav1.ConditionTrue, condReasonMinCountBound, "at least 3 pods were bound to nodes")
			wantTime(t, "startTime", pg.Status.StartTime, t0.Add(-time.Minute))
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.cfg, tc.objs...)
			if tc.setup != nil {
				tc.setup(h)
			}
			h.syncExpectingErr(tc.wantErr)
			tc.check(t, h)
		})
	}
}
