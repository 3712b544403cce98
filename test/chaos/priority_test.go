package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// priorityClass is one of the PriorityClasses the load's gangs run at, and
// the share of the gangs that get it.
type priorityClass struct {
	name  string
	value int32
	share float64
}

// classes mix the gangs' priorities. Most gangs are low, so that the
// cluster is mostly full of gangs that the few of higher priority may
// preempt; mid gangs may be preempted by high ones. Every pod of a gang has
// its gang's class, so the gang's priority (its pods' lowest) is the
// class's value whatever pods it has at the moment.
var classes = []priorityClass{
	{name: "chaos-low", value: 0, share: 0.75},
	{name: "chaos-mid", value: 100, share: 0.15},
	{name: "chaos-high", value: 1000, share: 0.10},
}

// drawClass picks a gang's class by the classes' shares.
func drawClass(rng *rand.Rand) priorityClass {
	x := rng.Float64()
	for _, c := range classes[:len(classes)-1] {
		if x < c.share {
			return c
		}
		x -= c.share
	}
	return classes[len(classes)-1]
}

// createClasses creates the PriorityClasses, so that kube-apiserver's
// Priority admission sets each pod's spec.priority from its class.
func createClasses(ctx context.Context) error {
	for _, c := range classes {
		pc := &schedulingv1.PriorityClass{
			ObjectMeta:  metav1.ObjectMeta{Name: c.name},
			Value:       c.value,
			Description: "a priority of the chaos suite's gangs",
		}
		if _, err := clients.kube.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating PriorityClass %s: %w", c.name, err)
		}
	}
	return nil
}

// disruption is the reason of a pod's DisruptionTarget=True condition, or
// "" without one.
func disruption(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return c.Reason
		}
	}
	return ""
}

// preemptedByMuster reports whether Muster marked the pod for eviction.
func preemptedByMuster(p *corev1.Pod) bool {
	return disruption(p) == scheduling.ReasonPreemptionByMuster
}

// classMix says how many gangs have each class.
func (l *load) classMix() string {
	n := map[string]int{}
	for _, g := range l.gangs {
		n[g.class.name]++
	}
	var parts []string
	for _, c := range classes {
		parts = append(parts, fmt.Sprintf("%d %s (%d)", n[c.name], c.name, c.value))
	}
	return strings.Join(parts, ", ")
}

// evictedGangs lists the gangs with pods seen evicted by Muster's
// preemption, and counts those the framework gave up restarting.
func (l *load) evictedGangs() (names []string, gaveUp int) {
	for _, g := range l.gangs {
		g.mu.Lock()
		if len(g.evicted) > 0 {
			names = append(names, g.name)
		}
		if g.gaveUp {
			gaveUp++
		}
		g.mu.Unlock()
	}
	return names, gaveUp
}

// disruptedBy lists the pods seen with DisruptionTarget of reason, which
// is not Muster's preemption.
func (l *load) disruptedBy(reason string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.otherDisruptions[reason])
}

// disruptionCounts counts the pods seen with DisruptionTarget for a reason
// other than Muster's preemption, by reason.
func (l *load) disruptionCounts() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := map[string]int{}
	for reason, pods := range l.otherDisruptions {
		n[reason] = len(pods)
	}
	return n
}

// errors are the errors of the load's restarts.
func (l *load) errors() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.errs)
}

// missing lists the items of want that are not in have.
func missing(want, have []string) []string {
	var out []string
	for _, w := range want {
		if !slices.Contains(have, w) {
			out = append(out, w)
		}
	}
	return out
}

// schedulerPreemptions describes kube-scheduler's Preempted events in the
// namespace: the victim and the preemptor, each with its class, named from
// names (pods by UID).
func (l *load) schedulerPreemptions(ctx context.Context, names map[types.UID]string) ([]string, error) {
	events, err := clients.kube.CoreV1().Events(l.ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=Preempted,involvedObject.kind=Pod"})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range events.Items {
		if e.Source.Component != corev1.DefaultSchedulerName && e.ReportingController != corev1.DefaultSchedulerName {
			continue
		}
		msg := e.Message
		for uid, name := range names {
			msg = strings.ReplaceAll(msg, string(uid), name)
		}
		victim := names[e.InvolvedObject.UID]
		if victim == "" {
			victim = e.InvolvedObject.Name
		}
		out = append(out, fmt.Sprintf("%s: %s", victim, msg))
	}
	return out, nil
}
