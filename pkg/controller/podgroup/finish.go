package podgroup

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// finish is step 12. An admitted group with no active pod and exact counts
// has Succeeded when at least minCount pods succeeded. With fewer, it waits
// for a replacement pod: while a Job that controls some of its pods still
// runs (runningJob), for as long as the Job runs, since the Job controller
// replaces failed pods only after a backoff and not at all while the Job is
// suspended; else ReleaseGrace, and then it has Failed. The grace runs from
// the lastTransitionTime of Finished=False/WaitingForReplacement, so that
// it survives a restart, and it is the same condition while a Job runs: a
// group whose Job ran longer than the grace fails as soon as the Job has
// ended or is gone. It returns when to look again: while a Job runs, never
// by the clock, since the Job's own events requeue the group.
func (c *Controller) finish(pg *v1alpha1.PodGroup, v *podView, pods []*corev1.Pod, removed sets.Set[types.UID], now time.Time) time.Duration {
	if isFinished(pg) || !isAdmitted(pg) {
		return 0
	}
	if v.active > 0 || !c.accountingDone(pg, v, removed) {
		// A replacement appeared, or counts are still moving: not waiting any more.
		if c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.ConditionFinished); c != nil &&
			(c.Reason == scheduling.ReasonWaitingForReplacement || c.Reason == scheduling.ReasonCountsIncomplete) {
			meta.RemoveStatusCondition(&pg.Status.Conditions, v1alpha1.ConditionFinished)
		}
		return 0
	}
	need := minCount(pg)
	if pg.Status.Succeeded >= need {
		c.complete(pg, v, v1alpha1.ReasonSucceeded, fmt.Sprintf("%d pods succeeded (%d needed), %d failed", pg.Status.Succeeded, need, pg.Status.Failed), now)
		return 0
	}
	if countsRecovered(pg) {
		// The counts are a lower bound since they were recovered: pods
		// counted and deleted before may have succeeded. Not judged.
		setCondition(pg, v1alpha1.ConditionFinished, metav1.ConditionFalse, scheduling.ReasonCountsIncomplete,
			fmt.Sprintf("no active pods and %d of %d needed pods are known to have succeeded, %d failed; the counts were recovered "+
				"(see CountsRecovered) and may be short, so the group is not judged Failed", pg.Status.Succeeded, need, pg.Status.Failed), now)
		return 0
	}
	if job := c.runningJob(pg, pods); job != "" {
		setCondition(pg, v1alpha1.ConditionFinished, metav1.ConditionFalse, scheduling.ReasonWaitingForReplacement,
			fmt.Sprintf("no active pods and %d of %d needed pods succeeded; waiting for Job %s, which still runs, to replace its pods", pg.Status.Succeeded, need, job), now)
		return 0
	}
	left := c.cfg.ReleaseGrace
	if waiting := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.ConditionFinished); waiting != nil && waiting.Reason == scheduling.ReasonWaitingForReplacement {
		left = waiting.LastTransitionTime.Add(c.cfg.ReleaseGrace).Sub(now)
	}
	if left > 0 {
		// setCondition keeps the lastTransitionTime of a wait that began
		// while a Job ran; only its message changes.
		setCondition(pg, v1alpha1.ConditionFinished, metav1.ConditionFalse, scheduling.ReasonWaitingForReplacement,
			fmt.Sprintf("no active pods and %d of %d needed pods succeeded; failing in %s unless a replacement pod appears", pg.Status.Succeeded, need, c.cfg.ReleaseGrace), now)
		return left
	}
	c.complete(pg, v, v1alpha1.ReasonFailed, fmt.Sprintf("only %d of %d needed pods succeeded and no replacement appeared within %s; %d failed",
		pg.Status.Succeeded, need, c.cfg.ReleaseGrace, pg.Status.Failed), now)
	return 0
}

func (c *Controller) complete(pg *v1alpha1.PodGroup, v *podView, reason, msg string, now time.Time) {
	setCondition(pg, v1alpha1.ConditionFinished, metav1.ConditionTrue, reason, msg, now)
	t := metav1.NewTime(now)
	pg.Status.CompletionTime = &t
	if pg.Status.StartTime != nil && t.Before(pg.Status.StartTime) {
		pg.Status.CompletionTime = pg.Status.StartTime
	}
	eventType := corev1.EventTypeNormal
	if reason == v1alpha1.ReasonFailed {
		eventType = corev1.EventTypeWarning
	}
	v.onceWritten(func() { c.recorder.Event(pg, eventType, scheduling.EventFinished, msg) })
}
