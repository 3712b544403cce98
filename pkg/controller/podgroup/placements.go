package podgroup

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/controller/capacity"
	"github.com/muster-dev/muster/pkg/jsonpatch"
)

// placeGang is step 6's capacity check for a complete gang that is not yet
// admitted. The admission cycle decides; this step offers the gang to it,
// and carries a decision into status once one is made: the placements go
// into status.placements in the same write as Admitted=True, before any pod
// is pinned or released. It reports whether the gang is admitted now and,
// if not, why the last cycle left it waiting (a zero outcome before any).
func (a *capacityAdmission) placeGang(key scheduling.GroupKey, pg *v1alpha1.PodGroup, v *podView, need int32, now time.Time) (outcome, bool) {
	// The missing pods of createdLater roles are placed from their role's
	// template, in the same all-or-nothing placement, and reserved
	// (reservations.go).
	toPlace, free, _ := a.splitUnmodelled(unplacedPods(pg, v))
	missing := laterMissing(pg, v)
	// Pods that placement cannot check are released unpinned with the gang
	// (unmodelled.go); they count as present, like released ones.
	released := v.active - int32(len(activeGated(v))) + int32(free)
	if d, ok := a.queue.decision(key); ok {
		pods, reserved := validAssignments(d, toPlace), validCopies(d, missing)
		placed := int32(len(pods)) + placedCopies(reserved)
		if len(d.Victims) > 0 && placed+released >= need {
			// A preemption: recorded now, carried out once written
			// (preemption.go); the gang is admitted in a later cycle.
			a.recordPreemption(pg, v, d, gangPriority(pg, v.all), now)
			return outcome{}, false
		}
		if len(d.Victims) == 0 && placed > 0 && placed+released >= need {
			pg.Status.Preemption = nil
			addPlacements(pg, pods)
			if len(reserved) > 0 {
				addReservations(pg, reserved)
				setCondition(pg, v1alpha1.ConditionCapacityReserved, metav1.ConditionTrue, scheduling.ReasonAwaitingPods, reservedMessage(pg), now)
			}
			v.decisionApplied = true
			return outcome{}, true
		}
		// The gang changed since the cycle placed it: place it again.
		a.drop(key)
	}
	copies := laterCopies(pg, missing)
	if len(toPlace) == 0 && len(copies) == 0 {
		// Every active pod was released already (by hand): nothing to place.
		return outcome{}, true
	}
	if a.autoscale != nil {
		a.autoscale.offer(key, pg, toPlace, copies)
	}
	a.queue.offer(capacity.Candidate{
		Key: key, Priority: gangPriority(pg, v.all), Created: pg.CreationTimestamp.Time,
		Pods: toPlace, Copies: copies, Need: int(max(need-released, 1)),
		Preempt: mayPreempt(v.all), Preempting: preemptingKeys(pg), PreemptedAt: preemptedAt(pg),
	})
	w, _ := a.queue.waitReason(key)
	return w, false
}

// placeJoiners is step 6's capacity check for an admitted group: pods that
// joined it (replacements, pods beyond minCount) are placed one by one as
// capacity allows, and recorded in status before they are released. A
// placement whose pod stays gated is given back after a while
// (heldjoiners.go). It returns when to look again.
func (a *capacityAdmission) placeJoiners(key scheduling.GroupKey, pg *v1alpha1.PodGroup, v *podView, now time.Time) time.Duration {
	ok, next := a.expireHeld(key, pg, v, now)
	if !ok {
		a.drop(key)
		return next
	}
	toPlace, _, _ := a.splitUnmodelled(unplacedPods(pg, v))
	if d, ok := a.queue.decision(key); ok {
		if valid := validAssignments(d, toPlace); len(valid) > 0 {
			addPlacements(pg, valid)
			v.decisionApplied = true
			return next
		}
		a.drop(key)
	}
	if len(toPlace) == 0 {
		a.queue.withdraw(key)
		return next
	}
	a.queue.offer(capacity.Candidate{Key: key, Priority: gangPriority(pg, v.all), Created: pg.CreationTimestamp.Time, Pods: toPlace})
	return next
}

// activeGated are the gated pods that can still run.
func activeGated(v *podView) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range v.gatedPods {
		if !scheduling.IsEnding(p) {
			out = append(out, p)
		}
	}
	return out
}

// unplacedPods are the active gated pods with no placement in status.
func unplacedPods(pg *v1alpha1.PodGroup, v *podView) []*corev1.Pod {
	placed := placementsByUID(pg)
	var out []*corev1.Pod
	for _, p := range activeGated(v) {
		if _, ok := placed[p.UID]; !ok {
			out = append(out, p)
		}
	}
	return out
}

// validAssignments keeps the assignments of a decision whose pods are still
// waiting to be placed, as the sync sees them now.
func validAssignments(d capacity.Verdict, toPlace []*corev1.Pod) []capacity.Assignment {
	waiting := make(map[types.UID]bool, len(toPlace))
	for _, p := range toPlace {
		waiting[p.UID] = true
	}
	var out []capacity.Assignment
	for _, a := range d.Assignments {
		if waiting[a.Pod.UID] {
			out = append(out, a)
		}
	}
	return out
}

func addPlacements(pg *v1alpha1.PodGroup, as []capacity.Assignment) {
	for _, a := range as {
		pg.Status.Placements = append(pg.Status.Placements, v1alpha1.PodPlacement{Pod: a.Pod.Name, UID: a.Pod.UID, Node: a.Node})
	}
}

// placementsByUID maps each placed pod's UID to its node.
func placementsByUID(pg *v1alpha1.PodGroup) map[types.UID]string {
	if len(pg.Status.Placements) == 0 {
		return nil
	}
	out := make(map[types.UID]string, len(pg.Status.Placements))
	for _, p := range pg.Status.Placements {
		out[p.UID] = p.Node
	}
	return out
}

// prunePlacements drops the placements that no longer reserve anything:
// their pod was released (it is pinned now), ended, or is gone, or the
// group has finished. It is a refresh, written with the next write.
func prunePlacements(pg *v1alpha1.PodGroup, v *podView) {
	if len(pg.Status.Placements) == 0 {
		return
	}
	keep := map[types.UID]bool{}
	if !isFinished(pg) {
		for _, p := range activeGated(v) {
			keep[p.UID] = true
		}
	}
	if isFinished(pg) {
		pg.Status.Reservations = nil // a finished group waits for no pod.
	}
	pg.Status.Placements = slices.DeleteFunc(slices.Clone(pg.Status.Placements), func(p v1alpha1.PodPlacement) bool { return !keep[p.UID] })
	if len(pg.Status.Placements) == 0 {
		pg.Status.Placements = nil
	}
}

// placementsAdded reports whether b places a pod that a does not: a
// decision, written before the pod is pinned.
func placementsAdded(a, b *v1alpha1.PodGroup) bool {
	old := placementsByUID(a)
	for _, p := range b.Status.Placements {
		if _, ok := old[p.UID]; !ok {
			return true
		}
	}
	return false
}

// releasePatch is the patch that releases a pod: the gate comes off and, with
// capacity-aware admission, the pod is pinned to its node in the same patch.
// With no node it is removeGatePatch.
func releasePatch(node string) func(*corev1.Pod) ([]byte, bool) {
	if node == "" {
		return removeGatePatch
	}
	return func(p *corev1.Pod) ([]byte, bool) {
		ops, ok := removeGateOps(p)
		if !ok {
			return nil, false
		}
		if node != "" && scheduling.PinnedNode(p) != node {
			ops = append(ops, pinOps(p, node)...)
		}
		return jsonpatch.Marshal(ops), true
	}
}

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
			if refused := c.admitter.explainStalled(p, node); refused != "" {
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

// maxConditionMessage is the API's limit on a condition's message.
const maxConditionMessage = 32768

// truncate keeps a condition message within the API's limit.
func truncate(s string) string {
	const max = maxConditionMessage
	if len(s) <= max {
		return s
	}
	return s[:max-3] + "..."
}
