package podgroup

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/controller/admission"
)

// admit is step 6: it decides whether the group is admitted, asking the
// admission mode (admitter.go) once the gang is complete, and has
// decision.go record what was decided in pg's status: the mode's Decision
// (recordDecision), or why the group's own checks hold it back
// (recordNotAdmitted). A group is admitted, with admissionTime, the first
// time it has no group gates and at least minCount active pods, and the
// mode admits it. It reports whether the group's gated pods should be
// released now. Once admitted, a group stays admitted, so pods that join
// later (replacements, scale-up) are released at once. A finished group
// admits nobody, nor does one whose gang is above MaxGangMinCount, or
// whose last status write the API refused for good, until its backoff
// ends (statusrejected.go). pods are the group's pods, for orderedReady.
func (c *Controller) admit(pg *v1alpha1.PodGroup, v *podView, pods []*corev1.Pod, now time.Time) bool {
	key := groupKey(pg.Namespace, pg.Name)
	g := admissionGroup(key, pg, v)
	if isFinished(pg) {
		c.admitter.Withdraw(key)
		return false
	}
	// A status write refused for good holds admission back for a while
	// (statusrejected.go); decisions already recorded are carried out.
	holding := c.memory.rejectionHolds(key, pg.Generation, now)
	if isAdmitted(pg) {
		if holding > 0 {
			c.admitter.Withdraw(key)
			v.reserveAfter = holding
			return true
		}
		d := c.admitter.AdmitJoiners(g, now)
		v.reserveAfter = d.Recheck
		c.recordDecision(pg, v, d, now) // decision.go
		return true
	}
	// Pods of createdLater roles are not waited for: their places are
	// reserved when the gang is admitted (capacityadmission/reservations.go).
	missing := g.LaterMissing()
	later := admission.SumCounts(missing)
	if n, held := c.holdBack(pg, v, pods, missing, later, holding); held {
		c.admitter.Withdraw(key)
		v.reserveAfter = holding
		if n != nil {
			c.recordNotAdmitted(pg, v, n, now) // decision.go
		}
		return false
	}
	return c.recordDecision(pg, v, c.admitter.AdmitGang(g, minCount(pg), later, now), now) // decision.go
}

// holdBack is step 6's own checks of a group not yet admitted, in order,
// before the admission mode is asked: held says that the group is not
// admitted now, and n why (nil while a refused status write holds it
// back, which says nothing new). missing are the pods of createdLater
// roles not created yet, later their sum.
func (c *Controller) holdBack(pg *v1alpha1.PodGroup, v *podView, pods []*corev1.Pod, missing map[string]int32, later int32, holding time.Duration) (n *notAdmitted, held bool) {
	if k := stillReleased(pg, v); k > 0 {
		// Preempted: it is admitted again only once its released pods are
		// gone (evict.go), never alongside them.
		return waiting(scheduling.ReasonPreemptionByMuster, fmt.Sprintf("%s; waiting for %d of its released pods to be evicted",
			meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.ConditionPreempted).Message, k)), true
	}
	if createdFromPods(pg) && v.pods == 0 {
		return c.noPods(pg), true // ttl.go
	}
	if n := minCountTooLarge(pg); n != nil { // mincount.go
		return n, true
	}
	if holding > 0 {
		return nil, true
	}
	if gates := pg.Spec.SchedulingGates; len(gates) > 0 {
		names := make([]string, len(gates))
		for i, g := range gates {
			names[i] = g.Name
		}
		return waiting(scheduling.ReasonSchedulingGated, truncate(fmt.Sprintf("held by scheduling gates: %s", strings.Join(names, ", ")))), true
	}
	need := minCount(pg)
	rolesMsg, rolesShort := rolesShort(pg, v)
	if v.active+later < need {
		if n := c.orderedReady(pg, v, pods); n != nil { // orderedready.go
			return n, true
		}
		msg := fmt.Sprintf("has %d of the %d active pods it needs", v.active, need)
		if later > 0 {
			msg = fmt.Sprintf("has %d of the %d active pods it needs before the %d pods created later", v.active, need-later, later)
		}
		if rolesShort {
			msg += "; " + rolesMsg
		}
		return waiting(scheduling.ReasonWaitingForPods, truncate(msg)), true
	}
	if rolesShort {
		return waiting(scheduling.ReasonWaitingForPods, truncate(rolesMsg)), true
	}
	if n := c.checkReservationQuota(pg, missing); n != nil { // reservationquota.go
		return n, true
	}
	return nil, false
}
