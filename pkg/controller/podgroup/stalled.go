package podgroup

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/controller/capacity"
)

// checkStalled is step 7b, the honest limit of capacity-aware admission: a
// pod Muster does not manage can take capacity reserved for a released pod
// before the scheduler binds it, and a node can change after placement (a
// taint added, a label removed). A released, pinned pod that the scheduler
// has found unschedulable for longer than StalledTimeout sets Stalled=True,
// naming the pods and, for each, the scheduler filter that now refuses it on
// its node; the condition goes False once none is. It returns when to look
// again.
func (c *Controller) checkStalled(pg *v1alpha1.PodGroup, v *podView, pods []*corev1.Pod, now time.Time) time.Duration {
	var stalled []string
	var next time.Duration
	capacityTaken := false
	for _, p := range pods {
		node := scheduling.PinnedNode(p)
		if node == "" || p.Spec.NodeName != "" || scheduling.HasGate(p) || scheduling.IsEnding(p) {
			continue
		}
		since, msg, ok := capacity.Unschedulable(p)
		if !ok {
			continue
		}
		if left := since.Add(c.cfg.StalledTimeout).Sub(now); left > 0 {
			next = soonest(next, left)
			continue
		}
		if len(stalled) < 5 {
			why := "the scheduler reports: " + msg
			if refused := c.admitter.ExplainStalled(p, node); refused != "" {
				why = fmt.Sprintf("refused by %s; the scheduler reports: %s", refused, msg)
			} else {
				capacityTaken = true
			}
			stalled = append(stalled, fmt.Sprintf("pod %s on node %s, %s", p.Name, node, why))
		} else if len(stalled) == 5 {
			stalled = append(stalled, "…")
		}
	}
	old := isStalled(pg)
	switch {
	case len(stalled) > 0:
		cause := "the nodes changed since placement (a filter named below now refuses the pod)"
		if capacityTaken {
			cause = "capacity was likely taken by pods Muster does not manage"
		}
		msg := truncate(fmt.Sprintf("released pods stay unschedulable on the nodes reserved for them for over %s; %s. "+
			"Delete a stalled pod to have it placed again: %v", c.cfg.StalledTimeout, cause, stalled))
		setCondition(pg, v1alpha1.ConditionStalled, metav1.ConditionTrue, scheduling.ReasonReservedCapacityTaken, msg, now)
		if !old {
			v.onceWritten(func() { c.recorder.Event(pg, corev1.EventTypeWarning, scheduling.EventStalled, msg) })
		}
	case old:
		setCondition(pg, v1alpha1.ConditionStalled, metav1.ConditionFalse, scheduling.ReasonNoStalledPods, "no released pod is stuck on its reserved node", now)
	}
	return next
}
