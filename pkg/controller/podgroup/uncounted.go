package podgroup

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// recordFinished is step 5 of docs/controller.md (KEP-2307's first write):
// the UIDs of finished pods that still
// carry the tracking finalizer go into status.uncountedTerminatedPods, which
// is written before any finalizer comes off. Each list holds at most 500
// UIDs; moreToRecord says a further batch is waiting. While a group's pods
// keep finishing, new UIDs are recorded at most once per StatusBatchPeriod
// (deferFor says when next), unless a full batch is ready or the group has
// nothing active left, so that the end of a gang is never delayed.
func (c *Controller) recordFinished(key scheduling.GroupKey, pg *v1alpha1.PodGroup, v *podView, now time.Time) (moreToRecord bool, deferFor time.Duration) {
	u := pg.Status.UncountedTerminatedPods
	if u == nil {
		u = &v1alpha1.UncountedTerminatedPods{}
	}
	recorded := sets.New(u.Succeeded...).Insert(u.Failed...)
	var fresh []types.UID
	for uid := range v.finished {
		if !recorded.Has(uid) && !c.memory.expecting(key, finalizersRemoved, uid) {
			fresh = append(fresh, uid)
		}
	}
	if len(fresh) == 0 {
		return false, 0
	}
	if wait := c.flushWait(key, now); wait > 0 && v.active > 0 && len(fresh) < scheduling.MaxUncountedTerminatedPods {
		return false, wait
	}
	slices.Sort(fresh) // a stable order keeps retries identical.
	for _, uid := range fresh {
		switch {
		case v.finished[uid] == resultSucceeded && len(u.Succeeded) < scheduling.MaxUncountedTerminatedPods:
			u.Succeeded = append(u.Succeeded, uid)
		case v.finished[uid] == resultFailed && len(u.Failed) < scheduling.MaxUncountedTerminatedPods:
			u.Failed = append(u.Failed, uid)
			if v.preempted[uid] || evictedWhilePreempted(pg, v.withFinalizer[uid]) {
				u.Preempted = append(u.Preempted, uid)
			}
		default:
			moreToRecord = true
		}
	}
	pg.Status.UncountedTerminatedPods = u
	recordRoleFinished(pg, v)
	return moreToRecord, 0
}
