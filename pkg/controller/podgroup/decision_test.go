package podgroup

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/controller/admission"
)

// TestRecordDecision: what a mode decided goes into status as it says, and
// its events only once the write that records it succeeded.
func TestRecordDecision(t *testing.T) {
	placed := []v1alpha1.PodPlacement{{Pod: "p-0", UID: "uid-p-0", Node: "n1"}}
	reserved := []v1alpha1.RoleReservation{{Role: "worker", Node: "n1", Count: 2}}
	tests := []struct {
		name         string
		group        *v1alpha1.PodGroup
		decision     admission.Decision
		wantAdmitted bool
		// wantConditions are type=status/reason, in status order.
		wantConditions []string
		wantPlaced     bool
		wantPreemption bool
		wantApplied    bool
		wantEvents     []string
	}{
		{
			name:           "an admission from a cycle writes its places, its conditions, then Admitted=True",
			group:          newGroup(1),
			decision:       admission.Decision{Admitted: true, Reason: scheduling.ReasonGangFits, Message: "fits", FromCycle: true, Places: &admission.Places{Placements: placed, Reservations: reserved}, Conditions: []admission.Condition{{Type: v1alpha1.ConditionCapacityReserved, Status: metav1.ConditionTrue, Reason: scheduling.ReasonAwaitingPods}}},
			wantAdmitted:   true,
			wantConditions: []string{"CapacityReserved=True/" + scheduling.ReasonAwaitingPods, "Admitted=True/" + scheduling.ReasonGangFits},
			wantPlaced:     true,
			wantApplied:    true,
			wantEvents:     []string{"Normal " + scheduling.EventAdmitted + " fits"},
		},
		{
			name:           "a readmission after a preemption ends it",
			group:          newGroup(1, condition(v1alpha1.ConditionPreempted, metav1.ConditionTrue, scheduling.ReasonPreemptionByMuster, t0)),
			decision:       admission.Decision{Admitted: true, Reason: scheduling.ReasonGangComplete, Message: "all here"},
			wantAdmitted:   true,
			wantConditions: []string{"Preempted=False/" + scheduling.ReasonReadmitted, "Admitted=True/" + scheduling.ReasonGangComplete},
			wantEvents:     []string{"Normal " + scheduling.EventAdmitted + " all here"},
		},
		{
			name:           "a preemption is recorded with Admitted=False and its own event, no Waiting one",
			group:          newGroup(1),
			decision:       admission.Decision{Reason: scheduling.ReasonPreempting, Message: "preempting 1", FromCycle: true, Preemption: &v1alpha1.PodGroupPreemption{Priority: 5}, Events: []admission.Event{{Type: corev1.EventTypeNormal, Reason: scheduling.EventPreempting, Message: "priority 5: preempting 1"}}},
			wantConditions: []string{"Admitted=False/" + scheduling.ReasonPreempting},
			wantPreemption: true,
			wantApplied:    true,
			wantEvents:     []string{"Normal " + scheduling.EventPreempting + " priority 5: preempting 1"},
		},
		{
			name:           "a gang that waits says why, with a Waiting event",
			group:          newGroup(1),
			decision:       admission.Decision{Reason: scheduling.ReasonInsufficientCapacity, Message: "no room"},
			wantConditions: []string{"Admitted=False/" + scheduling.ReasonInsufficientCapacity},
			wantEvents:     []string{"Normal " + scheduling.EventWaiting + " no room"},
		},
		{
			name:     "nothing new to say writes nothing",
			group:    newGroup(1),
			decision: admission.Decision{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(10)
			c := &Controller{recorder: rec, metrics: newControllerMetrics()}
			v := &podView{}
			pg := tc.group.DeepCopy()
			if got := c.recordDecision(pg, v, tc.decision, t0); got != tc.wantAdmitted {
				t.Errorf("admitted = %v, want %v", got, tc.wantAdmitted)
			}
			var conds []string
			for _, cond := range pg.Status.Conditions {
				conds = append(conds, cond.Type+"="+string(cond.Status)+"/"+cond.Reason)
			}
			if strings.Join(conds, ",") != strings.Join(tc.wantConditions, ",") {
				t.Errorf("conditions %v, want %v", conds, tc.wantConditions)
			}
			if tc.wantAdmitted != (pg.Status.AdmissionTime != nil) {
				t.Errorf("admissionTime %v, want it set: %v", pg.Status.AdmissionTime, tc.wantAdmitted)
			}
			if got := len(pg.Status.Placements) > 0 && len(pg.Status.Reservations) > 0; got != tc.wantPlaced {
				t.Errorf("placements %v and reservations %v, want them written: %v", pg.Status.Placements, pg.Status.Reservations, tc.wantPlaced)
			}
			if got := pg.Status.Preemption != nil; got != tc.wantPreemption {
				t.Errorf("preemption %v, want it written: %v", pg.Status.Preemption, tc.wantPreemption)
			}
			if v.decisionApplied != tc.wantApplied {
				t.Errorf("decisionApplied = %v, want %v", v.decisionApplied, tc.wantApplied)
			}
			if n := len(rec.Events); n != 0 {
				t.Fatalf("%d events before the write", n)
			}
			v.written()
			var events []string
			for len(rec.Events) > 0 {
				events = append(events, <-rec.Events)
			}
			if strings.Join(events, "|") != strings.Join(tc.wantEvents, "|") {
				t.Errorf("events %q, want %q", events, tc.wantEvents)
			}
			if tc.wantAdmitted && !meta.IsStatusConditionTrue(pg.Status.Conditions, v1alpha1.ConditionAdmitted) {
				t.Error("not admitted")
			}
		})
	}
}
