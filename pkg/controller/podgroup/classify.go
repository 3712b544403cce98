package podgroup

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// classification is step 2's reading of a group's pods: the counters that
// go into status, and the pods each later step acts on. It is built once per
// sync, by classifyPods, and only read after.
type classification struct {
	// all are the group's pods, as the sync read them.
	all                                   []*corev1.Pod
	pods, gated, active, scheduled, ready int32
	// roleActive counts the active pods of each role (roles.go).
	roleActive map[string]int32

	// gatedPods still carry the admission gate.
	gatedPods []*corev1.Pod
	// otherGated are live pods without the admission gate that are not bound
	// because another tool's scheduling gate still holds them.
	otherGated []*corev1.Pod
	// finished are pods that ended (or count as ended) and still carry the
	// tracking finalizer, keyed by UID, with the result they count as.
	finished map[types.UID]podResult
	// preempted are the failed ones of finished that Muster preempted:
	// they carry DisruptionTarget with reason PreemptionByMuster.
	preempted map[types.UID]bool
	// released are pods that were deleted before they were ever bound: they
	// ran nothing, so the finalizer comes off without counting them.
	released []*corev1.Pod
	// terminating are deleted pods that are neither terminal nor past their
	// grace period: not active, not countable yet.
	terminating int32
	// untracked are released pods that run or wait to run without the
	// tracking finalizer: step 9 adopts them (adopt.go).
	untracked []*corev1.Pod
	// recounted are finished pods whose tracking finalizer was put back after
	// they were counted (refuseRecounts): the finalizer comes off again, and
	// they are not counted twice.
	recounted []*corev1.Pod
	// withFinalizer indexes every pod that carries the tracking finalizer.
	withFinalizer map[types.UID]*corev1.Pod
}

type podResult int

const (
	resultSucceeded podResult = iota
	resultFailed
)

// classifyPods is step 2: it sorts a group's pods into what a sync counts
// and acts on. fastRelease makes a pod with a deletionTimestamp inactive at
// once (KEP-6143); without it the pod stays active until it is terminal.
func classifyPods(pods []*corev1.Pod, now time.Time, fastRelease bool) *podView {
	v := &podView{classification: classification{
		all: pods, finished: map[types.UID]podResult{}, preempted: map[types.UID]bool{}, withFinalizer: map[types.UID]*corev1.Pod{},
	}}
	for _, p := range pods {
		v.pods++
		deleting := p.DeletionTimestamp != nil
		tracked := scheduling.HasTrackingFinalizer(p)
		if tracked {
			v.withFinalizer[p.UID] = p
		}
		if scheduling.HasGate(p) {
			v.gated++
			v.gatedPods = append(v.gatedPods, p)
		} else if len(p.Spec.SchedulingGates) > 0 && p.Spec.NodeName == "" && !scheduling.IsEnding(p) {
			v.otherGated = append(v.otherGated, p)
		}
		if p.Spec.NodeName != "" {
			v.scheduled++
			if isReady(p) {
				v.ready++
			}
		}
		if scheduling.IsActive(p, fastRelease) {
			v.active++
			v.countActiveRole(p)
		}
		if !tracked {
			if !scheduling.IsEnding(p) && !scheduling.HasGate(p) {
				v.untracked = append(v.untracked, p)
			}
			continue
		}
		switch {
		case deleting && p.Spec.NodeName == "":
			// Deleted before it was ever bound: it ran nothing, and counts
			// nowhere, even once PodGC has marked it Failed (it does so to
			// an unscheduled pod being deleted before it removes it).
			v.released = append(v.released, p)
		case p.Status.Phase == corev1.PodSucceeded:
			v.finished[p.UID] = resultSucceeded
		case p.Status.Phase == corev1.PodFailed:
			v.failed(p)
		case deleting && !now.Before(killedBy(p)):
			// Deleted while running, and its kubelet has had the whole
			// grace period and the time to report its end: it failed.
			v.failed(p)
		case deleting:
			v.terminating++
			if at := killedBy(p); v.nextCheck.IsZero() || at.Before(v.nextCheck) {
				v.nextCheck = at
			}
		}
	}
	return v
}

// failed notes a finished pod that counts as failed, and whether it was
// preempted, by Muster or by kube-scheduler.
func (v *classification) failed(p *corev1.Pod) {
	v.finished[p.UID] = resultFailed
	if preemptedByMuster(p) || preemptedBySchedulerPod(p) {
		v.preempted[p.UID] = true
	}
}

// reportMargin is how long after a deleted pod's deletionTimestamp Muster
// still waits for its kubelet to report how it ended, before it counts it as
// failed: the timestamp is stored in whole seconds, rounded down (up to 1s
// before the true end of the grace period), and the kubelet, which counts the
// grace period from when it sees the deletion, reports the end a moment
// after. A pod that exits 0 in its grace period is then counted as
// succeeded, as its phase says, rather than as failed by a count taken just
// before its report.
const reportMargin = 3 * time.Second

// killedBy is when a deleted, running pod counts as failed if it has not
// reported its end.
func killedBy(p *corev1.Pod) time.Time { return p.DeletionTimestamp.Add(reportMargin) }

func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
