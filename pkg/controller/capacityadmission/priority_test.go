package capacityadmission

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/muster-dev/muster/pkg/apis/scheduling/podtest"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

func TestGangPriority(t *testing.T) {
	prio := func(v int32) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Spec.Priority = ptr.To(v) } }
	failed := func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }
	deleted := func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)} }
	tests := []struct {
		name string
		spec *int32
		pods []*corev1.Pod
		want int32
	}{
		{"no class is priority 0", nil, []*corev1.Pod{podtest.Pod()}, 0},
		{"the lowest of its pods", nil, []*corev1.Pod{podtest.Pod(prio(100)), podtest.Pod(prio(50))}, 50},
		{"spec.priority lowers it", ptr.To(int32(10)), []*corev1.Pod{podtest.Pod(prio(100))}, 10},
		{"spec.priority never raises it", ptr.To(int32(1000)), []*corev1.Pod{podtest.Pod(prio(100))}, 100},
		{"pods that ended or go do not count", nil, []*corev1.Pod{podtest.Pod(prio(100)), podtest.Pod(prio(1), failed), podtest.Pod(prio(2), deleted)}, 100},
		{"spec.priority alone, with no pod", ptr.To(int32(7)), nil, 7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pg := &v1alpha1.PodGroup{}
			pg.Spec.Priority = tc.spec
			if got := gangPriority(pg, tc.pods); got != tc.want {
				t.Errorf("gangPriority = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestMayPreempt(t *testing.T) {
	never := func(p *corev1.Pod) { p.Spec.PreemptionPolicy = ptr.To(corev1.PreemptNever) }
	lower := func(p *corev1.Pod) { p.Spec.PreemptionPolicy = ptr.To(corev1.PreemptLowerPriority) }
	tests := []struct {
		name string
		pods []*corev1.Pod
		want bool
	}{
		{"unset preempts", []*corev1.Pod{podtest.Pod()}, true},
		{"PreemptLowerPriority preempts", []*corev1.Pod{podtest.Pod(lower)}, true},
		{"one pod that says Never keeps the gang from preempting", []*corev1.Pod{podtest.Pod(lower), podtest.Pod(never)}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := mayPreempt(tc.pods); got != tc.want {
				t.Errorf("mayPreempt = %v, want %v", got, tc.want)
			}
		})
	}
}
