package podgroup

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

func TestMinCountAnnotations(t *testing.T) {
	cases := []struct {
		name   string
		group  *v1alpha1.PodGroup
		pods   []*corev1.Pod
		events []string
	}{{
		name:  "pods that agree with the group's minCount are not told anything",
		group: admitted(3),
		pods:  []*corev1.Pod{newPod("p-0", running, annotated(scheduling.MinCountAnnotation, "3")), newPod("p-1", running)},
	}, {
		name:  "a min-count the webhook accepts with a sign or leading zero agrees with the same number",
		group: admitted(8),
		pods:  []*corev1.Pod{newPod("p-0", running, annotated(scheduling.MinCountAnnotation, "08")), newPod("p-1", running, annotated(scheduling.MinCountAnnotation, "+8"))},
	}, {
		name:   "a pod whose min-count disagrees with the group's minCount gets a warning",
		group:  admitted(3),
		pods:   []*corev1.Pod{newPod("p-0", running, annotated(scheduling.MinCountAnnotation, "4")), newPod("p-1", running, annotated(scheduling.MinCountAnnotation, "3"))},
		events: []string{"Warning MinCountMismatch annotation scheduling.muster.dev/min-count=4 disagrees with PodGroup pg, whose minCount is 3; all pods of a group must agree"},
	}, {
		name:   "a basic group needs one pod, so a pod asking for more disagrees",
		group:  admitted(0, basicPolicy),
		pods:   []*corev1.Pod{newPod("p-0", running, annotated(scheduling.MinCountAnnotation, "2"))},
		events: []string{"Warning MinCountMismatch annotation scheduling.muster.dev/min-count=2 disagrees with PodGroup pg, whose minCount is 1; all pods of a group must agree"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil, objects(tc.group, tc.pods...)...)
			h.sync()
			wantEvents(t, h.events(), tc.events...)
			h.step(time.Second)
			wantEvents(t, h.events()) // told once.
		})
	}
}
