package validation

import (
	"fmt"
	"math"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// podGroup returns a valid gang PodGroup, changed by mods.
func podGroup(mods ...func(*scheduling.PodGroup)) *scheduling.PodGroup {
	pg := &scheduling.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "ns", ResourceVersion: "1"},
		Spec:       scheduling.PodGroupSpec{SchedulingPolicy: gang(4)},
	}
	for _, m := range mods {
		m(pg)
	}
	return pg
}

func named(name string) func(*scheduling.PodGroup) {
	return func(pg *scheduling.PodGroup) { pg.Name = name }
}

func inNamespace(ns string) func(*scheduling.PodGroup) {
	return func(pg *scheduling.PodGroup) { pg.Namespace = ns }
}

func policy(p scheduling.PodGroupSchedulingPolicy) func(*scheduling.PodGroup) {
	return func(pg *scheduling.PodGroup) { pg.Spec.SchedulingPolicy = p }
}

func gates(names ...string) func(*scheduling.PodGroup) {
	return func(pg *scheduling.PodGroup) {
		pg.Spec.SchedulingGates = nil
		for _, n := range names {
			pg.Spec.SchedulingGates = append(pg.Spec.SchedulingGates, scheduling.PodGroupSchedulingGate{Name: n})
		}
	}
}

func workloadRef(workload, template string) func(*scheduling.PodGroup) {
	return func(pg *scheduling.PodGroup) {
		pg.Spec.WorkloadRef = &scheduling.WorkloadReference{WorkloadName: workload, TemplateName: template}
	}
}

func priority(p int32) func(*scheduling.PodGroup) {
	return func(pg *scheduling.PodGroup) { pg.Spec.Priority = &p }
}

func TestValidatePodGroup(t *testing.T) {
	both := scheduling.PodGroupSchedulingPolicy{Basic: &scheduling.BasicSchedulingPolicy{}, Gang: &scheduling.GangSchedulingPolicy{MinCount: 2}}
	bothBadMin := scheduling.PodGroupSchedulingPolicy{Basic: &scheduling.BasicSchedulingPolicy{}, Gang: &scheduling.GangSchedulingPolicy{MinCount: 0}}
	tests := []struct {
		name string
		pg   *scheduling.PodGroup
		want []want
	}{
		{"a gang group is valid", podGroup(), nil},
		{"a basic group is valid", podGroup(policy(basic())), nil},
		{"gang.minCount 1 is valid", podGroup(policy(gang(1))), nil},
		{"a group with workloadRef, gates and priority is valid", podGroup(workloadRef("train.v1", "workers"), gates("example.com/approval", "quota"), priority(10)), nil},
		{"a dotted name is a valid DNS subdomain", podGroup(named("train.v1")), nil},

		{"name is required", podGroup(named("")), []want{required("metadata.name")}},
		{"name must be a DNS subdomain", podGroup(named("Train_1")), []want{invalid("metadata.name")}},
		{"name must be at most 253 characters", podGroup(named(strings.Repeat("a", 254))), []want{invalid("metadata.name")}},
		{"name of 63 characters fits a pod label", podGroup(named(strings.Repeat("a", 63))), nil},
		{"name longer than a pod label can hold", podGroup(named(strings.Repeat("a", 64))), []want{invalid("metadata.name")}},
		{"namespace is required", podGroup(inNamespace("")), []want{required("metadata.namespace")}},

		{"policy with no member is required", podGroup(policy(scheduling.PodGroupSchedulingPolicy{})), []want{required("spec.schedulingPolicy")}},
		{"policy with both members is invalid", podGroup(policy(both)), []want{invalid("spec.schedulingPolicy")}},
		{"policy with both members and a bad minCount reports both", podGroup(policy(bothBadMin)), []want{invalid("spec.schedulingPolicy"), invalid("spec.schedulingPolicy.gang.minCount")}},
		{"gang.minCount 0 is invalid", podGroup(policy(gang(0))), []want{invalid("spec.schedulingPolicy.gang.minCount")}},
		{"gang.minCount negative is invalid", podGroup(policy(gang(-3))), []want{invalid("spec.schedulingPolicy.gang.minCount")}},
		{"gang.minCount at MaxGangMinCount is valid", podGroup(policy(gang(scheduling.MaxGangMinCount))), nil},
		{"gang.minCount above MaxGangMinCount is invalid: its placements could never be recorded", podGroup(policy(gang(scheduling.MaxGangMinCount + 1))), []want{invalid("spec.schedulingPolicy.gang.minCount")}},

		{"gate name is required", podGroup(gates("a", "")), []want{required("spec.schedulingGates[1].name")}},
		{"32 gates are allowed", podGroup(gates(gateNames(32)...)), nil},
		{"33 gates are too many", podGroup(gates(gateNames(33)...)), []want{tooMany("spec.schedulingGates")}},
		{"gate name must be a qualified name", podGroup(gates("not a gate")), []want{invalid("spec.schedulingGates[0].name")}},
		{"gate name prefix must be a DNS subdomain", podGroup(gates("Example_Com/approval")), []want{invalid("spec.schedulingGates[0].name")}},
		{"gate name has at most one slash", podGroup(gates("a/b/c")), []want{invalid("spec.schedulingGates[0].name")}},
		{"gate names are unique", podGroup(gates("a", "a")), []want{duplicate("spec.schedulingGates[1].name")}},
		{"every repeat of a gate name is a duplicate", podGroup(gates("a", "b", "a", "a")), []want{duplicate("spec.schedulingGates[2].name"), duplicate("spec.schedulingGates[3].name")}},

		{"workloadRef.workloadName is required", podGroup(workloadRef("", "workers")), []want{required("spec.workloadRef.workloadName")}},
		{"workloadRef.workloadName must be a DNS subdomain", podGroup(workloadRef("Train_1", "workers")), []want{invalid("spec.workloadRef.workloadName")}},
		{"workloadRef.templateName is required", podGroup(workloadRef("train", "")), []want{required("spec.workloadRef.templateName")}},
		{"workloadRef.templateName must be a DNS label, not a subdomain", podGroup(workloadRef("train", "workers.v1")), []want{invalid("spec.workloadRef.templateName")}},
		{"workloadRef.templateName must be lower case", podGroup(workloadRef("train", "Workers")), []want{invalid("spec.workloadRef.templateName")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, ValidatePodGroup(tc.pg), tc.want...)
		})
	}
}

func TestValidatePodGroupUpdate(t *testing.T) {
	tests := []struct {
		name     string
		old, new *scheduling.PodGroup
		want     []want
	}{
		{"no change is valid", podGroup(gates("a", "b")), podGroup(gates("a", "b")), nil},
		{"priority may change", podGroup(), podGroup(priority(5)), nil},

		{"removing the first gate is allowed", podGroup(gates("a", "b", "c")), podGroup(gates("b", "c")), nil},
		{"removing a middle gate is allowed", podGroup(gates("a", "b", "c")), podGroup(gates("a", "c")), nil},
		{"removing the last gate is allowed", podGroup(gates("a", "b", "c")), podGroup(gates("a", "b")), nil},
		{"removing two gates at once is allowed", podGroup(gates("a", "b", "c")), podGroup(gates("b")), nil},
		{"removing every gate is allowed", podGroup(gates("a", "b", "c")), podGroup(), nil},
		{"reordering gates is allowed", podGroup(gates("a", "b", "c")), podGroup(gates("c", "a", "b")), nil},
		{"adding a gate is forbidden", podGroup(gates("a")), podGroup(gates("a", "b")), []want{forbidden("spec.schedulingGates[1]")}},
		{"adding a gate to a group with none is forbidden", podGroup(), podGroup(gates("a")), []want{forbidden("spec.schedulingGates[0]")}},
		{"renaming a gate is forbidden", podGroup(gates("a", "b")), podGroup(gates("a", "c")), []want{forbidden("spec.schedulingGates[1]")}},
		{"removing one gate while adding another is forbidden", podGroup(gates("a", "b")), podGroup(gates("c", "b")), []want{forbidden("spec.schedulingGates[0]")}},
		{"re-adding a removed gate is forbidden", podGroup(gates("a")), podGroup(gates("b", "a")), []want{forbidden("spec.schedulingGates[0]")}},
		{"a gate cannot be duplicated on update", podGroup(gates("a", "b")), podGroup(gates("a", "a")), []want{duplicate("spec.schedulingGates[1].name")}},

		{"workloadRef cannot be unset", podGroup(workloadRef("train", "workers")), podGroup(), []want{invalid("spec.workloadRef")}},
		{"workloadRef cannot be set after creation", podGroup(), podGroup(workloadRef("train", "workers")), []want{invalid("spec.workloadRef")}},
		{"workloadRef.workloadName cannot change", podGroup(workloadRef("train", "workers")), podGroup(workloadRef("serve", "workers")), []want{invalid("spec.workloadRef")}},
		{"workloadRef.templateName cannot change", podGroup(workloadRef("train", "workers")), podGroup(workloadRef("train", "driver")), []want{invalid("spec.workloadRef")}},

		{"gang.minCount may grow", podGroup(policy(gang(4))), podGroup(policy(gang(8))), nil},
		{"gang.minCount may shrink", podGroup(policy(gang(4))), podGroup(policy(gang(1))), nil},
		{"gang.minCount may not grow past MaxGangMinCount", podGroup(policy(gang(4))), podGroup(policy(gang(scheduling.MaxGangMinCount + 1))), []want{invalid("spec.schedulingPolicy.gang.minCount")}},
		{"a gang.minCount stored above the bound stays valid unchanged", podGroup(policy(gang(9000))), podGroup(policy(gang(9000)), priority(5)), nil},
		{"a gang.minCount stored above the bound may be lowered", podGroup(policy(gang(9000))), podGroup(policy(gang(6000))), nil},
		{"a gang.minCount stored above the bound may not grow", podGroup(policy(gang(9000))), podGroup(policy(gang(9001))), []want{invalid("spec.schedulingPolicy.gang.minCount")}},
		{"gang.minCount must stay at least 1", podGroup(policy(gang(4))), podGroup(policy(gang(0))), []want{invalid("spec.schedulingPolicy.gang.minCount")}},
		{"switching gang to basic is forbidden", podGroup(policy(gang(4))), podGroup(policy(basic())), []want{forbidden("spec.schedulingPolicy")}},
		{"switching basic to gang is forbidden", podGroup(policy(basic())), podGroup(policy(gang(4))), []want{forbidden("spec.schedulingPolicy")}},
		{"clearing the policy is required and forbidden", podGroup(policy(gang(4))), podGroup(policy(scheduling.PodGroupSchedulingPolicy{})), []want{required("spec.schedulingPolicy"), forbidden("spec.schedulingPolicy")}},

		{"name is immutable", podGroup(), podGroup(named("other")), []want{invalid("metadata.name")}},
		{"resourceVersion is required on update", podGroup(), podGroup(func(pg *scheduling.PodGroup) { pg.ResourceVersion = "" }), []want{invalid("metadata.resourceVersion")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, ValidatePodGroupUpdate(tc.new, tc.old), tc.want...)
		})
	}
}

// TestGatesCanBeRemovedInAnyOrder removes three gates one at a time, in every
// order, and expects each step to be valid.
func TestGatesCanBeRemovedInAnyOrder(t *testing.T) {
	for _, order := range [][]string{
		{"a", "b", "c"}, {"a", "c", "b"}, {"b", "a", "c"},
		{"b", "c", "a"}, {"c", "a", "b"}, {"c", "b", "a"},
	} {
		t.Run(strings.Join(order, ","), func(t *testing.T) {
			remaining := []string{"a", "b", "c"}
			old := podGroup(gates(remaining...))
			for _, gone := range order {
				remaining = without(remaining, gone)
				next := podGroup(gates(remaining...))
				expectErrors(t, ValidatePodGroupUpdate(next, old))
				old = next
			}
		})
	}
}

// TestRemovedGateCannotComeBack removes a gate and then tries to put it back.
func TestRemovedGateCannotComeBack(t *testing.T) {
	created := podGroup(gates("a", "b"))
	removed := podGroup(gates("a"))
	expectErrors(t, ValidatePodGroupUpdate(removed, created))
	readded := podGroup(gates("a", "b"))
	expectErrors(t, ValidatePodGroupUpdate(readded, removed), forbidden("spec.schedulingGates[1]"))
}

func without(names []string, gone string) []string {
	var out []string
	for _, n := range names {
		if n != gone {
			out = append(out, n)
		}
	}
	return out
}

func uids(prefix string, n int) []types.UID {
	out := make([]types.UID, n)
	for i := range out {
		out[i] = types.UID(fmt.Sprintf("%s-%d", prefix, i))
	}
	return out
}

func TestValidatePodGroupStatusUpdate(t *testing.T) {
	const (
		True  = metav1.ConditionTrue
		False = metav1.ConditionFalse
	)
	healthy := scheduling.PodGroupStatus{
		Conditions: []metav1.Condition{
			cond(scheduling.ConditionAdmitted, True, "GangComplete"),
			cond(scheduling.ConditionScheduled, True, "MinCountBound"),
		},
		Phase: scheduling.PodGroupRunning,
		Pods:  5, Gated: 1, Active: 4, Scheduled: 3, Ready: 2, Succeeded: 1, Failed: 1,
		UncountedTerminatedPods: &scheduling.UncountedTerminatedPods{Succeeded: []types.UID{"s1"}, Failed: []types.UID{"f1"}},
		AdmissionTime:           at(10), StartTime: at(20), CompletionTime: at(30),
		ObservedGeneration: 2,
	}
	s := func(mod func(*scheduling.PodGroupStatus)) scheduling.PodGroupStatus {
		st := *healthy.DeepCopy()
		mod(&st)
		return st
	}
	zero := scheduling.PodGroupStatus{}
	tests := []struct {
		name     string
		old, new scheduling.PodGroupStatus
		want     []want
	}{
		{"an empty status is valid", zero, zero, nil},
		{"a consistent status is valid", zero, healthy, nil},
		{"gated plus scheduled may equal pods", zero, scheduling.PodGroupStatus{Pods: 3, Gated: 1, Scheduled: 2, Ready: 2}, nil},
		{"completionTime may equal startTime", zero, s(func(st *scheduling.PodGroupStatus) { st.CompletionTime = at(20) }), nil},
		{"succeeded and failed may exceed pods", zero, scheduling.PodGroupStatus{Succeeded: 7, Failed: 3}, nil},
		{"500 uncounted UIDs in each list are allowed", zero, scheduling.PodGroupStatus{UncountedTerminatedPods: &scheduling.UncountedTerminatedPods{Succeeded: uids("s", 500), Failed: uids("f", 500)}}, nil},

		{"pods must not be negative", zero, scheduling.PodGroupStatus{Pods: -1}, []want{
			invalid("status.pods"),
			// With pods at -1 every existing-pod counter of 0 exceeds it.
			invalid("status.gated"), invalid("status.active"), invalid("status.scheduled"), invalid("status.ready"), invalid("status.gated"),
		}},
		{"gated must not be negative", zero, scheduling.PodGroupStatus{Gated: -1}, []want{invalid("status.gated")}},
		{"active must not be negative", zero, scheduling.PodGroupStatus{Active: -1}, []want{invalid("status.active")}},
		{"scheduled must not be negative", zero, scheduling.PodGroupStatus{Scheduled: -1}, []want{invalid("status.scheduled"), invalid("status.ready")}},
		{"ready must not be negative", zero, scheduling.PodGroupStatus{Ready: -1}, []want{invalid("status.ready")}},
		{"succeeded must not be negative", zero, scheduling.PodGroupStatus{Succeeded: -1}, []want{invalid("status.succeeded"), invalid("status.succeeded")}},
		{"failed must not be negative", zero, scheduling.PodGroupStatus{Failed: -1}, []want{invalid("status.failed"), invalid("status.failed")}},
		{"observedGeneration must not be negative", zero, scheduling.PodGroupStatus{ObservedGeneration: -1}, []want{invalid("status.observedGeneration")}},

		{"gated must not exceed pods", zero, scheduling.PodGroupStatus{Pods: 2, Gated: 3}, []want{invalid("status.gated"), invalid("status.gated")}},
		{"active must not exceed pods", zero, scheduling.PodGroupStatus{Pods: 2, Active: 3}, []want{invalid("status.active")}},
		{"scheduled must not exceed pods", zero, scheduling.PodGroupStatus{Pods: 2, Scheduled: 3}, []want{invalid("status.scheduled"), invalid("status.gated")}},
		{"ready must not exceed pods", zero, scheduling.PodGroupStatus{Pods: 2, Scheduled: 2, Ready: 3}, []want{invalid("status.ready"), invalid("status.ready")}},
		{"ready must not exceed scheduled", zero, scheduling.PodGroupStatus{Pods: 3, Scheduled: 1, Ready: 2}, []want{invalid("status.ready")}},
		{"gated plus scheduled must not exceed pods", zero, scheduling.PodGroupStatus{Pods: 3, Gated: 2, Scheduled: 2}, []want{invalid("status.gated")}},
		{"gated plus scheduled must not exceed pods even past the int32 range", zero, scheduling.PodGroupStatus{Pods: math.MaxInt32, Gated: math.MaxInt32, Scheduled: math.MaxInt32}, []want{invalid("status.gated")}},

		{"condition type is required", zero, scheduling.PodGroupStatus{Conditions: []metav1.Condition{cond("", True, "R")}}, []want{required("status.conditions[0].type")}},
		{"condition type must be a qualified name", zero, scheduling.PodGroupStatus{Conditions: []metav1.Condition{cond("not valid", True, "R")}}, []want{invalid("status.conditions[0].type")}},
		{"condition status must be True, False or Unknown", zero, scheduling.PodGroupStatus{Conditions: []metav1.Condition{cond(scheduling.ConditionAdmitted, "Maybe", "R")}}, []want{notSupported("status.conditions[0].status")}},
		{"condition reason is required", zero, scheduling.PodGroupStatus{Conditions: []metav1.Condition{cond(scheduling.ConditionAdmitted, True, "")}}, []want{required("status.conditions[0].reason")}},
		{"condition reason must be CamelCase", zero, scheduling.PodGroupStatus{Conditions: []metav1.Condition{cond(scheduling.ConditionAdmitted, True, "not a reason")}}, []want{invalid("status.conditions[0].reason")}},
		{"condition lastTransitionTime is required", zero, scheduling.PodGroupStatus{Conditions: []metav1.Condition{{Type: scheduling.ConditionAdmitted, Status: True, Reason: "R"}}}, []want{required("status.conditions[0].lastTransitionTime")}},
		{"condition types are unique", zero, scheduling.PodGroupStatus{Conditions: []metav1.Condition{cond(scheduling.ConditionAdmitted, True, "R"), cond(scheduling.ConditionAdmitted, False, "R")}}, []want{duplicate("status.conditions[1]")}},

		{"501 uncounted succeeded UIDs are too many", zero, scheduling.PodGroupStatus{UncountedTerminatedPods: &scheduling.UncountedTerminatedPods{Succeeded: uids("s", 501)}}, []want{tooMany("status.uncountedTerminatedPods.succeeded")}},
		{"501 uncounted failed UIDs are too many", zero, scheduling.PodGroupStatus{UncountedTerminatedPods: &scheduling.UncountedTerminatedPods{Failed: uids("f", 501)}}, []want{tooMany("status.uncountedTerminatedPods.failed")}},
		{"an uncounted succeeded UID must not be empty", zero, scheduling.PodGroupStatus{UncountedTerminatedPods: &scheduling.UncountedTerminatedPods{Succeeded: []types.UID{"a", ""}}}, []want{required("status.uncountedTerminatedPods.succeeded[1]")}},
		{"an uncounted failed UID must not be empty", zero, scheduling.PodGroupStatus{UncountedTerminatedPods: &scheduling.UncountedTerminatedPods{Failed: []types.UID{""}}}, []want{required("status.uncountedTerminatedPods.failed[0]")}},
		{"uncounted succeeded UIDs are unique", zero, scheduling.PodGroupStatus{UncountedTerminatedPods: &scheduling.UncountedTerminatedPods{Succeeded: []types.UID{"a", "b", "a"}}}, []want{duplicate("status.uncountedTerminatedPods.succeeded[2]")}},
		{"uncounted failed UIDs are unique", zero, scheduling.PodGroupStatus{UncountedTerminatedPods: &scheduling.UncountedTerminatedPods{Failed: []types.UID{"a", "a"}}}, []want{duplicate("status.uncountedTerminatedPods.failed[1]")}},
		{"a placement names a pod, its UID and a node", zero, scheduling.PodGroupStatus{Placements: []scheduling.PodPlacement{{Pod: "w-0", UID: "u0", Node: "node-1"}}}, nil},
		{"a placement's pod name must be valid", zero, scheduling.PodGroupStatus{Placements: []scheduling.PodPlacement{{Pod: "W_0", UID: "u0", Node: "node-1"}}}, []want{invalid("status.placements[0].pod")}},
		{"a placement's node name must be valid", zero, scheduling.PodGroupStatus{Placements: []scheduling.PodPlacement{{Pod: "w-0", UID: "u0", Node: ""}}}, []want{invalid("status.placements[0].node")}},
		{"a placement's UID is required", zero, scheduling.PodGroupStatus{Placements: []scheduling.PodPlacement{{Pod: "w-0", Node: "n"}}}, []want{required("status.placements[0].uid")}},
		{"a pod is placed once", zero, scheduling.PodGroupStatus{Placements: []scheduling.PodPlacement{{Pod: "w-0", UID: "u0", Node: "a"}, {Pod: "w-1", UID: "u0", Node: "b"}}}, []want{duplicate("status.placements[1].uid")}},
		{"5001 placements are too many", zero, scheduling.PodGroupStatus{Placements: placements(5001)}, []want{tooMany("status.placements")}},
		{"a UID cannot be both succeeded and failed", zero, scheduling.PodGroupStatus{UncountedTerminatedPods: &scheduling.UncountedTerminatedPods{Succeeded: []types.UID{"a"}, Failed: []types.UID{"b", "a"}}}, []want{duplicate("status.uncountedTerminatedPods.failed[1]")}},

		{"completionTime must not be before startTime", zero, s(func(st *scheduling.PodGroupStatus) { st.CompletionTime = at(19) }), []want{invalid("status.completionTime")}},

		{"succeeded may grow", s(func(st *scheduling.PodGroupStatus) { st.Succeeded = 0 }), healthy, nil},
		{"succeeded must not decrease", s(func(st *scheduling.PodGroupStatus) { st.Succeeded = 2 }), healthy, []want{invalid("status.succeeded")}},
		{"failed must not decrease", s(func(st *scheduling.PodGroupStatus) { st.Failed = 2 }), healthy, []want{invalid("status.failed")}},
		{"admissionTime may be set once", s(func(st *scheduling.PodGroupStatus) { st.AdmissionTime = nil }), healthy, nil},
		{"admissionTime cannot change once set", healthy, s(func(st *scheduling.PodGroupStatus) { st.AdmissionTime = at(11) }), []want{invalid("status.admissionTime")}},
		{"admissionTime cannot be cleared once set", healthy, s(func(st *scheduling.PodGroupStatus) { st.AdmissionTime = nil }), []want{invalid("status.admissionTime")}},
		{"Scheduled may become True", s(func(st *scheduling.PodGroupStatus) { st.Conditions[1].Status = False }), healthy, nil},
		{"Scheduled cannot go from True to False", healthy, s(func(st *scheduling.PodGroupStatus) { st.Conditions[1].Status = False }), []want{forbidden("status.conditions")}},
		{"Scheduled cannot go from True to Unknown", healthy, s(func(st *scheduling.PodGroupStatus) { st.Conditions[1].Status = metav1.ConditionUnknown }), []want{forbidden("status.conditions")}},
		{"Scheduled cannot be removed once True", healthy, s(func(st *scheduling.PodGroupStatus) { st.Conditions = st.Conditions[:1] }), []want{forbidden("status.conditions")}},
		{"Finished may end Failed", zero, scheduling.PodGroupStatus{Conditions: []metav1.Condition{cond(scheduling.ConditionFinished, True, scheduling.ReasonFailed)}}, nil},
		{"Finished True must have reason Succeeded or Failed", zero, scheduling.PodGroupStatus{Conditions: []metav1.Condition{cond(scheduling.ConditionFinished, True, "Done")}}, []want{notSupported("status.conditions")}},
		{"Finished False may have any reason", zero, scheduling.PodGroupStatus{Conditions: []metav1.Condition{cond(scheduling.ConditionFinished, False, "Running")}}, nil},
		{"Admitted may leave True", healthy, s(func(st *scheduling.PodGroupStatus) { st.Conditions[0].Status = False }), nil},

		{"preempted may count failed pods", zero, scheduling.PodGroupStatus{Failed: 3, Preempted: 3}, nil},
		{"preempted must not exceed failed", zero, scheduling.PodGroupStatus{Failed: 2, Preempted: 3}, []want{invalid("status.preempted")}},
		{"preempted must not be negative", zero, scheduling.PodGroupStatus{Preempted: -1}, []want{invalid("status.preempted"), invalid("status.preempted")}},
		{"preempted must not decrease", scheduling.PodGroupStatus{Failed: 3, Preempted: 3}, scheduling.PodGroupStatus{Failed: 3, Preempted: 2}, []want{invalid("status.preempted")}},
		{"an uncounted preempted UID is an uncounted failed one", zero, scheduling.PodGroupStatus{UncountedTerminatedPods: &scheduling.UncountedTerminatedPods{Failed: []types.UID{"a", "b"}, Preempted: []types.UID{"b"}}}, nil},
		{"an uncounted preempted UID must be in failed", zero, scheduling.PodGroupStatus{UncountedTerminatedPods: &scheduling.UncountedTerminatedPods{Failed: []types.UID{"a"}, Succeeded: []types.UID{"b"}, Preempted: []types.UID{"b"}}}, []want{invalid("status.uncountedTerminatedPods.preempted[0]")}},
		{"uncounted preempted UIDs are unique", zero, scheduling.PodGroupStatus{UncountedTerminatedPods: &scheduling.UncountedTerminatedPods{Failed: []types.UID{"a"}, Preempted: []types.UID{"a", "a"}}}, []want{duplicate("status.uncountedTerminatedPods.preempted[1]")}},
		{"a preemption names its victims", zero, scheduling.PodGroupStatus{Preemption: preemption(10, victim("PodGroup", "low", 1), victim("Pod", "web-0", 0))}, nil},
		{"a preemption names at least one victim", zero, scheduling.PodGroupStatus{Preemption: preemption(10)}, []want{required("status.preemption.victims")}},
		{"a victim's kind is PodGroup or Pod", zero, scheduling.PodGroupStatus{Preemption: preemption(10, victim("Job", "low", 1))}, []want{notSupported("status.preemption.victims[0].kind")}},
		{"a victim's name must be valid", zero, scheduling.PodGroupStatus{Preemption: preemption(10, victim("PodGroup", "Low_1", 1))}, []want{invalid("status.preemption.victims[0].name")}},
		{"a victim's priority is strictly lower", zero, scheduling.PodGroupStatus{Preemption: preemption(10, victim("PodGroup", "equal", 10))}, []want{invalid("status.preemption.victims[0].priority")}},
		{"a victim is named once", zero, scheduling.PodGroupStatus{Preemption: preemption(10, victim("PodGroup", "low", 1), victim("PodGroup", "low", 1))}, []want{duplicate("status.preemption.victims[1].uid")}},
		{"a victim in another namespace is named by ref", zero, scheduling.PodGroupStatus{Preemption: preemption(10, victim("PodGroup", "low", 1), byRef("PodGroup", "theirs", 1))}, nil},
		{"a ref must be a VictimRef", zero, scheduling.PodGroupStatus{Preemption: preemption(10, scheduling.PreemptionVictim{Kind: "Pod", Ref: "team-b/web-0", Priority: 1})},
			[]want{invalid("status.preemption.victims[0].ref")}},
		{"a victim named by ref has no names beside it", zero, scheduling.PodGroupStatus{Preemption: preemption(10, withNames(byRef("PodGroup", "theirs", 1)))},
			[]want{forbidden("status.preemption.victims[0].namespace"), forbidden("status.preemption.victims[0].name"), forbidden("status.preemption.victims[0].uid")}},
		{"a victim is named by ref once", zero, scheduling.PodGroupStatus{Preemption: preemption(10, byRef("PodGroup", "theirs", 1), byRef("PodGroup", "theirs", 1))},
			[]want{duplicate("status.preemption.victims[1].ref")}},
		{"101 victims are too many", zero, scheduling.PodGroupStatus{Preemption: preemption(10, victims(101)...)}, []want{tooMany("status.preemption.victims")}},
		{"a preempted group's admissionTime may move forward when it is admitted again", preempted(healthy), s(func(st *scheduling.PodGroupStatus) { st.AdmissionTime = at(40) }), nil},
		{"a preempted group's admissionTime cannot move back", preempted(healthy), s(func(st *scheduling.PodGroupStatus) { st.AdmissionTime = at(5) }), []want{invalid("status.admissionTime")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := podGroup(func(pg *scheduling.PodGroup) { pg.Status = tc.old })
			pg := podGroup(func(pg *scheduling.PodGroup) { pg.Status = tc.new })
			expectErrors(t, ValidatePodGroupStatusUpdate(pg, old), tc.want...)
		})
	}
}

func TestAdmittedNeedsNoGroupGates(t *testing.T) {
	admitted := scheduling.PodGroupStatus{Conditions: []metav1.Condition{cond(scheduling.ConditionAdmitted, metav1.ConditionTrue, "GangComplete")}}
	tests := []struct {
		name   string
		gates  []scheduling.PodGroupSchedulingGate
		status scheduling.PodGroupStatus
		want   []want
	}{
		{"admitted with no gates is valid", nil, admitted, nil},
		{"not admitted with gates is valid", []scheduling.PodGroupSchedulingGate{{Name: "example.com/approval"}}, scheduling.PodGroupStatus{}, nil},
		{"admitted while a gate remains is forbidden", []scheduling.PodGroupSchedulingGate{{Name: "example.com/approval"}}, admitted, []want{forbidden("status.conditions")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := podGroup(func(pg *scheduling.PodGroup) { pg.Spec.SchedulingGates = tc.gates })
			pg := podGroup(func(pg *scheduling.PodGroup) { pg.Spec.SchedulingGates = tc.gates; pg.Status = tc.status })
			expectErrors(t, ValidatePodGroupStatusUpdate(pg, old), tc.want...)
		})
	}
}

func placements(n int) []scheduling.PodPlacement {
	out := make([]scheduling.PodPlacement, n)
	for i := range out {
		out[i] = scheduling.PodPlacement{Pod: fmt.Sprintf("p-%d", i), UID: types.UID(fmt.Sprintf("u-%d", i)), Node: "node"}
	}
	return out
}

func gateNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("example.com/gate-%d", i)
	}
	return out
}

func preemption(priority int32, vs ...scheduling.PreemptionVictim) *scheduling.PodGroupPreemption {
	return &scheduling.PodGroupPreemption{Time: metav1.Unix(100, 0), Priority: priority, Victims: vs}
}

func victim(kind, name string, priority int32) scheduling.PreemptionVictim {
	return scheduling.PreemptionVictim{Kind: kind, Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Priority: priority, Pods: 2}
}

// byRef is a victim in another namespace, recorded by ref.
func byRef(kind, name string, priority int32) scheduling.PreemptionVictim {
	return scheduling.PreemptionVictim{Kind: kind, Ref: scheduling.VictimRef(types.UID("uid-" + name)), Priority: priority}
}

// withNames sets the names that a ref stands for beside it.
func withNames(v scheduling.PreemptionVictim) scheduling.PreemptionVictim {
	v.Namespace, v.Name, v.UID = "team-b", "theirs", "uid-theirs"
	return v
}

func victims(n int) []scheduling.PreemptionVictim {
	out := make([]scheduling.PreemptionVictim, n)
	for i := range out {
		out[i] = victim("PodGroup", fmt.Sprintf("low-%d", i), 1)
	}
	return out
}

// preempted is st with Preempted=True, as a group is once preempted.
func preempted(st scheduling.PodGroupStatus) scheduling.PodGroupStatus {
	out := *st.DeepCopy()
	out.Conditions = append(out.Conditions, cond(scheduling.ConditionPreempted, metav1.ConditionTrue, scheduling.ReasonPreemptionByMuster))
	return out
}
