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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

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
			wantCondition(t, pg, v1alpha1.ConditionAdmitted, metav1.ConditionFalse, scheduling.ReasonWaitingForPods, "has 2 of the 3 active pods it needs")
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
			wantCondition(t, pg, v1alpha1.ConditionAdmitted, metav1.ConditionFalse, scheduling.ReasonWaitingForPods, "has 1 of the 2 active pods it needs")
			if got := h.podPatches(); len(got["p-0"]) != 0 {
				t.Errorf("p-0 patched: %v", got["p-0"])
			}
		},
	}, {
		// A gated pod being deleted is on no node and will never run: even
		// without fast release, where a deleted bound pod stays active
		// until it is terminal, it must not complete the gang, or the
		// framework's replacement would be released short.
		name: "without fast release a deleted gated pod does not count toward admission",
		cfg:  func(c *Config) { c.FastRelease = false },
		objs: objects(newGroup(2), newPod("p-0"), newPod("p-1", deletedAt(t0.Add(time.Minute)))),
		check: func(t *testing.T, h *harness) {
			pg := h.group()
			wantCondition(t, pg, v1alpha1.ConditionAdmitted, metav1.ConditionFalse, scheduling.ReasonWaitingForPods, "has 1 of the 2 active pods it needs")
			if pg.Status.Active != 1 {
				t.Errorf("active = %d, want 1", pg.Status.Active)
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
			wantCondition(t, pg, v1alpha1.ConditionAdmitted, metav1.ConditionFalse, scheduling.ReasonSchedulingGated, msg)
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
			wantCondition(t, writes[0], v1alpha1.ConditionAdmitted, metav1.ConditionTrue, scheduling.ReasonGangComplete,
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
				if !scheduling.HasTrackingFinalizer(p) {
					t.Errorf("%s lost its tracking finalizer on admission", name)
				}
			}
			wantEvents(t, h.events(), "Normal Admitted 3 of 3 needed pods are present; releasing the gang")
		},
	}, {
		name: "a basic group is admitted with its first pod",
		objs: objects(newGroup(0, basicPolicy), newPod("p-0")),
		check: func(t *testing.T, h *harness) {
			wantCondition(t, h.group(), v1alpha1.ConditionAdmitted, metav1.ConditionTrue, scheduling.ReasonGangComplete, "1 of 1 needed pods are present; releasing the gang")
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
			wantCondition(t, pg, v1alpha1.ConditionAdmitted, metav1.ConditionTrue, scheduling.ReasonGangComplete, "")
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
		name: "a finished group of a Job is deleted when a later Job of the same name waits for it, so that the new Job forms its own",
		objs: objects(newGroup(2, admittedAt(t0.Add(-time.Hour)), finishedAt(v1alpha1.ReasonSucceeded, t0.Add(-time.Minute)), counts(2, 0), createdForJob("train")),
			newPod("old-0", succeeded, noFinalizer, byInstanceMod, ofJob("train")),
			newPod("new-0", byInstanceMod, controlledByUID("train", "uid-job-train-again"))),
		check: func(t *testing.T, h *harness) {
			if _, err := h.muster.Tracker().Get(podGroupsGVR, testNS, testGroup); !apierrors.IsNotFound(err) {
				t.Errorf("the old Job's finished group is still there (%v); want it deleted", err)
			}
			if got := h.podPatches(); len(got) != 0 {
				t.Errorf("pods patched: %v", got)
			}
			wantEvents(t, h.events(), "Normal PreviousInstance deleted: finished, and pod new-0 of Job train, a later instance of the same name, waits for a group of its own")
		},
	}, {
		name: "a finished group is kept when the gated pod's Job is one it already ran, or the pod is not named by its instance",
		objs: objects(newGroup(2, admittedAt(t0.Add(-time.Hour)), finishedAt(v1alpha1.ReasonSucceeded, t0.Add(-time.Minute)), counts(2, 0), createdForJob("train")),
			newPod("old-0", succeeded, noFinalizer, byInstanceMod, ofJob("train")),
			newPod("same-job", byInstanceMod, ofJob("train")),
			newPod("fixed-name", controlledByUID("other", "uid-job-other"))),
		check: func(t *testing.T, h *harness) {
			if _, err := h.muster.Tracker().Get(podGroupsGVR, testNS, testGroup); err != nil {
				t.Errorf("the finished group is gone (%v); want it kept", err)
			}
			wantEvents(t, h.events(), "Warning PodGroupFinished PodGroup pg has finished; this pod stays gated",
				"Warning PodGroupFinished PodGroup pg has finished; this pod stays gated")
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
			wantCondition(t, pg, v1alpha1.ConditionScheduled, metav1.ConditionTrue, scheduling.ReasonMinCountBound, "at least 2 pods were bound to nodes")
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
			wantCondition(t, pg, v1alpha1.ConditionScheduled, metav1.ConditionTrue, scheduling.ReasonMinCountBound, "at least 3 pods were bound to nodes")
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

// TestSyncReleaseNeverShort checks the rule of docs/controller.md, step 9:
// an admitted group releases gated pods only when, with them, at least
// minCount of its pods have succeeded, run or are released, so that a
// group that fell short never releases new pods one at a time.
func TestSyncReleaseNeverShort(t *testing.T) {
	const held3 = "Normal WaitingForGang PodGroup pg has %d of the 3 pods a release needs (succeeded, running, or gated and ready to go); this pod stays gated until enough pods exist to be released together"
	cases := []struct {
		name    string
		cfg     func(*Config)
		objs    []runtime.Object
		setup   func(h *harness)
		wantErr bool
		check   func(t *testing.T, h *harness)
	}{{
		name: "a gate patch that finds its pod gone does not count as released: the sync fails, and the group is synced again from a fresh read",
		objs: objects(newGroup(3), pods("p", 3)...),
		setup: func(h *harness) {
			h.deletePod("p-2") // the cache still shows it.
		},
		wantErr: true,
		check: func(t *testing.T, h *harness) {
			if h.c.memory.expecting(testKey, gatesRemoved, "uid-p-2") {
				t.Errorf("p-2, which is gone, is remembered as released")
			}
			h.step(time.Second)
			if got := h.podPatches(); len(got) != 0 {
				t.Errorf("patches on the fresh read = %v, want none", got)
			}
			// Its replacement completes the gang again, and goes at once.
			h.addPod(newPod("r"))
			h.step(time.Second)
			if got := h.podPatches(); len(got) != 1 || len(got["r"]) != 1 {
				t.Errorf("patches = %v, want one for r", got)
			}
		},
	}, {
		name: "after a whole-gang restart, replacements are held until minCount of them exist, then released together",
		objs: objects(admitted(3, counts(0, 3)), newPod("r-0", createdAt(t0))),
		check: func(t *testing.T, h *harness) {
			if got := h.podPatches(); len(got) != 0 {
				t.Errorf("patches = %v, want r-0 held", got)
			}
			wantEvents(t, h.events(), fmt.Sprintf(held3, 1))
			h.addPod(newPod("r-1", createdAt(t0)))
			h.step(time.Second)
			if got := h.podPatches(); len(got) != 0 {
				t.Errorf("patches = %v, want r-0 and r-1 held", got)
			}
			wantEvents(t, h.events(), fmt.Sprintf(held3, 2))
			h.addPod(newPod("r-2", createdAt(t0)))
			h.step(time.Second)
			if got := h.podPatches(); len(got) != 3 {
				t.Errorf("patches = %v, want r-0, r-1 and r-2 released together", got)
			}
		},
	}, {
		name: "a group short of minCount before Scheduled=True (a pod lost, or minCount raised) waits for minCount pods: one joiner is not released alone",
		objs: objects(newGroup(4, admittedAt(t0.Add(-time.Hour))), newPod("p-0", running), newPod("p-1", running), newPod("r-0")),
		check: func(t *testing.T, h *harness) {
			if got := h.podPatches(); len(got) != 0 {
				t.Errorf("patches = %v, want r-0 held", got)
			}
			h.addPod(newPod("r-1"))
			h.step(time.Second)
			if got := h.podPatches(); len(got) != 2 {
				t.Errorf("patches = %v, want r-0 and r-1 released together", got)
			}
		},
	}, {
		name: "a replacement that brings a running gang back to minCount is released at once",
		objs: objects(admitted(3), newPod("p-0", running), newPod("p-1", running), newPod("r")),
		check: func(t *testing.T, h *harness) {
			if got := h.podPatches(); len(got) != 1 || len(got["r"]) != 1 {
				t.Errorf("patches = %v, want one for r", got)
			}
		},
	}, {
		// A LeaderWorkerSet restarts a group by recreating its leader while
		// the old workers run on until the garbage collector deletes them.
		name: "running pods of an instance that is gone (their controller deleted) do not complete a replacement: it waits for its own gang",
		objs: append(objects(admitted(3),
			newPod("p-0", running, byInstanceMod, ofJob("old")), newPod("p-1", running, byInstanceMod, ofJob("old")),
			newPod("r", byInstanceMod, ofJob("new"))), sizedJob("new", 3, nil)),
		setup: func(h *harness) { h.c.owners = trackerReader{h} },
		check: func(t *testing.T, h *harness) {
			if got := h.podPatches(); len(got) != 0 {
				t.Errorf("patches = %v, want r held: p-0 and p-1 belong to Job old, which is gone", got)
			}
			wantEvents(t, h.events(), fmt.Sprintf(held3, 1))
		},
	}, {
		name: "running pods whose controller still exists complete a replacement, which goes at once",
		objs: append(objects(admitted(3),
			newPod("p-0", running, byInstanceMod, ofJob("old")), newPod("p-1", running, byInstanceMod, ofJob("old")),
			newPod("r", byInstanceMod, ofJob("old"))), sizedJob("old", 3, nil)),
		setup: func(h *harness) { h.c.owners = trackerReader{h} },
		check: func(t *testing.T, h *harness) {
			if got := h.podPatches(); len(got) != 1 || len(got["r"]) != 1 {
				t.Errorf("patches = %v, want one for r", got)
			}
		},
	}, {
		// Cut short, 2 of the 3 ran: the group was never Scheduled.
		name: "a release cut short (the leader died between its gate patches) is carried out after the released pods ended, one of them failed",
		objs: objects(newGroup(3, admittedAt(t0.Add(-time.Hour))), newPod("a", succeeded), newPod("b", failed), newPod("c")),
		check: func(t *testing.T, h *harness) {
			if got := h.podPatches(); len(got["c"]) != 1 {
				t.Errorf("c patches = %v, want its release: it was admitted with a and b, which ran", got["c"])
			}
		},
	}, {
		name: "a replacement created after admission does not count the failed pods: it waits for minCount",
		objs: objects(admitted(3), newPod("a", succeeded), newPod("b", failed), newPod("r", createdAt(t0))),
		check: func(t *testing.T, h *harness) {
			if got := h.podPatches(); len(got) != 0 {
				t.Errorf("patches = %v, want r held: with it the group has 2 of 3", got)
			}
			wantEvents(t, h.events(), fmt.Sprintf(held3, 2))
		},
	}, {
		// TestWholeGangRestart in e2e: admitted, bound and deleted, and a
		// replacement created, all within one second.
		name: "a whole-gang restart within the second of admission: a replacement of that second does not count the failed pods once the gang was Scheduled",
		objs: objects(newGroup(2, admittedAt(t0), scheduledAt(t0), counts(0, 2)), newPod("r-0", createdAt(t0))),
		check: func(t *testing.T, h *harness) {
			if got := h.podPatches(); len(got) != 0 {
				t.Errorf("patches = %v, want r-0 held: a gang of 2 would run with 1 pod", got)
			}
		},
	}, {
		name: "pods admitted together, one deleted before it ran, stay held: the gang is short of a pod that never ran",
		objs: objects(admitted(3), newPod("a"), newPod("b"), newPod("gone", deletedAt(t0.Add(-time.Minute)))),
		check: func(t *testing.T, h *harness) {
			if got := h.podPatches(); len(got["a"])+len(got["b"]) != 0 {
				t.Errorf("patches = %v, want a and b held", got)
			}
		},
	}, {
		name: "with a release cut short, a later joiner stays held while the pods admitted together go",
		objs: objects(newGroup(4, admittedAt(t0.Add(-time.Hour))), newPod("a", succeeded), newPod("b", failed), newPod("d", failed), newPod("c"), newPod("late", createdAt(t0))),
		check: func(t *testing.T, h *harness) {
			got := h.podPatches()
			if len(got["c"]) != 1 || len(got["late"]) != 0 {
				t.Errorf("patches = %v, want c released and late held", got)
			}
		},
	}, {
		// Issue 21, item 6: a pod beyond minCount that did not fit when the
		// gang was admitted is no part of the decision.
		name: "a pod the group had at admission that was left out of it (beyond minCount) is not released alone after the admitted gang failed",
		objs: objects(newGroup(2, admittedAt(t0.Add(-time.Hour)), scheduledAt(t0.Add(-time.Hour))), newPod("a", failed), newPod("b", failed), newPod("extra", createdAt(t0.Add(-2*time.Hour)))),
		check: func(t *testing.T, h *harness) {
			if got := h.podPatches(); len(got) != 0 {
				t.Errorf("patches = %v, want extra held: the gang of 2 went whole, and 1 pod is not a gang", got)
			}
			wantEvents(t, h.events(), "Normal WaitingForGang PodGroup pg has 1 of the 2 pods a release needs (succeeded, running, or gated and ready to go); this pod stays gated until enough pods exist to be released together")
		},
	}, {
		name: "a pod left out of the decision, before the gang was Scheduled, is not released alone either once minCount pods ran and failed",
		objs: objects(newGroup(2, admittedAt(t0.Add(-time.Hour))), newPod("a", failed), newPod("b", failed), newPod("extra", createdAt(t0.Add(-2*time.Hour)))),
		check: func(t *testing.T, h *harness) {
			if got := h.podPatches(); len(got) != 0 {
				t.Errorf("patches = %v, want extra held", got)
			}
		},
	}, {
		name: "with capacity admission, a pod beyond minCount placed as a joiner once the admitted gang failed and freed its node stays held",
		cfg:  capacityMode,
		objs: append(objects(newGroup(2, admittedAt(t0.Add(-time.Hour)), scheduledAt(t0.Add(-time.Hour))),
			newPod("a", failed, onNode("n1"), requests("4")), newPod("b", failed, onNode("n1"), requests("4")),
			newPod("extra", createdAt(t0.Add(-2*time.Hour)), requests("4"))), newNode("n1", "8")),
		check: func(t *testing.T, h *harness) {
			h.admission().RunCycle() // the failed pods hold nothing: extra fits now.
			h.observe()
			h.reset()
			h.sync()
			if n := len(h.group().Status.Placements); n != 1 {
				t.Fatalf("%d placements, want extra placed as a joiner: %+v", n, h.group().Status.Placements)
			}
			if got := h.podPatches(); len(got) != 0 {
				t.Errorf("patches = %v, want extra held: alone it is not a gang of 2", got)
			}
		},
	}, {
		name: "pods that succeeded count toward the gang: a joiner that arrives as the others succeed is released",
		objs: objects(admitted(2), newPod("a", succeeded), newPod("b", succeeded), newPod("joiner")),
		check: func(t *testing.T, h *harness) {
			if got := h.podPatches(); len(got["joiner"]) != 1 {
				t.Errorf("joiner patches = %v, want its release", got["joiner"])
			}
		},
	}, {
		name: "with capacity admission, replacements of a short group go only once minCount of them are placed",
		cfg:  capacityMode,
		objs: append(objects(admitted(3, counts(0, 3)), pods("r", 3, requests("4"), createdAt(t0))...), newNode("n1", "8")),
		check: func(t *testing.T, h *harness) {
			h.admission().RunCycle() // n1 has room for 2 of the 3.
			h.observe()
			h.reset()
			h.sync()
			if n := len(h.group().Status.Placements); n != 2 {
				t.Fatalf("%d placements, want 2: %+v", n, h.group().Status.Placements)
			}
			if got := h.podPatches(); len(got) != 0 {
				t.Errorf("patches = %v, want the 2 placed pods held: with them the group has 2 of 3", got)
			}
			if err := h.kube.Tracker().Add(newNode("n2", "8")); err != nil {
				t.Fatal(err)
			}
			h.observe()
			h.reset()
			h.admitRound()
			if got := h.podPatches(); len(got) != 3 {
				t.Errorf("patches = %v, want all 3 released together once the third is placed", got)
			}
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

// createdForJob marks a group as created from the pods of Job name, which
// owns it.
func createdForJob(name string) groupMod {
	return func(pg *v1alpha1.PodGroup) {
		if pg.Annotations == nil {
			pg.Annotations = map[string]string{}
		}
		pg.Annotations[scheduling.CreatedFromPodAnnotation] = name + "-0"
		pg.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: name, UID: types.UID("uid-job-" + name)}}
	}
}

// controlledByUID makes Job name, of uid, a pod's controller: a Job
// created again under an old name has a new UID.
func controlledByUID(name string, uid types.UID) podMod {
	return func(p *corev1.Pod) {
		p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{
			APIVersion: "batch/v1", Kind: "Job", Name: name, UID: uid, Controller: ptr.To(true),
		})
	}
}
