package podgroup

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// lostCounts is what step 5b found missing from a group's status.
type lostCounts struct {
	// succeeded and failed are the counted pods that exist and that status
	// does not hold.
	succeeded, failed int32
	// readmit: the group's status lost its admission too.
	readmit bool
}

// recoverCounts is step 5b: it finds counts the group's status lost, and
// has recordRecovery (decision.go) write them.
//
// Step 10 labels each pod whose end it counted (scheduling.CountedLabel,
// with the result and the group's UID) in the patch that takes its
// finalizer off, and step 11 moves it into the counters in the write that
// follows. So every counted pod that still exists is in status: in
// uncountedTerminatedPods, or in succeeded or failed. When more such pods
// exist than status holds, status is older than Muster's own writes, as
// after Muster's etcd was restored from a snapshot taken before those
// pods ended (docs/etcd.md). The counters are then raised to the counted
// pods that exist, and CountsRecovered=True says by how many. Pods that
// were counted and deleted since the snapshot cannot be counted again:
// the counts are a lower bound from then on, and step 12 never judges
// the group Failed for being short (finish).
//
// Counted pods also show that this group was admitted: a group whose
// status says otherwise is admitted again (reason AdmittedBeforeRestore),
// as admission is never undone, so that step 12 can finish it.
func recoverCounts(pg *v1alpha1.PodGroup, pods []*corev1.Pod, now time.Time) {
	if lost, ok := findLostCounts(pg, pods); ok {
		recordRecovery(pg, lost, now)
	}
}

// findLostCounts compares the pods counted for pg with its status, and
// reports whether any are missing from it.
func findLostCounts(pg *v1alpha1.PodGroup, pods []*corev1.Pod) (lostCounts, bool) {
	var succeeded, failed int32
	for _, p := range pods {
		if scheduling.HasTrackingFinalizer(p) {
			// Still tracked: its count goes through uncountedTerminatedPods.
			continue
		}
		switch result, ok := scheduling.CountedIn(p, pg.UID); {
		case !ok:
		case result == corev1.PodSucceeded:
			succeeded++
		default:
			failed++
		}
	}
	knownSucceeded, knownFailed := pg.Status.Succeeded, pg.Status.Failed
	if u := pg.Status.UncountedTerminatedPods; u != nil {
		knownSucceeded += int32(len(u.Succeeded))
		knownFailed += int32(len(u.Failed))
	}
	lost := lostCounts{
		succeeded: max(0, succeeded-knownSucceeded),
		failed:    max(0, failed-knownFailed),
		readmit:   !isAdmitted(pg) && len(pg.Spec.SchedulingGates) == 0,
	}
	return lost, lost.succeeded > 0 || lost.failed > 0
}

// countsRecovered says whether recoverCounts ever raised the group's
// counters: they are a lower bound.
func countsRecovered(pg *v1alpha1.PodGroup) bool {
	return meta.IsStatusConditionTrue(pg.Status.Conditions, v1alpha1.ConditionCountsRecovered)
}
