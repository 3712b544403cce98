package capacityadmission

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// gangPriority is a group's priority: the lowest spec.priority among its
// active pods, which kube-apiserver's Priority admission sets from their
// PriorityClass (and ResourceQuota scopes police), lowered to the group's
// spec.priority when that is lower. spec.priority can never raise it, so
// a tenant who may write a PodGroup cannot jump the cluster's queue, nor
// preempt anyone, with it.
func gangPriority(pg *v1alpha1.PodGroup, pods []*corev1.Pod) int32 {
	prio, seen := int32(0), false
	for _, p := range pods {
		if scheduling.IsEnding(p) {
			continue
		}
		var pp int32
		if p.Spec.Priority != nil {
			pp = *p.Spec.Priority
		}
		if !seen || pp < prio {
			prio, seen = pp, true
		}
	}
	if s := pg.Spec.Priority; s != nil && (!seen || *s < prio) {
		prio = *s
	}
	return prio
}

// mayPreempt reports whether a gang may preempt others: none of its pods
// says preemptionPolicy: Never, which kube-apiserver sets from the pod's
// PriorityClass.
func mayPreempt(pods []*corev1.Pod) bool {
	for _, p := range pods {
		if pp := p.Spec.PreemptionPolicy; pp != nil && *pp == corev1.PreemptNever {
			return false
		}
	}
	return true
}
