package podgroup

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

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
	if n, held := c.holdBack(pg, v, pods, missing, holding); held {
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
// roles not created yet.
func (c *Controller) holdBack(pg *v1alpha1.PodGroup, v *podView, pods []*corev1.Pod, missing map[string]int32, holding time.Duration) (n *notAdmitted, held bool) {
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
	if later := admission.SumCounts(missing); v.active+later < need {
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

// ungate is step 9, for an admitted group: it removes the admission gate
// from every gated pod of an admitted group, in parallel, and observes the
// gate-removal latency.
func (c *Controller) ungate(ctx context.Context, pg *v1alpha1.PodGroup, v *podView) error {
	key := groupKey(pg.Namespace, pg.Name)
	placed := placementsByUID(pg)
	var pods []*corev1.Pod
	for _, p := range v.gatedPods {
		if _, ok := c.admitter.ReleaseTo(placed, p); !ok {
			continue // not placed yet: it waits for capacity.
		}
		// The cache still shows a finalizer that cleanup took off: wait until
		// it shows the removal, which syncs the group again, so that the gate
		// patch puts the finalizer back (adoptOps).
		// Nor release a pod twice from a cache that still shows its gate.
		if !c.memory.expecting(key, finalizersRemoved, p.UID) && !c.memory.expecting(key, gatesRemoved, p.UID) {
			pods = append(pods, p)
		}
	}
	if held := c.holdShort(pg, v, pods); len(held) > 0 {
		pods = slices.DeleteFunc(pods, func(p *corev1.Pod) bool { return slices.Contains(held, p) })
	}
	if len(pods) == 0 {
		return nil
	}
	if err := c.admitter.BeforeRelease(ctx, key); err != nil {
		return fmt.Errorf("before releasing %d pods: %w", len(pods), err)
	}
	release := func(p *corev1.Pod) ([]byte, bool) {
		node, _ := c.admitter.ReleaseTo(placed, p)
		return releasePatch(node)(p)
	}
	// A pod that is gone is not released: the gang may be short, and the
	// error makes the group sync again from a fresh read (holdShort).
	done, errs := c.patchPods(ctx, pods, release, false)
	c.memory.expect(key, gatesRemoved, done...)
	c.metrics.podsUngated.Add(float64(len(done)))
	if len(errs) > 0 {
		return fmt.Errorf("ungating %d of %d pods: %w", len(errs), len(pods), errors.Join(errs...))
	}
	if seen, ok := c.memory.takeLastPodSeen(key); ok {
		c.metrics.gateRemovalLatency.Observe(c.clock.Since(seen).Seconds())
	}
	klog.FromContext(ctx).V(2).Info("Released pods", "count", len(done))
	return nil
}

// markScheduled is step 7: it sets Scheduled=True, and startTime, once
// minCount pods are bound to nodes. The condition never goes back.
func markScheduled(pg *v1alpha1.PodGroup, v *podView, now time.Time) {
	if !isAdmitted(pg) {
		return
	}
	if v.scheduled < minCount(pg) {
		markOtherGates(pg, v, now)
		return
	}
	if setCondition(pg, v1alpha1.ConditionScheduled, metav1.ConditionTrue, scheduling.ReasonMinCountBound,
		fmt.Sprintf("at least %d pods were bound to nodes", minCount(pg)), now) && pg.Status.StartTime == nil {
		t := metav1.NewTime(now)
		pg.Status.StartTime = &t
	}
}

// warnFinishedJoiners is step 9 for a finished group: it tells pods that
// joined it why they stay gated.
func (c *Controller) warnFinishedJoiners(pg *v1alpha1.PodGroup, v *podView) {
	for _, p := range v.gatedPods {
		c.warnOnce(p.UID, scheduling.EventPodGroupFinished, func() {
			c.recorder.Eventf(p, corev1.EventTypeWarning, scheduling.EventPodGroupFinished,
				"PodGroup %s has finished; this pod stays gated", pg.Name)
		})
	}
}
