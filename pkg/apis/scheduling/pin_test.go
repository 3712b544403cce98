package scheduling

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestPinnedNode(t *testing.T) {
	pin := PinRequirement
	terms := func(ts ...corev1.NodeSelectorTerm) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: ts},
		}}}}
	}
	fields := func(rs ...corev1.NodeSelectorRequirement) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchFields: rs}
	}
	zone := corev1.NodeSelectorRequirement{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{name: "a pod without affinity is not pinned", pod: &corev1.Pod{}},
		{name: "a pod with only preferred affinity is not pinned", pod: &corev1.Pod{Spec: corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}}}},
		{name: "one term with the pin is pinned", pod: terms(fields(pin("n1"))), want: "n1"},
		{name: "the pin beside the user's own expressions is pinned", pod: terms(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{zone}, MatchFields: []corev1.NodeSelectorRequirement{pin("n1")}}), want: "n1"},
		{name: "every term pinned to the same node is pinned", pod: terms(fields(pin("n1")), fields(pin("n1"))), want: "n1"},
		{name: "a term without the pin leaves the pod free", pod: terms(fields(pin("n1")), corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{zone}})},
		{name: "terms pinned to different nodes are not one pin", pod: terms(fields(pin("n1")), fields(pin("n2")))},
		{name: "a requirement on the name with two values is not a pin", pod: terms(fields(corev1.NodeSelectorRequirement{Key: PinField, Operator: corev1.NodeSelectorOpIn, Values: []string{"n1", "n2"}}))},
		{name: "NotIn on the name is not a pin", pod: terms(fields(corev1.NodeSelectorRequirement{Key: PinField, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"n1"}}))},
		{name: "the hostname label is not the pin", pod: terms(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{"n1"}}}})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := PinnedNode(tc.pod); got != tc.want {
				t.Errorf("PinnedNode = %q, want %q", got, tc.want)
			}
		})
	}
}
