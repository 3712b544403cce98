package podgroup

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

func TestMarkOtherGates(t *testing.T) {
	const other = "example.com/quota"
	// releasedOnly is a group admitted and released, not yet bound.
	releasedOnly := func(minCount int32, mods ...groupMod) *v1alpha1.PodGroup {
		return newGroup(minCount, append([]groupMod{admittedAt(t0)}, mods...)...)
	}
	many := pods("w", 7, gates(other, "example.com/b"))
	cases := []struct {
		name        string
		pg          *v1alpha1.PodGroup
		pods        []*corev1.Pod
		wantReason  string // empty: no Scheduled condition
		wantStatus  metav1.ConditionStatus
		wantMessage string
	}{{
		name:        "a released pod that another tool still gates: Scheduled=False names the pod and its gates",
		pg:          releasedOnly(2),
		pods:        []*corev1.Pod{newPod("a", gates(other)), newPod("b", ungated)},
		wantReason:  scheduling.ReasonOtherSchedulingGates,
		wantStatus:  metav1.ConditionFalse,
		wantMessage: fmt.Sprintf("1 released pods still carry other scheduling gates, and the scheduler binds none of them until every gate is gone: a (%s)", other),
	}, {
		name:        "many such pods: the message names five and counts the rest",
		pg:          releasedOnly(7),
		pods:        many,
		wantReason:  scheduling.ReasonOtherSchedulingGates,
		wantStatus:  metav1.ConditionFalse,
		wantMessage: fmt.Sprintf("7 released pods still carry other scheduling gates, and the scheduler binds none of them until every gate is gone: w-0 (%[1]s, example.com/b); w-1 (%[1]s, example.com/b); w-2 (%[1]s, example.com/b); w-3 (%[1]s, example.com/b); w-4 (%[1]s, example.com/b) and 2 more", other),
	}, {
		name: "a pod that still carries Muster's gate besides another is Muster's to release, not reported",
		pg:   releasedOnly(1),
		pods: []*corev1.Pod{newPod("a", gates(scheduling.AdmissionGate, other))},
	}, {
		name: "a group not admitted yet reports nothing",
		pg:   newGroup(1),
		pods: []*corev1.Pod{newPod("a", gates(other))},
	}, {
		name: "a bound pod with a leftover gate is not held",
		pg:   releasedOnly(2),
		pods: []*corev1.Pod{newPod("a", gates(other), onNode("n1")), newPod("b", ungated)},
	}, {
		name: "the condition goes away once the other gate is gone",
		pg:   releasedOnly(2, condition(v1alpha1.ConditionScheduled, metav1.ConditionFalse, scheduling.ReasonOtherSchedulingGates, t0)),
		pods: []*corev1.Pod{newPod("a", ungated), newPod("b", ungated)},
	}, {
		name:        "a gang once scheduled stays Scheduled=True",
		pg:          admitted(2, scheduledAt(t0)),
		pods:        []*corev1.Pod{newPod("a", gates(other)), newPod("b", ungated)},
		wantReason:  scheduling.ReasonMinCountBound,
		wantStatus:  metav1.ConditionTrue,
		wantMessage: "*",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pg := tc.pg.DeepCopy()
			markScheduled(pg, classifyPods(tc.pods, t0, true), t0)
			if tc.wantReason == "" {
				wantNoCondition(t, pg, v1alpha1.ConditionScheduled)
				return
			}
			c := cond(pg, v1alpha1.ConditionScheduled)
			if c == nil || c.Reason != tc.wantReason || c.Status != tc.wantStatus || (tc.wantMessage != "*" && c.Message != tc.wantMessage) {
				t.Errorf("Scheduled = %+v, want %s/%s %q", c, tc.wantStatus, tc.wantReason, tc.wantMessage)
			}
		})
	}
}
