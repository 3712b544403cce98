package scheduling

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodPredicates(t *testing.T) {
	gates := func(names ...string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			for _, n := range names {
				p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: n})
			}
		}
	}
	finalizers := func(names ...string) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Finalizers = names }
	}
	phase := func(ph corev1.PodPhase) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Status.Phase = ph }
	}
	deleting := func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} }
	both := func(a, b func(*corev1.Pod)) func(*corev1.Pod) {
		return func(p *corev1.Pod) { a(p); b(p) }
	}
	// Unless a case says otherwise, a pod is active with and without fast
	// release; wantInactive and wantInactiveFast say where it is not.
	tests := []struct {
		name                           string
		mod                            func(*corev1.Pod)
		wantGate, wantTracked, wantEnd bool
		wantEnding                     bool
		wantInactive, wantInactiveFast bool
	}{
		{name: "a bare pod is none of them", mod: func(*corev1.Pod) {}},
		{name: "Muster's gate alone is the gate", mod: gates(AdmissionGate), wantGate: true},
		{name: "Muster's gate among others is the gate", mod: gates("example.com/quota", AdmissionGate), wantGate: true},
		{name: "another tool's gate is not Muster's", mod: gates("example.com/quota")},
		{name: "a gate that only shares a prefix is not Muster's", mod: gates(AdmissionGate + "-2")},
		{name: "the tracking finalizer alone is tracked", mod: finalizers(TrackingFinalizer), wantTracked: true},
		{name: "the tracking finalizer among others is tracked", mod: finalizers("example.com/keep", TrackingFinalizer), wantTracked: true},
		{name: "the group's cleanup finalizer is not the pod's", mod: finalizers(PodCleanupFinalizer)},
		{name: "Succeeded is terminal, ending and inactive", mod: phase(corev1.PodSucceeded), wantEnd: true, wantEnding: true, wantInactive: true, wantInactiveFast: true},
		{name: "Failed is terminal, ending and inactive", mod: phase(corev1.PodFailed), wantEnd: true, wantEnding: true, wantInactive: true, wantInactiveFast: true},
		{name: "Running is not terminal", mod: phase(corev1.PodRunning)},
		{name: "Pending is not terminal", mod: phase(corev1.PodPending)},
		{name: "Unknown is not terminal", mod: phase(corev1.PodUnknown)},
		{name: "a running pod being deleted is ending, and inactive only with fast release", mod: both(phase(corev1.PodRunning), deleting), wantEnding: true, wantInactiveFast: true},
		{name: "a pending pod being deleted is ending, and inactive only with fast release", mod: deleting, wantEnding: true, wantInactiveFast: true},
		{name: "a failed pod being deleted is terminal, ending and inactive", mod: both(phase(corev1.PodFailed), deleting), wantEnd: true, wantEnding: true, wantInactive: true, wantInactiveFast: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &corev1.Pod{}
			tc.mod(p)
			if got := HasGate(p); got != tc.wantGate {
				t.Errorf("HasGate = %v, want %v", got, tc.wantGate)
			}
			if got := HasTrackingFinalizer(p); got != tc.wantTracked {
				t.Errorf("HasTrackingFinalizer = %v, want %v", got, tc.wantTracked)
			}
			if got := IsTerminal(p); got != tc.wantEnd {
				t.Errorf("IsTerminal = %v, want %v", got, tc.wantEnd)
			}
			if got := IsEnding(p); got != tc.wantEnding {
				t.Errorf("IsEnding = %v, want %v", got, tc.wantEnding)
			}
			if got := IsActive(p, false); got != !tc.wantInactive {
				t.Errorf("IsActive without fast release = %v, want %v", got, !tc.wantInactive)
			}
			if got := IsActive(p, true); got != !tc.wantInactiveFast {
				t.Errorf("IsActive with fast release = %v, want %v", got, !tc.wantInactiveFast)
			}
		})
	}
}
