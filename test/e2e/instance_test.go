package e2e

import (
	"context"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/test/cluster"
)

// jobSetRestartAttemptLabel is the label JobSet puts on the pods of each
// failurePolicy restart attempt, "0" first.
const jobSetRestartAttemptLabel = "jobset.sigs.k8s.io/restart-attempt"

// newInstanceJob returns a Job named jobName whose pod template carries
// the group label with the value templateLabel and the group-by annotation
// (scheduling.GroupByInstance), and no min-count annotation: the webhook
// names each pod's group after the Job, and Muster takes the gang's size
// from the Job's parallelism. An empty jobName leaves the Job to be named
// by the caller, through generateName.
func newInstanceJob(ns, jobName, templateLabel string, o jobOpts) *batchv1.Job {
	o.groupByInstance = true
	job := newGangJob(ns, jobName, o)
	job.Spec.Template.Labels[scheduling.PodGroupLabel] = templateLabel
	return job
}

// newInstanceJobSet is a JobSet with one replicatedJob "workers" of
// replicas child Jobs, each of pods pods (parallelism and completions,
// backoffLimit 0), whose pod template carries an empty group label and the
// group-by annotation, and no min-count annotation: each restart attempt
// is a gang of its own, named "<name>-<attempt>", of replicas x pods. Its
// failurePolicy allows one restart.
func newInstanceJobSet(ns, name string, replicas, pods int64, runFor string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": cluster.JobSetResource.GroupVersion().String(),
		"kind":       "JobSet",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"failurePolicy": map[string]any{"maxRestarts": int64(1)},
			"replicatedJobs": []any{map[string]any{
				"name":     "workers",
				"replicas": replicas,
				"template": map[string]any{"spec": map[string]any{
					"parallelism":  pods,
					"completions":  pods,
					"backoffLimit": int64(0),
					"template": map[string]any{
						"metadata": map[string]any{
							"labels": map[string]any{scheduling.PodGroupLabel: ""},
							"annotations": map[string]any{
								scheduling.GroupByAnnotation: scheduling.GroupByInstance,
								cluster.RunForAnnotation:     runFor,
							},
						},
						"spec": jobSetPodSpec(),
					},
				}},
			}},
		},
	}}
}

// watchWhole runs watchGangsWhole on ns in the background until the
// returned function is called, which reports what it saw.
func watchWhole(t *testing.T, ctx context.Context, ns string, minCount, room int) func() {
	stop := make(chan struct{})
	monitor := make(chan error, 1)
	go func() { monitor <- watchGangsWhole(ctx, ns, stop, minCount, room) }()
	return func() {
		t.Helper()
		close(stop)
		if err := <-monitor; err != nil {
			t.Error(err)
		}
	}
}

// expectSucceededGang waits for the group name to finish and asserts that
// it is a gang of minCount whose minCount pods all succeeded.
func expectSucceededGang(t *testing.T, ctx context.Context, ns, name string, minCount int32) *v1alpha1.PodGroup {
	t.Helper()
	pg := waitGroupFinished(t, ctx, ns, name)
	if g := pg.Spec.SchedulingPolicy.Gang; g == nil || g.MinCount != minCount {
		t.Errorf("group %s gang = %+v, want minCount %d", name, g, minCount)
	}
	expectGroupCounts(t, pg, v1alpha1.ReasonSucceeded, minCount, 0)
	return pg
}

// ownerOfKind returns the group's owner reference of kind, or nil.
func ownerOfKind(pg *v1alpha1.PodGroup, kind string) *metav1.OwnerReference {
	for i, ref := range pg.OwnerReferences {
		if ref.Kind == kind {
			return &pg.OwnerReferences[i]
		}
	}
	return nil
}

// expectOwner asserts that the group names the object of kind, name and
// uid among its owners.
func expectOwner(t *testing.T, pg *v1alpha1.PodGroup, kind, name string, uid types.UID) {
	t.Helper()
	if ref := ownerOfKind(pg, kind); ref == nil || ref.Name != name || ref.UID != uid {
		t.Errorf("group %s ownerReferences = %+v, want the %s %s (uid %s)", pg.Name, pg.OwnerReferences, kind, name, uid)
	}
}

// TestJobTemplateSubmittedAgain: one pod template with the group-by
// annotation and no min-count annotation, submitted as Job "trainer-job",
// as Job "trainer-job-2", and, once "trainer-job" is deleted, as
// "trainer-job" again. Each Job is a gang of its own named after it, of
// minCount 4 from the Job's parallelism, owned by the Job, and ends
// Succeeded 4/0. Deleting the first Job has the garbage collector delete
// its finished group, so the resubmitted Job gets a fresh group (a new
// UID) and its pods run whole rather than being trapped by the old one. No
// gang is ever partly released.
func TestJobTemplateSubmittedAgain(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	ns := namespace(t, ctx)
	opts := jobOpts{pods: 4, runFor: "3s"}
	stopWatch := watchWhole(t, ctx, ns, 4, 4)

	first := createJob(t, ctx, newInstanceJob(ns, "trainer-job", "trainer-job", opts))
	waitJobCondition(t, ctx, ns, "trainer-job", batchv1.JobComplete)
	firstGroup := expectSucceededGang(t, ctx, ns, "trainer-job", 4)
	expectOwner(t, firstGroup, "Job", first.Name, first.UID)

	second := createJob(t, ctx, newInstanceJob(ns, "trainer-job-2", "trainer-job", opts))
	waitJobCondition(t, ctx, ns, "trainer-job-2", batchv1.JobComplete)
	expectOwner(t, expectSucceededGang(t, ctx, ns, "trainer-job-2", 4), "Job", second.Name, second.UID)

	if err := kube.BatchV1().Jobs(ns).Delete(ctx, "trainer-job", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
		t.Fatalf("deleting Job trainer-job: %v", err)
	}
	waitFor(t, ctx, "the garbage collector to delete the first Job's group", func(ctx context.Context) (bool, error) {
		_, err := getGroup(ctx, ns, "trainer-job")
		return isNotFound(err), nil
	})
	// Only the new Job's pods carry the group label then, so the watch
	// counts exactly them.
	waitFor(t, ctx, "the first Job's pods to be gone", func(ctx context.Context) (bool, error) {
		return len(jobPods(t, ctx, ns, "trainer-job")) == 0, nil
	})

	again := createJob(t, ctx, newInstanceJob(ns, "trainer-job", "trainer-job", opts))
	waitJobCondition(t, ctx, ns, "trainer-job", batchv1.JobComplete)
	pg := expectSucceededGang(t, ctx, ns, "trainer-job", 4)
	if pg.UID == firstGroup.UID {
		t.Errorf("the resubmitted Job's group has the first group's UID %s", pg.UID)
	}
	expectOwner(t, pg, "Job", again.Name, again.UID)

	stopWatch()
	expectNoFinalizers(t, ctx, ns)
	expectNoGatedPods(t, ctx, ns)
}

// TestJobResubmittedOverOrphanedGroup: a Job is deleted with its
// dependents orphaned, so its finished group and its pods stay, no longer
// owned by anyone, and a Job of the same name and template is created
// again. The new Job's pods must not be trapped behind the old finished
// group: the controller deletes it (event PreviousInstance) and the new
// pods form a group of their own, with a new UID, that runs whole and
// counts exactly the new Job's 4 pods, not the old ones still labelled
// with the same name.
func TestJobResubmittedOverOrphanedGroup(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	opts := jobOpts{pods: 4, runFor: "3s"}
	createJob(t, ctx, newInstanceJob(ns, "again", "again", opts))
	waitJobCondition(t, ctx, ns, "again", batchv1.JobComplete)
	old := expectSucceededGang(t, ctx, ns, "again", 4)

	// What --cascade=orphan does to the group, done first so that the
	// test does not wait on when the garbage collector starts watching
	// PodGroups (it rediscovers aggregated APIs every 30 seconds): the
	// group is owned by no one, and no collector deletes it.
	if _, err := muster.SchedulingV1alpha1().PodGroups(ns).Patch(ctx, "again", types.MergePatchType,
		[]byte(`{"metadata":{"ownerReferences":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("orphaning group again: %v", err)
	}
	if err := kube.BatchV1().Jobs(ns).Delete(ctx, "again", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)}); err != nil {
		t.Fatalf("deleting Job again: %v", err)
	}
	waitFor(t, ctx, "the old Job to be gone", func(ctx context.Context) (bool, error) {
		_, err := kube.BatchV1().Jobs(ns).Get(ctx, "again", metav1.GetOptions{})
		return isNotFound(err), nil
	})

	again := createJob(t, ctx, newInstanceJob(ns, "again", "again", opts))
	waitEvents(t, ctx, ns, "again", scheduling.EventPreviousInstance)
	waitJobCondition(t, ctx, ns, "again", batchv1.JobComplete)
	pg := expectSucceededGang(t, ctx, ns, "again", 4)
	if pg.UID == old.UID {
		t.Errorf("the new Job's group is the old one (UID %s); want a group of its own", pg.UID)
	}
	expectOwner(t, pg, "Job", again.Name, again.UID)
	expectNoGatedPods(t, ctx, ns)
	expectNoFinalizers(t, ctx, ns)
}

// TestJobTemplateTwiceAtOnce: two Jobs, "a" and "b", of one pod template
// (group label "trainer-job", group-by annotation) created back to back
// form two gangs of minCount 4, one per Job, not one group of 8 under the
// template's label. Both complete, each group counts 4/0, and neither is
// ever partly released.
func TestJobTemplateTwiceAtOnce(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	stopWatch := watchWhole(t, ctx, ns, 4, 8)
	opts := jobOpts{pods: 4, runFor: "5s"}
	createJob(t, ctx, newInstanceJob(ns, "a", "trainer-job", opts))
	createJob(t, ctx, newInstanceJob(ns, "b", "trainer-job", opts))
	for _, name := range []string{"a", "b"} {
		waitJobCondition(t, ctx, ns, name, batchv1.JobComplete)
		expectSucceededGang(t, ctx, ns, name, 4)
	}
	stopWatch()
	if _, err := getGroup(ctx, ns, "trainer-job"); !isNotFound(err) {
		t.Errorf("a group named after the template's label exists (err %v); want one group per Job only", err)
	}
	expectNoFinalizers(t, ctx, ns)
}

// TestJobGenerateName: a Job with only metadata.generateName, its pod
// template with the group-by annotation, forms a gang named after the
// name the API server generated for it: that is the namespace's only
// group. The Job completes and the group counts 4/0.
func TestJobGenerateName(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	stopWatch := watchWhole(t, ctx, ns, 4, 4)
	job := newInstanceJob(ns, "", "trainer-job", jobOpts{pods: 4, runFor: "3s"})
	job.GenerateName = "gen-"
	created := createJob(t, ctx, job)
	waitJobCondition(t, ctx, ns, created.Name, batchv1.JobComplete)
	expectSucceededGang(t, ctx, ns, created.Name, 4)
	stopWatch()
	groups, err := muster.SchedulingV1alpha1().PodGroups(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing groups: %v", err)
	}
	if len(groups.Items) != 1 || groups.Items[0].Name != created.Name {
		var names []string
		for _, g := range groups.Items {
			names = append(names, g.Name)
		}
		t.Errorf("groups %v, want only %s, the Job's generated name", names, created.Name)
	}
	expectNoFinalizers(t, ctx, ns)
}

// TestCronJobEachScheduleWhole: a CronJob that runs every minute
// (concurrencyPolicy Forbid) a Job whose pod template carries the group
// label "nightly" and the group-by annotation. Each of its first 3 Jobs is
// a gang of its own, named after the Job, of minCount 4 from the Job's
// parallelism, owned by the Job and not by the CronJob (the walk to the
// top owner stops below a CronJob, so that the group goes with its Job),
// and ends Succeeded 4/0. No gang is ever partly released.
func TestCronJobEachScheduleWhole(t *testing.T) {
	// The CronJob controller starts a Job on each minute boundary: 3 runs
	// take up to 3 minutes and a half.
	ctx := testContext(t, 5*time.Minute)
	ns := namespace(t, ctx)
	stopWatch := watchWhole(t, ctx, ns, 4, 4)
	template := newInstanceJob(ns, "", "nightly", jobOpts{pods: 4, runFor: "10s"})
	cj, err := kube.BatchV1().CronJobs(ns).Create(ctx, &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: ns},
		Spec: batchv1.CronJobSpec{
			Schedule:                   "* * * * *",
			ConcurrencyPolicy:          batchv1.ForbidConcurrent,
			SuccessfulJobsHistoryLimit: ptr.To[int32](3),
			JobTemplate:                batchv1.JobTemplateSpec{Spec: template.Spec},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating CronJob: %v", err)
	}

	var done []batchv1.Job
	waitFor(t, ctx, "3 Jobs of the CronJob to complete", func(ctx context.Context) (bool, error) {
		jobs, err := kube.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		done = done[:0]
		for _, j := range jobs.Items {
			if metav1.IsControlledBy(&j, cj) && jobCondition(&j, batchv1.JobComplete).Status == corev1.ConditionTrue {
				done = append(done, j)
			}
		}
		return len(done) >= 3, nil
	})
	// Orphaned, the Jobs stay: no 4th run starts, and the CronJob's
	// history limit deletes none of them (and its group) during the checks.
	if err := kube.BatchV1().CronJobs(ns).Delete(ctx, cj.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)}); err != nil {
		t.Fatalf("deleting the CronJob: %v", err)
	}

	for _, j := range done {
		pg := expectSucceededGang(t, ctx, ns, j.Name, 4)
		expectOwner(t, pg, "Job", j.Name, j.UID)
		if ref := ownerOfKind(pg, "CronJob"); ref != nil {
			t.Errorf("group %s is owned by the CronJob (%+v); want its Job only", pg.Name, *ref)
		}
	}
	stopWatch()
	expectNoFinalizers(t, ctx, ns)
}

// TestJobSetReplicasAndRestart: a JobSet of one replicatedJob of 2
// replicas of 2 pods, its pod template with the group-by annotation and no
// min-count annotation, forms the gang "<jobset>-0" of minCount 4 (replicas
// x parallelism), owned by the JobSet, and its 4 pods are scheduled
// together. A running pod is deleted: its child Job (backoffLimit 0) fails
// and the JobSet's failurePolicy restarts every child Job. The restart is
// a gang of its own, "<jobset>-1", of minCount 4, whose pods are released
// together; the JobSet completes and that group ends Succeeded 4/0. No
// pod is left gated or holding Muster's finalizer.
func TestJobSetReplicasAndRestart(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	ns := namespace(t, ctx)
	// The restart's pods may be released while the first attempt's still
	// terminate: 8 at most at once.
	stopWatch := watchWhole(t, ctx, ns, 4, 8)
	createJobSet(t, ctx, newInstanceJobSet(ns, "train", 2, 2, "20s"))
	js, err := jobSets(t, ns).Get(ctx, "train", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting the JobSet: %v", err)
	}

	waitScheduled(t, ctx, ns, "train-0", 4)
	pg, err := getGroup(ctx, ns, "train-0")
	if err != nil {
		t.Fatalf("the first attempt's group: %v", err)
	}
	if g := pg.Spec.SchedulingPolicy.Gang; g == nil || g.MinCount != 4 {
		t.Errorf("group train-0 gang = %+v, want minCount 4 (2 replicas x 2 pods)", g)
	}
	expectOwner(t, pg, "JobSet", js.GetName(), js.GetUID())

	attempt0 := metav1.ListOptions{LabelSelector: jobSetRestartAttemptLabel + "=0"}
	var victim string
	waitFor(t, ctx, "a pod of the first attempt to run", func(ctx context.Context) (bool, error) {
		pods, err := kube.CoreV1().Pods(ns).List(ctx, attempt0)
		if err != nil {
			return false, nil
		}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				victim = p.Name
				return true, nil
			}
		}
		return false, nil
	})
	if err := kube.CoreV1().Pods(ns).Delete(ctx, victim, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting pod %s: %v", victim, err)
	}

	waitScheduled(t, ctx, ns, "train-1", 4)
	pg, err = getGroup(ctx, ns, "train-1")
	if err != nil {
		t.Fatalf("the restart's group: %v", err)
	}
	if g := pg.Spec.SchedulingPolicy.Gang; g == nil || g.MinCount != 4 {
		t.Errorf("group train-1 gang = %+v, want minCount 4 (2 replicas x 2 pods)", g)
	}
	waitFor(t, ctx, "the JobSet to complete", func(ctx context.Context) (bool, error) {
		js, err := jobSets(t, ns).Get(ctx, "train", metav1.GetOptions{})
		return err == nil && jobSetCondition(js, "Completed") == "True", nil
	})
	expectSucceededGang(t, ctx, ns, "train-1", 4)
	stopWatch()
	expectNoGatedPods(t, ctx, ns)
	expectNoFinalizers(t, ctx, ns)
}
