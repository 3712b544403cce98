package capacityadmission

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/controller/admission"
	"github.com/muster-dev/muster/pkg/controller/capacity"
)

// Roles created later (KEP-976 story 4): a driver creates its workers only
// once it runs, so the gang cannot wait for them, and releasing the driver
// alone where its workers do not fit is the deadlock gang admission exists
// to prevent. So capacity-aware admission places the pods that exist and
// reserves capacity for the missing ones, from their role's template, in
// the same all-or-nothing cycle: each role's missing pods are one shape
// with a count (laterCopies), never one object per pod, so a cycle's work
// is bounded by what fits on the cluster, not by the role's count. The reservations go into
// status.reservations in the write that admits the gang; each pod of the
// role that arrives claims one and is pinned there and released at once;
// what is unclaimed past the role's timeout is given back.

// laterCopies are what an admission cycle places for the missing pods of
// createdLater roles: per role, its template and how many are missing.
func laterCopies(pg *v1alpha1.PodGroup, missing map[string]int32) []capacity.Copies {
	var out []capacity.Copies
	for _, r := range pg.Spec.Roles {
		n := missing[r.Name]
		if n <= 0 {
			continue
		}
		p := admission.TemplatePod(r.Template)
		p.Namespace, p.Name = pg.Namespace, fmt.Sprintf("%s-%s", pg.Name, r.Name)
		p.Labels = map[string]string{scheduling.PodGroupLabel: pg.Name, scheduling.RoleLabel: r.Name}
		out = append(out, capacity.Copies{Name: r.Name, Template: p, Count: int(n)})
	}
	return out
}

// validCopies keeps of a decision's reserved places at most as many per
// role as are still missing: a pod of the role that arrived meanwhile is
// placed itself, and a count lowered meanwhile needs fewer.
func validCopies(d capacity.Verdict, missing map[string]int32) []capacity.CopiesOnNode {
	left := maps.Clone(missing)
	var out []capacity.CopiesOnNode
	for _, c := range d.Copies {
		n := min(int32(c.Count), left[c.Name])
		if n <= 0 {
			continue
		}
		left[c.Name] -= n
		c.Count = int(n)
		out = append(out, c)
	}
	return out
}

func placedCopies(cs []capacity.CopiesOnNode) int32 {
	var n int32
	for _, c := range cs {
		n += int32(c.Count)
	}
	return n
}

// withReservations is reserved with the places an admission reserved, one
// entry per role and node, in a stable order: a new slice.
func withReservations(reserved []v1alpha1.RoleReservation, cs []capacity.CopiesOnNode) []v1alpha1.RoleReservation {
	type key struct{ role, node string }
	counts := map[key]int32{}
	for _, c := range cs {
		counts[key{c.Name, c.Node}] += int32(c.Count)
	}
	out := slices.Clone(reserved)
	for k, n := range counts {
		out = append(out, v1alpha1.RoleReservation{Role: k.role, Node: k.node, Count: n})
	}
	sortReservations(out)
	return out
}

func sortReservations(rs []v1alpha1.RoleReservation) {
	sort.Slice(rs, func(i, j int) bool {
		if rs[i].Role != rs[j].Role {
			return rs[i].Role < rs[j].Role
		}
		return rs[i].Node < rs[j].Node
	})
}

// slotsOf is what a group's status.reservations hold, for the tracker:
// each place as its role's template requests.
func slotsOf(pg *v1alpha1.PodGroup) []capacity.Slot {
	if len(pg.Status.Reservations) == 0 {
		return nil
	}
	req := roleRequests(pg)
	out := make([]capacity.Slot, 0, len(pg.Status.Reservations))
	for _, r := range pg.Status.Reservations {
		out = append(out, capacity.Slot{Node: r.Node, Requests: req[r.Role], Count: int64(r.Count)})
	}
	return out
}

// roleRequests are the requests of one pod of each createdLater role, as
// its template says.
func roleRequests(pg *v1alpha1.PodGroup) map[string]capacity.Resources {
	out := map[string]capacity.Resources{}
	for _, r := range pg.Spec.Roles {
		if r.CreatedLater {
			out[r.Name] = capacity.PodRequests(admission.TemplatePod(r.Template))
		}
	}
	return out
}

// standInSlots are the slots a decision's reserved places take, for the
// tracker to hold until the group's status shows them.
func standInSlots(cs []capacity.CopiesOnNode) []capacity.Slot {
	out := make([]capacity.Slot, 0, len(cs))
	for _, c := range cs {
		out = append(out, capacity.Slot{Node: c.Node, Requests: c.Requests, Count: int64(c.Count)})
	}
	return out
}

// reserve is step 6's share for an admitted group with reservations: pods
// of a createdLater role that arrive claim a reserved place (claimReserved),
// places unclaimed past their role's timeout are given back
// (expireReservations), and the CapacityReserved condition follows. It
// updates places and d, and returns when to look again for an expiry.
func (a *Mode) reserve(g admission.Group, places *admission.Places, d *admission.Decision, now time.Time) time.Duration {
	pg := g.PodGroup
	if len(places.Reservations) == 0 {
		return 0
	}
	a.claimReserved(g, places)
	trimReservations(g, places)
	next, expired := a.expireReservations(g, places, d, now)
	if len(places.Reservations) > 0 {
		d.Set(v1alpha1.ConditionCapacityReserved, metav1.ConditionTrue, scheduling.ReasonAwaitingPods, reservedMessage(pg, places.Reservations))
	} else if !expired && !meta.IsStatusConditionFalse(pg.Status.Conditions, v1alpha1.ConditionCapacityReserved) {
		// An expiry just set the condition False, with its own reason.
		d.Set(v1alpha1.ConditionCapacityReserved, metav1.ConditionFalse, scheduling.ReasonAllClaimed,
			"every place reserved for pods not yet created was claimed by a pod of its role")
	}
	return next
}

// claimFits reports whether pod p of group key may take a place reserved
// on node for pods requesting slot: by the scheduler's filters once they
// run, and before that by the resource, readiness, taint and node affinity
// checks.
func (a *Mode) claimFits(key scheduling.GroupKey, p *corev1.Pod, node string, slot capacity.Resources) bool {
	if a.filters == nil {
		return capacity.Claims(a.tracker.Node(node), p, slot)
	}
	return a.tracker.ClaimFits(a.filters, key, p, node, slot)
}

// claimReserved gives each gated pod of a createdLater role that has no
// placement yet one place reserved for its role, on a node whose filters
// it passes and whose place it fits: the placement and the smaller
// reservation go into status in one write, before the pod is pinned there
// and released (step 9). A pod that fits no reserved place is left to be
// placed as any joiner is.
func (a *Mode) claimReserved(g admission.Group, places *admission.Places) {
	req := roleRequests(g.PodGroup)
	waiting := unplacedPods(g, places.Placements)
	sort.Slice(waiting, func(i, j int) bool { return waiting[i].Name < waiting[j].Name })
	for _, p := range waiting {
		role := p.Labels[scheduling.RoleLabel]
		for i := range places.Reservations {
			r := &places.Reservations[i]
			if r.Role != role || r.Count == 0 || !a.claimFits(g.Key, p, r.Node, req[role]) {
				continue
			}
			r.Count--
			places.Placements = append(places.Placements, v1alpha1.PodPlacement{Pod: p.Name, UID: p.UID, Node: r.Node})
			break
		}
	}
	dropEmptyReservations(places)
}

// trimReservations keeps no more places for a role than its count less
// its active pods that are placed or released; a pod that waits unplaced
// (larger than its template) may still leave a place to a later one. A
// count lowered after admission gives the surplus back at once:
// validation refuses reservations above a role's count, so without this
// every later status write would fail.
func trimReservations(g admission.Group, places *admission.Places) {
	waiting := map[string]int32{}
	for _, p := range unplacedPods(g, places.Placements) {
		waiting[p.Labels[scheduling.RoleLabel]]++
	}
	left := map[string]int32{}
	for _, r := range g.PodGroup.Spec.Roles {
		left[r.Name] = max(r.Count-(g.RoleActive[r.Name]-waiting[r.Name]), 0)
	}
	for i := range places.Reservations {
		r := &places.Reservations[i]
		r.Count = min(r.Count, left[r.Role])
		left[r.Role] -= r.Count
	}
	dropEmptyReservations(places)
}

func dropEmptyReservations(places *admission.Places) {
	places.Reservations = slices.DeleteFunc(places.Reservations, func(r v1alpha1.RoleReservation) bool { return r.Count <= 0 })
	if len(places.Reservations) == 0 {
		places.Reservations = nil
	}
}

// expireReservations gives back the places of a role that are still
// unclaimed once its timeout, counted from the group's admission, has
// passed: the group says so in CapacityReserved=False/ReservationExpired
// and an event. Pods of the role that arrive later are placed as capacity
// allows, like any joiner. It returns when the next timeout falls, and
// whether any place expired.
func (a *Mode) expireReservations(g admission.Group, places *admission.Places, d *admission.Decision, now time.Time) (time.Duration, bool) {
	pg := g.PodGroup
	if pg.Status.AdmissionTime == nil {
		return 0, false
	}
	left := map[string]int32{}
	for _, r := range places.Reservations {
		left[r.Role] += r.Count
	}
	var expired []string
	var next time.Duration
	for _, role := range pg.Spec.Roles {
		n, ok := left[role.Name]
		if !ok {
			continue
		}
		timeout := a.timeout(role)
		if wait := pg.Status.AdmissionTime.Add(timeout).Sub(now); wait > 0 {
			next = admission.Soonest(next, wait)
			continue
		}
		expired = append(expired, fmt.Sprintf("%d of the %d pods of role %s did not arrive within %s", n, role.Count, role.Name, timeout))
		for i := range places.Reservations {
			if places.Reservations[i].Role == role.Name {
				places.Reservations[i].Count = 0
			}
		}
	}
	if len(expired) == 0 {
		return next, false
	}
	dropEmptyReservations(places)
	msg := fmt.Sprintf("%s of admission; their reserved capacity was given back, and such pods that arrive now are placed as capacity allows", strings.Join(expired, "; "))
	d.Set(v1alpha1.ConditionCapacityReserved, metav1.ConditionFalse, scheduling.ReasonReservationExpired, msg)
	d.Record(corev1.EventTypeWarning, scheduling.EventReservationExpired, msg)
	return next, true
}

// timeout is the role's own reservation timeout, or the controller's. A
// role's own is at most MaxReservationTimeoutSeconds even if it was stored
// before validation bounded it.
func (a *Mode) timeout(r v1alpha1.PodGroupRole) time.Duration {
	if t := r.ReservationTimeoutSeconds; t != nil {
		return time.Duration(min(*t, scheduling.MaxReservationTimeoutSeconds)) * time.Second
	}
	return a.reservationTimeout
}

// reservedMessage says what reserved holds for pg's roles, e.g. "capacity
// is reserved for 8 pods not yet created: worker 8 on 2 nodes".
func reservedMessage(pg *v1alpha1.PodGroup, reserved []v1alpha1.RoleReservation) string {
	type held struct{ pods, nodes int32 }
	byRole := map[string]*held{}
	var total int32
	for _, r := range reserved {
		h := byRole[r.Role]
		if h == nil {
			h = &held{}
			byRole[r.Role] = h
		}
		h.pods += r.Count
		h.nodes++
		total += r.Count
	}
	var parts []string
	for _, role := range pg.Spec.Roles {
		if h := byRole[role.Name]; h != nil {
			parts = append(parts, fmt.Sprintf("%s %d on %d nodes", role.Name, h.pods, h.nodes))
		}
	}
	return fmt.Sprintf("capacity is reserved for %d pods not yet created: %s; each pod of the role that arrives is pinned to a reserved node and released at once",
		total, strings.Join(parts, ", "))
}
