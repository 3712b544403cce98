package podgroup

import (
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// runningJob is step 12's question for a group with no active pod and too
// few successes: is a Job that owns the group, or controls some of its
// pods, still running? The Job controller replaces failed pods only after a
// backoff (10s, 20s, 40s, ... up to 6 minutes), and a suspended Job not at
// all until it is resumed, so a group that failed after --release-grace
// would leave the Job's next pods gated for ever, and the Job would never
// reach its backoffLimit. The group's own owner reference counts because a
// suspended Job deletes every pod: the controller names the Job as the
// owner of a group it creates from the Job's pods (createdGroupOwners). It
// returns the name of such a Job (the first by name, so that the message is
// stable), or "" if none runs: each such Job has ended (a Complete or
// Failed condition that is True), or is gone (not in the cache, or
// replaced by another of the same name).
func (c *Controller) runningJob(pg *v1alpha1.PodGroup, pods []*corev1.Pod) string {
	seen := sets.New[types.UID]()
	var running []string
	consider := func(name string, uid types.UID) {
		if seen.Has(uid) {
			return
		}
		seen.Insert(uid)
		job, err := c.jobLister.Jobs(pg.Namespace).Get(name)
		if err != nil || job.UID != uid || jobEnded(job) {
			return
		}
		running = append(running, name)
	}
	for _, ref := range pg.OwnerReferences {
		if (ownerKind{ref.APIVersion, ref.Kind}) == jobOwner {
			consider(ref.Name, ref.UID)
		}
	}
	for _, p := range pods {
		if name, uid, ok := ownedBy(p, jobOwner); ok {
			consider(name, uid)
		}
	}
	if len(running) == 0 {
		return ""
	}
	return slices.Min(running)
}

// jobEnded reports whether the Job controller has ended a Job: it creates
// no pod any more.
func jobEnded(job *batchv1.Job) bool {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
