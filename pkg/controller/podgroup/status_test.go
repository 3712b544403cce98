package podgroup

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// TestEveryStatusFieldIsClassified changes one status field at a time and
// checks whether the change counts as a decision. A field missing from the
// table fails the test, so whoever adds a status field says whether it is a
// decision (written at once) or a refresh (batched).
func TestEveryStatusFieldIsClassified(t *testing.T) {
	t1 := metav1.NewTime(t0)
	cond := func(mod func(*metav1.Condition)) []metav1.Condition {
		c := metav1.Condition{Type: v1alpha1.ConditionAdmitted, Status: metav1.ConditionFalse, Reason: scheduling.ReasonWaitingForPods, Message: "m"}
		mod(&c)
		return []metav1.Condition{c}
	}
	base := v1alpha1.PodGroupStatus{Conditions: cond(func(*metav1.Condition) {}), Roles: []v1alpha1.PodGroupRoleStatus{{Name: "worker", Active: 1}}}
	cases := []struct {
		field    string
		name     string
		change   func(s *v1alpha1.PodGroupStatus)
		decision bool
	}{
		{"Conditions", "a condition's status is a decision", func(s *v1alpha1.PodGroupStatus) {
			s.Conditions = cond(func(c *metav1.Condition) { c.Status = metav1.ConditionTrue })
		}, true},
		{"Conditions", "a condition's reason is a decision", func(s *v1alpha1.PodGroupStatus) {
			s.Conditions = cond(func(c *metav1.Condition) { c.Reason = scheduling.ReasonSchedulingGated })
		}, true},
		{"Conditions", "a new condition is a decision", func(s *v1alpha1.PodGroupStatus) {
			s.Conditions = append(s.Conditions, metav1.Condition{Type: v1alpha1.ConditionScheduled, Status: metav1.ConditionTrue, Reason: scheduling.ReasonMinCountBound})
		}, true},
		{"Conditions", "a condition's message is a refresh", func(s *v1alpha1.PodGroupStatus) {
			s.Conditions = cond(func(c *metav1.Condition) { c.Message = "other" })
		}, false},
		{"Conditions", "a condition's observedGeneration is a refresh", func(s *v1alpha1.PodGroupStatus) {
			s.Conditions = cond(func(c *metav1.Condition) { c.ObservedGeneration = 2 })
		}, false},
		{"Conditions", "a condition's lastTransitionTime alone is a refresh", func(s *v1alpha1.PodGroupStatus) {
			s.Conditions = cond(func(c *metav1.Condition) { c.LastTransitionTime = t1 })
		}, false},
		{"Phase", "the derived phase is a refresh", func(s *v1alpha1.PodGroupStatus) { s.Phase = v1alpha1.PodGroupRunning }, false},
		{"Pods", "the pod count is a refresh", func(s *v1alpha1.PodGroupStatus) { s.Pods = 1 }, false},
		{"Gated", "the gated count is a refresh", func(s *v1alpha1.PodGroupStatus) { s.Gated = 1 }, false},
		{"Active", "the active count is a refresh", func(s *v1alpha1.PodGroupStatus) { s.Active = 1 }, false},
		{"Scheduled", "the scheduled count is a refresh", func(s *v1alpha1.PodGroupStatus) { s.Scheduled = 1 }, false},
		{"Ready", "the ready count is a refresh", func(s *v1alpha1.PodGroupStatus) { s.Ready = 1 }, false},
		{"Succeeded", "a success counted is a decision", func(s *v1alpha1.PodGroupStatus) { s.Succeeded = 1 }, true},
		{"Failed", "a failure counted is a decision", func(s *v1alpha1.PodGroupStatus) { s.Failed = 1 }, true},
		{"UncountedTerminatedPods", "a recorded UID is a decision", func(s *v1alpha1.PodGroupStatus) {
			s.UncountedTerminatedPods = &v1alpha1.UncountedTerminatedPods{Succeeded: []types.UID{"u"}}
		}, true},
		{"AdmissionTime", "admissionTime is a decision", func(s *v1alpha1.PodGroupStatus) { s.AdmissionTime = &t1 }, true},
		{"StartTime", "startTime is a decision", func(s *v1alpha1.PodGroupStatus) { s.StartTime = &t1 }, true},
		{"CompletionTime", "completionTime is a decision", func(s *v1alpha1.PodGroupStatus) { s.CompletionTime = &t1 }, true},
		{"Reservations", "capacity held for pods not yet created is a decision", func(s *v1alpha1.PodGroupStatus) {
			s.Reservations = []v1alpha1.RoleReservation{{Role: "worker", Node: "n", Count: 1}}
		}, true},
		{"Placements", "a pod placed is a decision", func(s *v1alpha1.PodGroupStatus) {
			s.Placements = []v1alpha1.PodPlacement{{Pod: "p", UID: "u", Node: "n"}}
		}, true},
		{"Roles", "a role's active pods are a refresh", func(s *v1alpha1.PodGroupStatus) { s.Roles[0].Active = 2 }, false},
		{"Roles", "a role's finished count is a decision", func(s *v1alpha1.PodGroupStatus) { s.Roles[0].Succeeded = 1 }, true},
		{"Roles", "a role's uncounted pods are a decision", func(s *v1alpha1.PodGroupStatus) {
			s.Roles[0].UncountedTerminatedPods = &v1alpha1.UncountedTerminatedPods{Failed: []types.UID{"u"}}
		}, true},
		{"Preempted", "the preempted count is a decision", func(s *v1alpha1.PodGroupStatus) { s.Preempted = 1 }, true},
		{"Preemption", "a preemption decided is a decision", func(s *v1alpha1.PodGroupStatus) {
			s.Preemption = &v1alpha1.PodGroupPreemption{Priority: 10, Victims: []v1alpha1.PreemptionVictim{{Kind: "PodGroup", Namespace: "ns", Name: "low", UID: "u", Priority: 1}}}
		}, true},
		{"TopologyDomain", "the domain a gang is admitted in is a decision", func(s *v1alpha1.PodGroupStatus) {
			s.TopologyDomain = &v1alpha1.TopologyDomain{Key: "example.com/rack", Value: "r1"}
		}, true},
		{"Roles", "a role's topology domain is a decision", func(s *v1alpha1.PodGroupStatus) {
			s.Roles[0].TopologyDomain = &v1alpha1.TopologyDomain{Key: "example.com/rack", Value: "r1"}
		}, true},
		{"ObservedGeneration", "observedGeneration is a refresh", func(s *v1alpha1.PodGroupStatus) { s.ObservedGeneration = 3 }, false},
	}
	covered := map[string]bool{}
	for _, tc := range cases {
		covered[tc.field] = true
		t.Run(tc.name, func(t *testing.T) {
			a := &v1alpha1.PodGroup{Status: *base.DeepCopy()}
			b := a.DeepCopy()
			tc.change(&b.Status)
			if equalStatus(a, b) {
				t.Fatalf("the change left status equal")
			}
			if got := decisionChanged(a, b); got != tc.decision {
				t.Errorf("decisionChanged = %v, want %v", got, tc.decision)
			}
		})
	}
	typ := reflect.TypeOf(v1alpha1.PodGroupStatus{})
	for i := range typ.NumField() {
		if name := typ.Field(i).Name; !covered[name] {
			t.Errorf("status field %s is neither a decision nor a refresh in this table: classify it (decisions in status.go)", name)
		}
	}
}

// TestPrunedPlacementIsARefresh: dropping the placement of a pod that was
// released reserves nothing new, so it waits for the batch period.
func TestPrunedPlacementIsARefresh(t *testing.T) {
	a := &v1alpha1.PodGroup{Status: v1alpha1.PodGroupStatus{Placements: []v1alpha1.PodPlacement{{Pod: "p", UID: "u", Node: "n"}, {Pod: "q", UID: "v", Node: "n"}}}}
	b := a.DeepCopy()
	b.Status.Placements = b.Status.Placements[1:]
	if decisionChanged(a, b) {
		t.Error("dropping a placement counts as a decision, want a refresh")
	}
}
