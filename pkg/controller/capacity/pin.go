package capacity

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Unschedulable returns when a pod was last found unschedulable by the
// scheduler, and its message, or ok=false when it is not.
func Unschedulable(p *corev1.Pod) (since metav1.Time, message string, ok bool) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return c.LastTransitionTime, c.Message, true
		}
	}
	return metav1.Time{}, "", false
}
