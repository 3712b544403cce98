package scheduling

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// The pod predicates below are the one definition of each state that the
// controller, the webhook and the tests read off a pod, so that they can
// never disagree about it.

// HasGate reports whether a pod still carries AdmissionGate: Muster holds it
// until its gang is admitted.
func HasGate(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == AdmissionGate })
}

// HasTrackingFinalizer reports whether a pod carries TrackingFinalizer: its
// end has not been counted yet, or it was never released by the controller.
func HasTrackingFinalizer(p *corev1.Pod) bool {
	return slices.Contains(p.Finalizers, TrackingFinalizer)
}

// IsTerminal reports whether a pod has ended: its phase is Succeeded or
// Failed, which the kubelet never changes again.
func IsTerminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// IsEnding reports whether a pod has ended or is being deleted: it will
// start nothing new, so it is neither adopted, nor evicted, nor waited for.
func IsEnding(p *corev1.Pod) bool {
	return p.DeletionTimestamp != nil || IsTerminal(p)
}

// IsActive reports whether a pod still counts against its gang and holds
// its node: it has not ended and, with fast release (KEP-6143), is not
// being deleted either. Without fast release a pod being deleted stays
// active until it is terminal, as kube-scheduler counts it until then; a
// pod deleted while Muster still gated it is on no node and will never
// run, so it is not active in either mode (it may never turn terminal, and
// counted it would let a framework's replacements be released short).
func IsActive(p *corev1.Pod, fastRelease bool) bool {
	if fastRelease || HasGate(p) {
		return !IsEnding(p)
	}
	return !IsTerminal(p)
}
