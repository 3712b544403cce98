package podgroup

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// Gang preemption (docs/controller.md, "Gang preemption"). An admission
// cycle that finds a gang which does not fit, and victims whose removal
// lets it, decides a preemption (capacity/preempt.go). It is carried out
// in three writes, each before the next acts:
//
//  1. step 6: capacity admission decides the preemption
//     (preemptionDecision), and applyDecision writes it: the preemptor's
//     status names its victims (status.preemption) with Admitted=False,
//     reason Preempting.
//  2. markVictims (step 9b, once 1 is written): each victim group gets
//     Preempted=True and Admitted=False, reason PreemptionByMuster, and
//     gives back its placements and reservations; a victim pod Muster does
//     not manage is evicted at once.
//  3. evictPreempted (step 9c, in each victim's own sync, evict.go): its
//     released pods get DisruptionTarget, reason PreemptionByMuster, and
//     are deleted.
//
// A new leader finds 1 in the preemptor's status and 2 in the victims',
// and carries out the rest; the preemptor offers itself with its recorded
// victims, so no second preemption starts while they still hold capacity.

// markVictims is step 9b for a group whose status records a preemption and
// that is not admitted yet: each victim is marked (a group) or evicted (a
// pod Muster does not manage). Each is idempotent: a victim already marked,
// gone, replaced by a new object of its name, or admitted again after the
// preemption was decided, is left alone.
func (c *Controller) markVictims(ctx context.Context, pg *v1alpha1.PodGroup) error {
	p := pg.Status.Preemption
	if p == nil || isAdmitted(pg) {
		return nil
	}
	var errs []error
	for _, recorded := range p.Victims {
		v, ok := c.admitter.ResolveVictim(recorded)
		if !ok {
			continue // recorded by ref, and gone
		}
		why := preemptedBy(pg, p.Priority, v)
		klog.FromContext(ctx).V(2).Info("Preempting", "preemptor", klog.KObj(pg), "victimKind", v.Kind, "victim", klog.KRef(v.Namespace, v.Name), "victimUID", v.UID)
		var err error
		switch v.Kind {
		case scheduling.VictimKindPodGroup:
			err = c.markVictim(ctx, v, p.Time, why, klog.KObj(pg))
		case scheduling.VictimKindPod:
			err = c.evictUnmanaged(ctx, v, why)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("preempting %s %s/%s: %w", v.Kind, v.Namespace, v.Name, err))
		}
	}
	return errors.Join(errs...)
}

// preemptedBy is why a victim is preempted, for its condition, its event
// and its pods' DisruptionTarget: the preemptor is named only to a victim in
// its own namespace. To any other it is a PodGroup of its priority in
// another namespace: the victim's readers need not see the preemptor's
// namespace. Admins find both in the controller's log ("Preempting", at
// verbosity 2, and "Preempted a gang").
func preemptedBy(preemptor *v1alpha1.PodGroup, priority int32, v v1alpha1.PreemptionVictim) string {
	if v.Namespace == preemptor.Namespace {
		return fmt.Sprintf("preempted by PodGroup %s (priority %d, above its %d) to fit", preemptor.Name, priority, v.Priority)
	}
	return fmt.Sprintf("preempted by a PodGroup in another namespace (priority %d, above its %d) to fit", priority, v.Priority)
}

// markVictim writes Preempted=True and Admitted=False, reason
// PreemptionByMuster, to a victim group, and drops its placements and
// reservations: its capacity goes to the preemptor, and it waits whole
// again. Its own sync then evicts its released pods (evict.go).
func (c *Controller) markVictim(ctx context.Context, v v1alpha1.PreemptionVictim, decided metav1.Time, why string, preemptor klog.ObjectRef) error {
	// The cache answers for a victim already marked, gone or replaced, so
	// that a preemptor's syncs while its victims go cost no API call.
	if cached, err := c.pgLister.PodGroups(v.Namespace).Get(v.Name); apierrors.IsNotFound(err) ||
		(err == nil && (cached.UID != v.UID || !isAdmitted(c.memory.fresh(groupKey(v.Namespace, v.Name), cached)))) {
		return nil
	}
	client := c.muster.SchedulingV1alpha1().PodGroups(v.Namespace)
	marked := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pg, err := client.Get(ctx, v.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if pg.UID != v.UID || !isAdmitted(pg) || isFinished(pg) {
			return nil // gone, replaced, already marked, or done.
		}
		if at := pg.Status.AdmissionTime; at != nil && at.After(decided.Time) {
			return nil // admitted again since: not the gang that was chosen.
		}
		recordPreempted(pg, scheduling.ReasonPreemptionByMuster, why, "; its released pods are evicted, and it waits whole again", c.clock.Now())
		updated, err := client.UpdateStatus(ctx, pg, statusUpdateOptions)
		if err != nil {
			return err
		}
		c.memory.wrote(groupKey(v.Namespace, v.Name), pg, updated)
		marked = true
		return nil
	})
	if err != nil {
		return err
	}
	if marked {
		klog.FromContext(ctx).Info("Preempted a gang", "victim", klog.KRef(v.Namespace, v.Name), "why", why, "preemptor", preemptor)
		key := groupKey(v.Namespace, v.Name)
		c.recorder.Event(groupRef(key, v.UID), corev1.EventTypeWarning, scheduling.EventPreempted, why)
		c.queue.Add(key)
	}
	return nil
}

// evictUnmanaged evicts a victim pod that Muster does not manage
// (--preempt-unmanaged), read fresh: it is in no cache of Muster's.
func (c *Controller) evictUnmanaged(ctx context.Context, v v1alpha1.PreemptionVictim, why string) error {
	p, err := c.kube.CoreV1().Pods(v.Namespace).Get(ctx, v.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if p.UID != v.UID || scheduling.IsEnding(p) {
		return nil
	}
	return c.evictPod(ctx, p, why)
}
