package capacityadmission

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
		ns, name, _ := strings.Cut(vic.Key, "/")
		p.Victims = append(p.Victims, v1alpha1.PreemptionVictim{
			Kind: vic.Kind, Namespace: ns, Name: name, UID: vic.UID, Priority: vic.Priority, Pods: int32(vic.Pods()),
		})
	}
	out := admission.Decision{Reason: scheduling.ReasonPreempting, Message: admission.Truncate(d.Message), Preemption: p, FromCycle: true}
	out.Record(corev1.EventTypeNormal, scheduling.EventPreempting, admission.Truncate(fmt.Sprintf("priority %d: %s", prio, d.Message)))
	return out
}

// preemptingKeys are the victims of the group's recorded preemption, for
// the admission queue: while any of them holds capacity, the group waits
// for it and starts no second preemption.
func preemptingKeys(pg *v1alpha1.PodGroup) []string {
	p := pg.Status.Preemption
	if p == nil || admission.IsAdmitted(pg) {
		return nil
	}
	out := make([]string, 0, len(p.Victims))
	for _, v := range p.Victims {
		out = append(out, v.Namespace+"/"+v.Name)
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
