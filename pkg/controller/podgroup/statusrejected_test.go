package podgroup

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	k8stesting "k8s.io/client-go/testing"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/controller/capacityadmission"
)

// TestSyncGivesUpRefusedStatus (issue 21, item 3): a status write that the
// API refuses for good (Invalid, or too large) gives up its decision and the
// capacity assumed for it, says why in Admitted=False/StatusRejected, and is
// not decided again before a backoff, so another gang can have the
// capacity meanwhile. Any other error is retried as before.
func TestSyncGivesUpRefusedStatus(t *testing.T) {
	gr := schema.GroupResource{Group: v1alpha1.SchemeGroupVersion.Group, Resource: "podgroups"}
	tooMany := field.TooMany(field.NewPath("status", "placements"), scheduling.MaxPlacements+1, scheduling.MaxPlacements)
	cases := []struct {
		name string
		err  error
		// wantGiveUp says the decision is given up; else the sync fails
		// and keeps it.
		wantGiveUp bool
		wantMsg    string // in the Admitted message
	}{
		{name: "422 Invalid names the refused field", err: apierrors.NewInvalid(schema.GroupKind{Group: gr.Group, Kind: "PodGroup"}, testGroup, field.ErrorList{tooMany}),
			wantGiveUp: true, wantMsg: "status.placements: Too many: 5001: must have at most 5000 items"},
		{name: "413 request entity too large", err: apierrors.NewRequestEntityTooLargeError("limit is 3145728"),
			wantGiveUp: true, wantMsg: "limit is 3145728"},
		{name: "etcd's request is too large, reported as an internal error", err: apierrors.NewInternalError(errors.New("etcdserver: request is too large")),
			wantGiveUp: true, wantMsg: "request is too large"},
		{name: "a conflict is retried, not given up", err: apierrors.NewConflict(gr, testGroup, errors.New("changed"))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			other := newGroup(1, func(pg *v1alpha1.PodGroup) { pg.Name, pg.UID = "other", "uid-other" })
			objs := append(objects(newGroup(2), pods("p", 2, requests("4"))...), other, newPod("o-0", inGroup("other"), requests("4")))
			h := capacityHarness(t, []*corev1.Node{newNode("n1", "8")}, objs...)
			// The API refuses every write that carries the decision: the
			// placements. The write that says why carries none.
			h.muster.PrependReactor("update", "podgroups", func(a k8stesting.Action) (bool, runtime.Object, error) {
				pg, ok := a.(k8stesting.UpdateAction).GetObject().(*v1alpha1.PodGroup)
				if ok && a.GetSubresource() == "status" && pg.Name == testGroup && len(pg.Status.Placements) > 0 {
					return true, nil, tc.err
				}
				return false, nil, nil
			})
			h.sync()
			h.admission().RunCycle()
			h.observe()
			h.reset()
			retry, err := h.c.sync(t.Context(), testKey)
			if got := h.podPatches(); len(got) != 0 {
				t.Errorf("pods patched after the write was refused: %v", got)
			}
			if !tc.wantGiveUp {
				if err == nil {
					t.Fatalf("sync succeeded, want the conflict returned")
				}
				if !h.admission().Decided(testKey) {
					t.Errorf("the decision was dropped on a conflict, which a retry may write")
				}
				return
			}
			if err != nil {
				t.Fatalf("sync: %v", err)
			}
			if retry <= 0 || retry > statusRejectedBackoff {
				t.Errorf("requeue after %s, want at most %s", retry, statusRejectedBackoff)
			}
			pg := h.group()
			wantCondition(t, pg, v1alpha1.ConditionAdmitted, metav1.ConditionFalse, scheduling.ReasonStatusRejected, "")
			if c := cond(pg, v1alpha1.ConditionAdmitted); c == nil || !strings.Contains(c.Message, tc.wantMsg) {
				t.Errorf("Admitted message does not say %q: %+v", tc.wantMsg, c)
			}
			if len(pg.Status.Placements) != 0 || pg.Status.AdmissionTime != nil {
				t.Errorf("the minimal write carries the decision: %+v", pg.Status)
			}
			if h.admission().Decided(testKey) {
				t.Errorf("the refused decision is still held")
			}

			// The capacity it assumed is free: another gang takes it.
			otherKey := testNS + "/other"
			if _, err := h.c.sync(t.Context(), gk(otherKey)); err != nil {
				t.Fatal(err)
			}
			h.admission().RunCycle()
			h.observe()
			if _, err := h.c.sync(t.Context(), gk(otherKey)); err != nil {
				t.Fatal(err)
			}
			h.observe()
			if o, err := h.c.pgLister.PodGroups(testNS).Get("other"); err != nil || !isAdmitted(o) {
				t.Errorf("the other gang is not admitted on the capacity given back: %v %+v", err, o)
			}

			// No hot loop: within the backoff the group is neither offered
			// nor written.
			h.reset()
			h.step(time.Second)
			if m := h.mutations(); len(m) != 0 {
				t.Errorf("calls within the backoff: %v", m)
			}
			if waitingFor(h, testKey) {
				t.Errorf("offered to admission within the backoff")
			}
			// After it, admission decides again.
			h.step(statusRejectedBackoff)
			if !waitingFor(h, testKey) {
				t.Errorf("not offered to admission after the backoff")
			}
		})
	}
}

// waitingFor reports whether the group is a candidate of the next cycle.
func waitingFor(h *harness, key scheduling.GroupKey) bool {
	return h.admission().Offered(key)
}

// TestSyncRefusesGangsAboveTheLimit (issue 21, item 3): a gang larger than
// MaxGangMinCount could never have its placements recorded, so it is not
// admitted, in either mode, and the condition names the field and the rule.
func TestSyncRefusesGangsAboveTheLimit(t *testing.T) {
	const rule = "spec.schedulingPolicy.gang.minCount: Invalid value: 5001: must be at most 5000 (MaxGangMinCount)"
	cases := []struct {
		name       string
		cfg        func(*Config)
		minCount   int32
		wantReason string
	}{
		{name: "count admission, minCount above the limit", minCount: scheduling.MaxGangMinCount + 1, wantReason: scheduling.ReasonMinCountTooLarge},
		{name: "capacity admission, minCount above the limit", cfg: capacityMode, minCount: scheduling.MaxGangMinCount + 1, wantReason: scheduling.ReasonMinCountTooLarge},
		{name: "minCount at the limit waits for its pods", minCount: scheduling.MaxGangMinCount, wantReason: scheduling.ReasonWaitingForPods},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs := objects(newGroup(tc.minCount), pods("p", 3)...)
			if tc.cfg != nil {
				objs = append(objs, newNode("n1", "8"))
			}
			h := newHarness(t, tc.cfg, objs...)
			h.sync()
			wantCondition(t, h.group(), v1alpha1.ConditionAdmitted, metav1.ConditionFalse, tc.wantReason, "")
			c := cond(h.group(), v1alpha1.ConditionAdmitted)
			if tooLarge := c != nil && strings.HasPrefix(c.Message, rule); tooLarge != (tc.wantReason == scheduling.ReasonMinCountTooLarge) {
				t.Errorf("message %q, want it to start with %q: %v", c.Message, rule, tooLarge)
			}
			if a, ok := h.c.admitter.(*capacityadmission.Mode); ok && a.Offered(testKey) {
				t.Errorf("a gang above the limit is offered to admission")
			}
		})
	}
}

// TestSyncGroupCreatedFromAnAnnotationAboveTheLimit: a pod-only user's
// min-count "5001" creates a group that says why it is never admitted.
func TestSyncGroupCreatedFromAnAnnotationAboveTheLimit(t *testing.T) {
	h := newHarness(t, nil, newPod("p-0", annotated(scheduling.MinCountAnnotation, "5001")))
	h.sync()
	h.step(time.Second)
	wantCondition(t, h.group(), v1alpha1.ConditionAdmitted, metav1.ConditionFalse, scheduling.ReasonMinCountTooLarge, "")
}

// TestRefusedStatusWaitsForASpecChange: a new generation of the spec ends
// the backoff at once; the backoff doubles while the spec stays.
func TestRefusedStatusWaitsForASpecChange(t *testing.T) {
	r := newGroupMemories()
	if d := r.reject(testKey, 1, "x", t0); d != statusRejectedBackoff {
		t.Errorf("first backoff %s, want %s", d, statusRejectedBackoff)
	}
	if d := r.rejectionHolds(testKey, 1, t0.Add(time.Second)); d != statusRejectedBackoff-time.Second {
		t.Errorf("holding %s, want %s", d, statusRejectedBackoff-time.Second)
	}
	if d := r.reject(testKey, 1, "x", t0); d != 2*statusRejectedBackoff {
		t.Errorf("second backoff %s, want it doubled", d)
	}
	for range 10 {
		r.reject(testKey, 1, "x", t0)
	}
	if d := r.rejectionHolds(testKey, 1, t0); d != maxStatusRejectedBackoff {
		t.Errorf("backoff %s, want it capped at %s", d, maxStatusRejectedBackoff)
	}
	if d := r.rejectionHolds(testKey, 2, t0); d != 0 {
		t.Errorf("holding %s after the spec changed, want 0", d)
	}
	if d := r.reject(testKey, 2, "x", t0); d != statusRejectedBackoff {
		t.Errorf("backoff %s after the spec changed, want it back at %s", d, statusRejectedBackoff)
	}
}
