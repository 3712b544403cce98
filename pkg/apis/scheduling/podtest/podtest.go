// Package podtest builds pods for the tests of the webhook and of the
// admission policies, which check the same pods from two sides: one
// builder keeps the two sets of cases about the same objects.
package podtest

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// Pod returns a pod with no labels, changed by mods.
func Pod(mods ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "worker-0", Namespace: "ns"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	for _, m := range mods {
		m(p)
	}
	return p
}

// Label sets the label k to v.
func Label(k, v string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[k] = v
	}
}

// Annotation sets the annotation k to v.
func Annotation(k, v string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[k] = v
	}
}

// InGroup puts the pod in the gang name, by the group label.
func InGroup(name string) func(*corev1.Pod) { return Label(scheduling.PodGroupLabel, name) }

// WithGates sets the pod's scheduling gates to names: none, but not nil,
// when names is empty.
func WithGates(names ...string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{}
		for _, n := range names {
			p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: n})
		}
	}
}

// WithFinalizers sets the pod's finalizers to names.
func WithFinalizers(names ...string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Finalizers = append([]string{}, names...) }
}

// OnNode binds the pod to node name.
func OnNode(name string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.NodeName = name }
}
