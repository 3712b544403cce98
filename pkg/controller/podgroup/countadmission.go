package podgroup

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/controller/admission"
)

// countAdmission is --admission=count: a complete gang is released at once,
// unpinned, whatever the free capacity, for clusters where another system
// owns capacity. It keeps no state: it places nothing and reserves nothing.
type countAdmission struct{}

var _ admission.Mode = countAdmission{}

func (countAdmission) Start(context.Context, *sync.WaitGroup, <-chan struct{}) {}

// AdmitGang admits every complete gang. Pods of createdLater roles are not
// waited for, and nothing is reserved for them, which the message says.
func (countAdmission) AdmitGang(g admission.Group, need, later int32, _ time.Time) admission.Decision {
	msg := fmt.Sprintf("%d of %d needed pods are present; releasing the gang", g.Active, need)
	if later > 0 {
		msg = fmt.Sprintf("%d pods are present; the %d pods created later are not waited for, and with --admission=count no capacity is reserved for them; releasing the gang", g.Active, later)
	}
	return admission.Decision{Admitted: true, Reason: scheduling.ReasonGangComplete, Message: msg}
}

// AdmitJoiners has nothing to do: joiners of an admitted group go at once.
func (countAdmission) AdmitJoiners(admission.Group, time.Time) admission.Decision {
	return admission.Decision{}
}

func (countAdmission) Withdraw(scheduling.GroupKey) {}

func (countAdmission) Drop(scheduling.GroupKey) {}

func (countAdmission) Recorded(scheduling.GroupKey) {}

// ReleaseTo releases every gated pod, unpinned.
func (countAdmission) ReleaseTo(map[types.UID]string, *corev1.Pod) (string, bool) {
	return "", true
}

// UnreservedLater counts the missing pods of createdLater roles as present:
// they are not waited for, so a gang whose other pods are all there goes.
func (countAdmission) UnreservedLater(g admission.Group) int32 {
	return admission.SumCounts(g.LaterMissing())
}

func (countAdmission) ObservePod(*corev1.Pod, bool) {}

func (countAdmission) ObserveGroup(scheduling.GroupKey, *v1alpha1.PodGroup) {}

// ExplainStalled has nothing to say: count admission pins no pod.
func (countAdmission) ExplainStalled(*corev1.Pod, string) string { return "" }

// PreemptedForReleased is false: count admission pins no pod, so it cannot
// tell which pod kube-scheduler preempted for.
func (countAdmission) PreemptedForReleased(*corev1.Pod, scheduling.GroupKey) bool { return false }

// BeforeRelease has nothing to do: count admission asks no autoscaler.
func (countAdmission) BeforeRelease(context.Context, scheduling.GroupKey) error { return nil }

// ResolveVictim: count admission decides no preemption. A victim recorded by
// ref (by capacity admission, before the mode changed) cannot be found
// here, and counts as gone.
func (countAdmission) ResolveVictim(v v1alpha1.PreemptionVictim) (v1alpha1.PreemptionVictim, bool) {
	return v, v.Ref == ""
}
