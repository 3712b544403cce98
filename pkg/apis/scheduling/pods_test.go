package scheduling

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
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
	tests := []struct {
		name                           string
		mod                            func(*corev1.Pod)
		wantGate, wantTracked, wantEnd bool
	}{
		{name: "a bare pod is none of them", mod: func(*corev1.Pod) {}},
		{name: "Muster's gate alone is the gate", mod: gates(AdmissionGate), wantGate: true},
		{name: "Muster's gate among others is the gate", mod: gates("example.com/quota", AdmissionGate), wantGate: true},
		{name: "another tool's gate is not Muster's", mod: gates("example.com/quota")},
		{name: "a gate that only shares a prefix is not Muster's", mod: gates(AdmissionGate + "-2")},
		{name: "the tracking finalizer alone is tracked", mod: finalizers(TrackingFinalizer), wantTracked: true},
		{name: "the tracking finalizer among others is tracked", mod: finalizers("example.com/keep", TrackingFinalizer), wantTracked: true},
		{name: "the group's cleanup finalizer is not the pod's", mod: finalizers(PodCleanupFinalizer)},
		{name: "Succeeded is terminal", mod: phase(corev1.PodSucceeded), wantEnd: true},
		{name: "Failed is terminal", mod: phase(corev1.PodFailed), wantEnd: true},
		{name: "Running is not terminal", mod: phase(corev1.PodRunning)},
		{name: "Pending is not terminal", mod: phase(corev1.PodPending)},
		{name: "Unknown is not terminal", mod: phase(corev1.PodUnknown)},
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
		})
	}
}
