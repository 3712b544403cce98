package manifests

import (
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// PriorityClass returns scheduling.CapacityRequestPriorityClass, which every
// capacity-request pod names, as PriorityClassFile installs it. The
// controller never creates it (its role may only read priorityclasses):
// a pod that names a missing class is refused at admission, so it must be
// installed with Muster.
//
// Its value is the lowest that cluster-autoscaler still scales up for, and
// preemptionPolicy Never keeps a capacity-request pod from preempting any
// pod; any pod of higher priority preempts it.
func PriorityClass() *schedulingv1.PriorityClass {
	return &schedulingv1.PriorityClass{
		TypeMeta: metav1.TypeMeta{APIVersion: schedulingv1.SchemeGroupVersion.String(), Kind: "PriorityClass"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   scheduling.CapacityRequestPriorityClass,
			Labels: map[string]string{"app.kubernetes.io/part-of": "muster"},
		},
		Value:            scheduling.CapacityRequestPriority,
		GlobalDefault:    false,
		PreemptionPolicy: ptr.To(corev1.PreemptNever),
		Description: "Muster's capacity-request pods: placeholders that ask a cluster autoscaler for room for a gang " +
			"that does not fit the nodes. They never preempt a pod, and any pod of higher priority preempts them.",
	}
}
