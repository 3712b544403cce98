package capacityadmission

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/controller/admission"
	"github.com/muster-dev/muster/pkg/controller/capacity"
)

// placeGang is step 6's capacity check for a complete gang that is not yet
// admitted. The admission cycle decides; this step offers the gang to it,
// and returns a decision once one is made: the placements, to go into
// status.placements in the same write as Admitted=True, before any pod is
// pinned or released. It reports whether the gang is admitted now and, if
// not, the decision says why the last cycle left it waiting (nothing
// before any), or what it preempts.
func (a *Mode) placeGang(g admission.Group, need int32, now time.Time) (admission.Decision, bool) {
	pg := g.PodGroup
	// The missing pods of createdLater roles are placed from their role's
	// template, in the same all-or-nothing placement, and reserved
	// (reservations.go).
	toPlace, free, _ := a.splitUnmodelled(unplacedPods(g, pg.Status.Placements))
	missing := g.LaterMissing()
	// Pods that placement cannot check are released unpinned with the gang
	// (unmodelled.go); they count as present, like released ones.
	released := g.Active - int32(len(g.ActiveGated())) + int32(free)
	if d, ok := a.queue.decision(g.Key); ok {
		pods, reserved := validAssignments(d, toPlace), validCopies(d, missing)
		placed := int32(len(pods)) + placedCopies(reserved)
		if len(d.Victims) > 0 && placed+released >= need {
			// A preemption: recorded now, carried out once written
			// (preemption.go); the gang is admitted in a later cycle.
			a.victimRefs.remember(d.Victims)
			return preemptionDecision(g, d, now), false
		}
		if len(d.Victims) == 0 && placed > 0 && placed+released >= need {
			out := admission.Decision{EndPreemption: true, FromCycle: true, Places: &admission.Places{
				Placements:   withPlacements(pg.Status.Placements, pods),
				Reservations: pg.Status.Reservations,
			}}
			setDomains(out.Places, d)
			if len(reserved) > 0 {
				out.Places.Reservations = withReservations(pg.Status.Reservations, reserved)
				out.Set(v1alpha1.ConditionCapacityReserved, metav1.ConditionTrue, scheduling.ReasonAwaitingPods, reservedMessage(pg, out.Places.Reservations))
			}
			return out, true
		}
		// The gang changed since the cycle placed it: place it again.
		a.Drop(g.Key)
	}
	copies := laterCopies(pg, missing)
	if len(toPlace) == 0 && len(copies) == 0 {
		// Every active pod was released already (by hand): nothing to place.
		return admission.Decision{}, true
	}
	if a.autoscale != nil {
		a.autoscale.offer(g.Key, pg, toPlace, copies)
	}
	a.queue.offer(a.gangCandidate(g, toPlace, copies, need-released))
	w, _ := a.queue.waitReason(g.Key)
	return admission.Decision{Reason: w.Reason, Message: w.Message}, false
}

// gangCandidate is what a waiting gang offers the admission cycle: its
// pods to place, the copies of its pods created later, and how many of
// them must fit at once (need, at least 1).
func (a *Mode) gangCandidate(g admission.Group, toPlace []*corev1.Pod, copies []capacity.Copies, need int32) capacity.Candidate {
	pg := g.PodGroup
	return capacity.Candidate{
		Key: g.Key, Priority: gangPriority(pg, g.Pods), Created: pg.CreationTimestamp.Time,
		Pods: toPlace, Copies: copies, Need: int(max(need, 1)), Topology: gangTopology(pg),
		Preempt: mayPreempt(g.Pods), Preempting: a.preemptingKeys(pg), PreemptedAt: preemptedAt(pg),
	}
}

// placeJoiners is step 6's capacity check for an admitted group: pods that
// joined it (replacements, pods beyond minCount) are placed one by one as
// capacity allows, and recorded in status before they are released. A
// placement whose pod stays gated is given back after a while
// (heldjoiners.go). It updates places and d, and returns when to look
// again.
func (a *Mode) placeJoiners(g admission.Group, places *admission.Places, d *admission.Decision, now time.Time) time.Duration {
	ok, next := a.expireHeld(g, places, d, now)
	if !ok {
		a.Drop(g.Key)
		return next
	}
	toPlace, _, _ := a.splitUnmodelled(unplacedPods(g, places.Placements))
	if v, ok := a.queue.decision(g.Key); ok {
		if valid := validAssignments(v, toPlace); len(valid) > 0 {
			places.Placements = withPlacements(places.Placements, valid)
			d.FromCycle = true
			return next
		}
		a.Drop(g.Key)
	}
	if len(toPlace) == 0 {
		a.queue.withdraw(g.Key)
		return next
	}
	a.queue.offer(capacity.Candidate{Key: g.Key, Priority: gangPriority(g.PodGroup, g.Pods), Created: g.PodGroup.CreationTimestamp.Time, Pods: toPlace,
		Topology: joinerTopology(g.PodGroup)})
	return next
}

// unplacedPods are the active gated pods with no placement in placed.
func unplacedPods(g admission.Group, placed []v1alpha1.PodPlacement) []*corev1.Pod {
	has := make(map[types.UID]bool, len(placed))
	for _, p := range placed {
		has[p.UID] = true
	}
	var out []*corev1.Pod
	for _, p := range g.ActiveGated() {
		if !has[p.UID] {
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

// withPlacements is placed with the assignments as, a new slice.
func withPlacements(placed []v1alpha1.PodPlacement, as []capacity.Assignment) []v1alpha1.PodPlacement {
	out := slices.Clone(placed)
	for _, a := range as {
		out = append(out, v1alpha1.PodPlacement{Pod: a.Pod.Name, UID: a.Pod.UID, Node: a.Node})
	}
	return out
}
