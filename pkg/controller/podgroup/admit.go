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
// admission mode (admitter.go) once the gang is complete, and records the
// decision in pg's status (recordDecision, decision.go): Admitted=True with admissionTime the first time
// the group has no group gates and at least minCount active pods. It reports
// whether the group's gated pods should be released now. Once admitted, a
// group stays admitted, so pods that join later (replacements, scale-up) are
// released at once. A finished group admits nobody, nor does one whose gang
// is above MaxGangMinCount, or whose last status write the API refused for
// good, until its backoff ends (statusrejected.go). pods are the group's
// pods, for checkOrderedReady.
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
	if n := stillReleased(pg, v); n > 0 {
		// Preempted: it is admitted again only once its released pods are
		// gone (evict.go), never alongside them.
		c.admitter.Withdraw(key)
		c.setWaiting(pg, v, scheduling.ReasonPreemptionByMuster, fmt.Sprintf("%s; waiting for %d of its released pods to be evicted",
			meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.ConditionPreempted).Message, n), now)
		return false
	}
	if createdFromPods(pg) && v.pods == 0 {
		c.admitter.Withdraw(key)
		c.setNoPods(pg, v, now) // ttl.go
		return false
	}
	if !c.checkMinCount(pg, v, now) || holding > 0 {
		c.admitter.Withdraw(key)
		v.reserveAfter = holding
		return false
	}
	if gates := pg.Spec.SchedulingGates; len(gates) > 0 {
		c.admitter.Withdraw(key)
		names := make([]string, len(gates))
		for i, g := range gates {
			names[i] = g.Name
		}
		c.setWaiting(pg, v, scheduling.ReasonSchedulingGated, truncate(fmt.Sprintf("held by scheduling gates: %s", strings.Join(names, ", "))), now)
		return false
	}
	need := minCount(pg)
	rolesMsg, rolesShort := rolesShort(pg, v)
	// Pods of createdLater roles are not waited for: their places are
	// reserved when the gang is admitted (capacityadmission/reservations.go).
	missing := g.LaterMissing()
	later := admission.SumCounts(missing)
	if v.active+later < need {
		msg := fmt.Sprintf("has %d of the %d active pods it needs", v.active, need)
		if later > 0 {
			msg = fmt.Sprintf("has %d of the %d active pods it needs before the %d pods created later", v.active, need-later, later)
		}
		if rolesShort {
			msg += "; " + rolesMsg
		}
		c.admitter.Withdraw(key)
		if !c.checkOrderedReady(pg, v, pods, now) { // orderedready.go
			c.setWaiting(pg, v, scheduling.ReasonWaitingForPods, truncate(msg), now)
		}
		return false
	}
	if rolesShort {
		c.admitter.Withdraw(key)
		c.setWaiting(pg, v, scheduling.ReasonWaitingForPods, truncate(rolesMsg), now)
		return false
	}
	if !c.checkReservationQuota(pg, v, missing, now) { // reservationquota.go
		c.admitter.Withdraw(key)
		return false
	}
	return c.recordDecision(pg, v, c.admitter.AdmitGang(g, need, later, now), now) // decision.go
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
