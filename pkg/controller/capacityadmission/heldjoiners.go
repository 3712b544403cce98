package capacityadmission

import (
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/controller/admission"
)

// Held joiners (issue 21, item 2): a pod that joins an admitted group is
// placed alone, and released in the same sync unless the controller's
// holdShort keeps it gated, because the group has too few pods to release it with. Such a
// placement would hold its node's capacity for as long as the group stays
// short, which its tenant decides. So a placement whose pod stays gated is
// kept at most MaxHeldPlacementSeconds; then it is given back, the group
// says so, and its pods are not placed again until its pods change (one
// is added, deleted or ends), which is when the group may be whole.

// MaxHeldPlacement is MaxHeldPlacementSeconds as a duration.
const MaxHeldPlacement = scheduling.MaxHeldPlacementSeconds * time.Second

// heldPlacements is this leader's memory of held joiners. A new leader
// starts the clock again: leadership does not change at a tenant's will.
type heldPlacements struct {
	mu sync.Mutex
	// since maps a group to the placed pods that stay gated, and since when
	// this leader has seen them so.
	since map[scheduling.GroupKey]map[types.UID]time.Time
	// expired maps a group whose held placements were given back to its
	// pods as they were then.
	expired map[scheduling.GroupKey]podsShape
}

// podsShape is what of a group's pods must change before its joiners are
// placed again.
type podsShape struct{ pods, active int32 }

// forget drops what is held of a deleted group, so that the memory lasts no
// longer than the group.
func (h *heldPlacements) forget(key scheduling.GroupKey) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.since, key)
	delete(h.expired, key)
}

// expireHeld is placeJoiners' first share: it gives back the placements
// of pods that have stayed gated past MaxHeldPlacement, and reports
// whether the group's joiners may be placed now, and when to look again.
// It updates places and d.
func (a *Mode) expireHeld(g admission.Group, places *admission.Places, d *admission.Decision, now time.Time) (bool, time.Duration) {
	key, pg := g.Key, g.PodGroup
	h := &a.held
	h.mu.Lock()
	defer h.mu.Unlock()
	gated := map[types.UID]bool{}
	for _, p := range g.ActiveGated() {
		gated[p.UID] = true
	}
	seen := map[types.UID]time.Time{}
	gone := map[types.UID]bool{}
	var expired []string
	var next time.Duration
	for _, pl := range places.Placements {
		if !gated[pl.UID] {
			continue
		}
		at, ok := h.since[key][pl.UID]
		if !ok {
			at = now
		}
		// An expired one is remembered too, until status no longer shows
		// it: a write that only removes placements may wait for the batch
		// period, and must not restart the clock meanwhile.
		seen[pl.UID] = at
		if left := at.Add(MaxHeldPlacement).Sub(now); left > 0 {
			next = admission.Soonest(next, left)
			continue
		}
		expired = append(expired, pl.Pod)
		gone[pl.UID] = true
	}
	if len(seen) == 0 {
		delete(h.since, key)
	} else {
		if h.since == nil {
			h.since = map[scheduling.GroupKey]map[types.UID]time.Time{}
		}
		h.since[key] = seen
	}
	shape := podsShape{pods: g.Present, active: g.Active}
	if len(expired) == 0 {
		if was, ok := h.expired[key]; ok {
			if was == shape {
				return false, next
			}
			delete(h.expired, key)
		}
		return true, next
	}
	if h.expired == nil {
		h.expired = map[scheduling.GroupKey]podsShape{}
	}
	h.expired[key] = shape
	// A placement made since (a pod that claimed a reserved place in this
	// sync) keeps its own clock.
	places.Placements = slices.DeleteFunc(slices.Clone(places.Placements), func(pl v1alpha1.PodPlacement) bool { return gone[pl.UID] })
	if len(places.Placements) == 0 {
		places.Placements = nil
	}
	slices.Sort(expired)
	msg := admission.Truncate(fmt.Sprintf("%d placed pods stayed gated for over %s, since the group has too few pods to release them with (minCount %d); their capacity was given back, and the group's pods are placed again once they change: %v",
		len(expired), MaxHeldPlacement, admission.MinCount(pg), expired))
	if len(places.Reservations) == 0 { // else the condition is reserve's.
		d.Set(v1alpha1.ConditionCapacityReserved, metav1.ConditionFalse, scheduling.ReasonHeldPlacementsExpired, msg)
	}
	d.Record(corev1.EventTypeWarning, scheduling.ReasonHeldPlacementsExpired, msg)
	return false, next
}
