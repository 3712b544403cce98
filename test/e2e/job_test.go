package e2e

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/test/cluster"
)

// jobOpts shape a batch/v1 Job whose pods form one Muster gang: the pod
// template carries the group label and, unless noGroupAnnotation, the
// min-count annotation that makes Muster create the group. With
// groupByInstance it carries the group-by annotation instead, so that the
// webhook names the group after the Job and Muster takes its size from
// the Job's parallelism.
type jobOpts struct {
	pods     int32
	indexed  bool
	cpu      string
	runFor   string
	exitCode int
	// backoffLimit defaults to 6, the Job API's default.
	backoffLimit      *int32
	podFailurePolicy  *batchv1.PodFailurePolicy
	suspend           bool
	noGroupAnnotation bool
	groupByInstance   bool
}

// newGangJob returns a Job named name whose pods form the gang name.
func newGangJob(ns, name string, o jobOpts) *batchv1.Job {
	annotations := map[string]string{}
	switch {
	case o.groupByInstance:
		annotations[scheduling.GroupByAnnotation] = scheduling.GroupByInstance
	case !o.noGroupAnnotation:
		annotations[scheduling.MinCountAnnotation] = strconv.Itoa(int(o.pods))
	}
	if o.runFor != "" {
		annotations[cluster.RunForAnnotation] = o.runFor
	}
	if o.exitCode != 0 {
		annotations[cluster.ExitCodeAnnotation] = strconv.Itoa(o.exitCode)
	}
	cpu := o.cpu
	if cpu == "" {
		cpu = "100m"
	}
	mode := batchv1.NonIndexedCompletion
	if o.indexed {
		mode = batchv1.IndexedCompletion
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: batchv1.JobSpec{
			Parallelism:      ptr.To(o.pods),
			Completions:      ptr.To(o.pods),
			CompletionMode:   &mode,
			BackoffLimit:     o.backoffLimit,
			PodFailurePolicy: o.podFailurePolicy,
			Suspend:          ptr.To(o.suspend),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      map[string]string{scheduling.PodGroupLabel: name},
					Annotations: annotations,
				},
				Spec: corev1.PodSpec{
					RestartPolicy:                 corev1.RestartPolicyNever,
					TerminationGracePeriodSeconds: ptr.To[int64](1),
					Containers: []corev1.Container{{
						Name: "main", Image: "registry.k8s.io/pause:3.10",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}},
					}},
				},
			},
		},
	}
}

func createJob(t *testing.T, ctx context.Context, job *batchv1.Job) *batchv1.Job {
	t.Helper()
	created, err := kube.BatchV1().Jobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating Job %s: %v", job.Name, err)
	}
	return created
}

// waitJobCondition waits until the Job has condition cond True and returns
// the Job.
func waitJobCondition(t *testing.T, ctx context.Context, ns, name string, cond batchv1.JobConditionType) *batchv1.Job {
	t.Helper()
	var job *batchv1.Job
	waitFor(t, ctx, fmt.Sprintf("Job %s to be %s", name, cond), func(ctx context.Context) (bool, error) {
		var err error
		job, err = kube.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range job.Status.Conditions {
			if c.Type == cond && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	return job
}

// jobPods lists the pods of a Job by the label the Job controller puts on them.
func jobPods(t *testing.T, ctx context.Context, ns, job string) []corev1.Pod {
	t.Helper()
	list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job})
	if err != nil {
		t.Fatalf("listing pods of Job %s: %v", job, err)
	}
	return list.Items
}

// expectNoGatedPods asserts that no pod of ns is left behind Muster's gate.
func expectNoGatedPods(t *testing.T, ctx context.Context, ns string) {
	t.Helper()
	for _, p := range listPods(t, ctx, ns) {
		if isGated(&p) && p.DeletionTimestamp == nil {
			t.Errorf("pod %s is still gated (phase %s)", p.Name, p.Status.Phase)
		}
	}
}

// expectGroupCounts asserts a finished group's reason and counts.
func expectGroupCounts(t *testing.T, pg *v1alpha1.PodGroup, reason string, succeeded, failed int32) {
	t.Helper()
	c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.ConditionFinished)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != reason {
		t.Errorf("group %s Finished = %+v, want True/%s", pg.Name, c, reason)
	}
	if pg.Status.Succeeded != succeeded || pg.Status.Failed != failed {
		t.Errorf("group %s succeeded/failed = %d/%d, want %d/%d", pg.Name, pg.Status.Succeeded, pg.Status.Failed, succeeded, failed)
	}
}

// TestJobGangsDoNotFitTogether: two Jobs of 8 pods of 10 CPU, one Indexed
// and one NonIndexed, on nodes that hold 12 such pods. Each runs whole, one
// after the other, never both at once, and each group counts exactly 8.
func TestJobGangsDoNotFitTogether(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	ns := namespace(t, ctx)
	createJob(t, ctx, newGangJob(ns, "indexed", jobOpts{pods: 8, indexed: true, cpu: "10", runFor: "8s"}))
	createJob(t, ctx, newGangJob(ns, "nonindexed", jobOpts{pods: 8, cpu: "10", runFor: "8s"}))

	// Neither gang is ever partly released, and no more pods are released
	// than the nodes hold: the two overlap only while the first one's last
	// pods end.
	stop := make(chan struct{})
	monitor := make(chan error, 1)
	go func() { monitor <- watchGangsWhole(ctx, ns, stop, 8, 12) }()
	for _, name := range []string{"indexed", "nonindexed"} {
		waitJobCondition(t, ctx, ns, name, batchv1.JobComplete)
		expectGroupCounts(t, waitGroupFinished(t, ctx, ns, name), v1alpha1.ReasonSucceeded, 8, 0)
	}
	close(stop)
	if err := <-monitor; err != nil {
		t.Error(err)
	}
	expectNoFinalizers(t, ctx, ns)
}

// TestJobRunningPodDeleted: a running pod of a Job gang is deleted; the Job
// controller's replacement joins the admitted group, is released at once
// (the other two still run), and the Job completes. The deleted pod counts
// as failed, once.
func TestJobRunningPodDeleted(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	createJob(t, ctx, newGangJob(ns, "workers", jobOpts{pods: 3, runFor: "12s"}))
	waitScheduled(t, ctx, ns, "workers", 3)
	victim := jobPods(t, ctx, ns, "workers")[0]
	if err := kube.CoreV1().Pods(ns).Delete(ctx, victim.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting pod %s: %v", victim.Name, err)
	}
	waitJobCondition(t, ctx, ns, "workers", batchv1.JobComplete)
	expectGroupCounts(t, waitGroupFinished(t, ctx, ns, "workers"), v1alpha1.ReasonSucceeded, 3, 1)
	expectNoFinalizers(t, ctx, ns)
}

// TestJobBackoffReachesLimit: every pod of a Job gang fails. The Job
// controller retries after its exponential backoff (10s, then 20s), which
// is longer than the suite's --release-grace (10s). The group must take
// every retry, so the Job reaches its backoffLimit and ends Failed, and no
// pod is left gated. Before, the group finished Failed during the backoff
// and the retry stayed gated for ever.
func TestJobBackoffReachesLimit(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	ns := namespace(t, ctx)
	createJob(t, ctx, newGangJob(ns, "flaky", jobOpts{pods: 2, runFor: "1s", exitCode: 1, backoffLimit: ptr.To[int32](3)}))
	job := waitJobCondition(t, ctx, ns, "flaky", batchv1.JobFailed)
	if c := jobCondition(job, batchv1.JobFailed); c.Reason != batchv1.JobReasonBackoffLimitExceeded {
		t.Errorf("Job failed with reason %q, want %s", c.Reason, batchv1.JobReasonBackoffLimitExceeded)
	}
	pg := waitGroupFinished(t, ctx, ns, "flaky")
	expectGroupCounts(t, pg, v1alpha1.ReasonFailed, 0, job.Status.Failed)
	if job.Status.Failed < 4 {
		t.Errorf("the Job saw %d failed pods, want at least 4 (two whole attempts)", job.Status.Failed)
	}
	// The retry came after the release grace had run out since the first
	// attempt ended, the case that used to strand it.
	pods := jobPods(t, ctx, ns, "flaky")
	firstEnd, lastCreate := firstFinish(pods), lastCreation(pods)
	if gap := lastCreate.Sub(firstEnd); gap <= releaseGrace {
		t.Errorf("the last retry was created %s after the first attempt ended; the test needs more than the release grace %s", gap, releaseGrace)
	}
	expectNoGatedPods(t, ctx, ns)
	expectNoFinalizers(t, ctx, ns)
}

// TestJobPodFailurePolicy: a FailJob rule of podFailurePolicy ends the Job
// at the gang's first failure; the Job controller deletes the rest, and the
// group ends Failed with nothing left gated or holding Muster's finalizer.
func TestJobPodFailurePolicy(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	policy := &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
		Action:      batchv1.PodFailurePolicyActionFailJob,
		OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}},
	}}}
	createJob(t, ctx, newGangJob(ns, "fatal", jobOpts{pods: 2, runFor: "1s", exitCode: 42, podFailurePolicy: policy}))
	job := waitJobCondition(t, ctx, ns, "fatal", batchv1.JobFailed)
	if c := jobCondition(job, batchv1.JobFailed); c.Reason != batchv1.JobReasonPodFailurePolicy {
		t.Errorf("Job failed with reason %q, want %s", c.Reason, batchv1.JobReasonPodFailurePolicy)
	}
	pg := waitGroupFinished(t, ctx, ns, "fatal")
	expectGroupCounts(t, pg, v1alpha1.ReasonFailed, 0, 2)
	expectNoGatedPods(t, ctx, ns)
	expectNoFinalizers(t, ctx, ns)
}

// TestJobSuspendResume: a running Job gang is suspended for longer than
// the release grace; the Job controller deletes its pods, and the group
// waits for the Job rather than failing. Resumed, the Job's new pods are
// released whole and the Job completes.
func TestJobSuspendResume(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	ns := namespace(t, ctx)
	createJob(t, ctx, newGangJob(ns, "pausable", jobOpts{pods: 3, runFor: "6s"}))
	waitScheduled(t, ctx, ns, "pausable", 3)
	setSuspend(t, ctx, ns, "pausable", true)
	waitFor(t, ctx, "the suspended Job's pods to be gone", func(ctx context.Context) (bool, error) {
		return len(jobPods(t, ctx, ns, "pausable")) == 0, nil
	})
	// Wait until the group has had no active pod for longer than the grace.
	waitFor(t, ctx, "the group to wait past the release grace", func(ctx context.Context) (bool, error) {
		pg, err := getGroup(ctx, ns, "pausable")
		if err != nil {
			return false, nil
		}
		if meta.IsStatusConditionTrue(pg.Status.Conditions, v1alpha1.ConditionFinished) {
			return false, fmt.Errorf("the group finished while its Job was suspended: %+v", pg.Status.Conditions)
		}
		c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.ConditionFinished)
		return c != nil && time.Since(c.LastTransitionTime.Time) > releaseGrace+3*time.Second, nil
	})
	setSuspend(t, ctx, ns, "pausable", false)
	waitJobCondition(t, ctx, ns, "pausable", batchv1.JobComplete)
	pg := waitGroupFinished(t, ctx, ns, "pausable")
	expectGroupCounts(t, pg, v1alpha1.ReasonSucceeded, 3, 3)
	expectNoFinalizers(t, ctx, ns)
}

// TestJobDeletedCascades: deleting a Job has the garbage collector delete
// its pods, gated and running, and a PodGroup the Job owns, which it finds
// through its metadata watch on Muster's API. No pod keeps Muster's
// finalizer.
func TestJobDeletedCascades(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	// The first Job's 2 pods wait for a PodGroup of 3 that the Job owns, so
	// they stay gated; the second Job's gang of 2 runs.
	owner := createJob(t, ctx, newGangJob(ns, "owner", jobOpts{pods: 2, noGroupAnnotation: true}))
	pg := newGroupObject(ns, "owner", 3)
	pg.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "batch/v1", Kind: "Job", Name: owner.Name, UID: owner.UID, BlockOwnerDeletion: ptr.To(true),
	}}
	if _, err := muster.SchedulingV1alpha1().PodGroups(ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating PodGroup: %v", err)
	}
	createJob(t, ctx, newGangJob(ns, "running", jobOpts{pods: 2}))
	waitFor(t, ctx, "the gated and the running gang", func(ctx context.Context) (bool, error) {
		gated, running := 0, 0
		for _, p := range listPods(t, ctx, ns) {
			if isGated(&p) {
				gated++
			} else if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return gated == 2 && running == 2, nil
	})
	for _, name := range []string{"owner", "running"} {
		if err := kube.BatchV1().Jobs(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
			t.Fatalf("deleting Job %s: %v", name, err)
		}
	}
	waitFor(t, ctx, "the garbage collector to delete the owned PodGroup", func(ctx context.Context) (bool, error) {
		_, err := getGroup(ctx, ns, "owner")
		return isNotFound(err), nil
	})
	waitFor(t, ctx, "every pod of the Jobs to be gone", func(ctx context.Context) (bool, error) {
		return len(listPods(t, ctx, ns)) == 0, nil
	})
}

// releaseGrace is the suite's --release-grace (main_test.go).
const releaseGrace = 10 * time.Second

func jobCondition(job *batchv1.Job, cond batchv1.JobConditionType) batchv1.JobCondition {
	for _, c := range job.Status.Conditions {
		if c.Type == cond {
			return c
		}
	}
	return batchv1.JobCondition{}
}

func setSuspend(t *testing.T, ctx context.Context, ns, name string, suspend bool) {
	t.Helper()
	patch := fmt.Appendf(nil, `{"spec":{"suspend":%t}}`, suspend)
	if _, err := kube.BatchV1().Jobs(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("setting suspend=%t on Job %s: %v", suspend, name, err)
	}
}

// firstFinish is when the first of pods ended, from its container's
// termination time.
func firstFinish(pods []corev1.Pod) time.Time {
	var first time.Time
	for _, p := range pods {
		for _, cs := range p.Status.ContainerStatuses {
			if term := cs.State.Terminated; term != nil && (first.IsZero() || term.FinishedAt.Before(&metav1.Time{Time: first})) {
				first = term.FinishedAt.Time
			}
		}
	}
	return first
}

// lastCreation is when the newest of pods was created.
func lastCreation(pods []corev1.Pod) time.Time {
	var last time.Time
	for _, p := range pods {
		if p.CreationTimestamp.After(last) {
			last = p.CreationTimestamp.Time
		}
	}
	return last
}

// watchGangsWhole lists the pods of ns every poll interval until stop is
// closed, and fails if a group has a pod released (ungated) before
// minCount of its pods have been seen to exist, or if more than room pods
// are released and running at once (pods released where they cannot all
// run). A release is a set of parallel patches, so a list may catch a
// gang with some pods already released and the rest about to be: that is
// whole. A group once seen whole may lose pods later (deleted, or ended
// and removed by their controller) without failing the watch, until it
// has none left.
func watchGangsWhole(ctx context.Context, ns string, stop <-chan struct{}, minCount, room int) error {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	whole := map[string]bool{}
	for {
		select {
		case <-stop:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		exist, released, running := map[string]int{}, map[string]int{}, 0
		for _, p := range list.Items {
			ended := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
			group, gang := p.Labels[scheduling.PodGroupLabel]
			if !gang { // not Muster's (a RayJob's submitter): it only takes room.
				if !ended && p.Spec.NodeName != "" {
					running++
				}
				continue
			}
			exist[group]++
			if isGated(&p) {
				continue
			}
			released[group]++
			if !ended {
				running++
			}
		}
		for group := range whole {
			if exist[group] == 0 {
				delete(whole, group) // all gone: a group of that name starts anew.
			}
		}
		for group, n := range exist {
			if n >= minCount {
				whole[group] = true
			}
		}
		for group, n := range released {
			if !whole[group] {
				return fmt.Errorf("gang %s released %d pods while only %d of its %d existed", group, n, exist[group], minCount)
			}
		}
		if running > room {
			return fmt.Errorf("%d pods released and not ended at once, on nodes that hold %d: %v", running, room, released)
		}
	}
}
