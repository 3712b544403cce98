package capacityadmission

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/controller/admission"
	"github.com/muster-dev/muster/pkg/controller/capacity"
)

// preemptionDecision is step 6 for a gang the last cycle decided to
// preempt for (docs/controller.md, "Gang preemption"): status.preemption
// names the victims, with Admitted=False/Preempting and an event once
// written. The controller marks its victims only once it is written
// (podgroup/preemption.go).
func preemptionDecision(g admission.Group, d capacity.Verdict, now time.Time) admission.Decision {
	prio := gangPriority(g.PodGroup, g.Pods)
	p := &v1alpha1.PodGroupPreemption{Time: metav1.NewTime(now), Priority: prio}
	for _, vic := range d.Victims {
		v := v1alpha1.PreemptionVictim{Kind: vic.Kind, Priority: vic.Priority, Pods: int32(vic.Pods())}
		// A victim in another namespace is recorded by ref alone: whoever
		// may read this group need not see that namespace's names.
		if ns, name, _ := cache.SplitMetaNamespaceKey(vic.Key); ns == g.Key.Namespace {
			v.Namespace, v.Name, v.UID = ns, name, vic.UID
		} else {
			v.Ref = scheduling.VictimRef(vic.UID)
		}
		p.Victims = append(p.Victims, v)
	}
	out := admission.Decision{Reason: scheduling.ReasonPreempting, Message: admission.Truncate(d.Message), Preemption: p, FromCycle: true}
	out.Record(corev1.EventTypeNormal, scheduling.EventPreempting, admission.Truncate(fmt.Sprintf("priority %d: %s", prio, d.Message)))
	return out
}

// preemptingKeys are the victims of the group's recorded preemption, for
// the admission queue: while any of them holds capacity, the group waits
// for it and starts no second preemption. A victim recorded by ref that no
// longer exists has nothing left to wait for.
func (a *Mode) preemptingKeys(pg *v1alpha1.PodGroup) []string {
	p := pg.Status.Preemption
	if p == nil || admission.IsAdmitted(pg) {
		return nil
	}
	out := make([]string, 0, len(p.Victims))
	for _, v := range p.Victims {
		if r, ok := a.ResolveVictim(v); ok {
			out = append(out, r.Namespace+"/"+r.Name)
		}
	}
	return out
}

// preemptedAt is when the group's recorded preemption was decided.
func preemptedAt(pg *v1alpha1.PodGroup) time.Time {
	if p := pg.Status.Preemption; p != nil {
		return p.Time.Time
	}
	return time.Time{}
}
