package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/test/cluster"
)

// jobSetWorkers is the parallelism of the workers Job.
const jobSetWorkers = 4

// newJobSet is a JobSet of two replicatedJobs, "leader" (one pod) and
// "workers" (jobSetWorkers pods), whose pods form one Muster gang named
// after the JobSet, with the two roles announced by the pods themselves
// (scheduling.muster.dev/roles), as a framework that knows nothing of
// PodGroups would. runFor empty makes the pods run until deleted.
func newJobSet(ns, name, runFor string) *unstructured.Unstructured {
	job := func(role string, pods int) map[string]any {
		annotations := map[string]any{
			scheduling.RolesAnnotation:     "2",
			scheduling.RoleCountAnnotation: fmt.Sprint(pods),
		}
		if runFor != "" {
			annotations[cluster.RunForAnnotation] = runFor
		}
		return map[string]any{
			"name":     role,
			"replicas": int64(1),
			"template": map[string]any{"spec": map[string]any{
				"parallelism":  int64(pods),
				"completions":  int64(pods),
				"backoffLimit": int64(0),
				"template": map[string]any{
					"metadata": map[string]any{
						"labels":      map[string]any{scheduling.PodGroupLabel: name, scheduling.RoleLabel: role},
						"annotations": annotations,
					},
					"spec": jobSetPodSpec(),
				},
			}},
		}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": cluster.JobSetResource.GroupVersion().String(),
		"kind":       "JobSet",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"replicatedJobs": []any{job("leader", 1), job("workers", jobSetWorkers)},
		},
	}}
}

// jobSets is the JobSet API of ns.
func jobSets(t *testing.T, ns string) dynamic.ResourceInterface {
	t.Helper()
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatalf("dynamic client: %v", err)
	}
	return dyn.Resource(cluster.JobSetResource).Namespace(ns)
}

// createJobSet creates a JobSet and checks that JobSet's own defaulting
// webhook ran on it, which proves the harness serves and trusts it.
func createJobSet(t *testing.T, ctx context.Context, js *unstructured.Unstructured) {
	t.Helper()
	created, err := jobSets(t, js.GetNamespace()).Create(ctx, js, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating JobSet %s: %v", js.GetName(), err)
	}
	operator, _, _ := unstructured.NestedString(created.Object, "spec", "successPolicy", "operator")
	jobs, _, _ := unstructured.NestedSlice(created.Object, "spec", "replicatedJobs")
	mode := ""
	if len(jobs) > 0 {
		mode, _, _ = unstructured.NestedString(jobs[0].(map[string]any), "template", "spec", "completionMode")
	}
	if operator != "All" || mode != "Indexed" {
		t.Fatalf("JobSet as created: successPolicy.operator %q, completionMode %q; want All and Indexed from JobSet's defaulting webhook", operator, mode)
	}
}

// gangRecord is what a watch of a namespace's pods saw, in the order the
// API server wrote it: when each pod was created and when it first had no
// admission gate, as positions in the event stream.
type gangRecord struct {
	mu       sync.Mutex
	seq      int
	created  map[string]int
	ungated  map[string]int
	bornOpen []string // pods created without the admission gate
}

// watchGang records pod creations and gate removals in ns until ctx ends.
// The events of one watch come in resourceVersion order, so comparing
// their positions is exact where timestamps (whole seconds) are not.
func watchGang(t *testing.T, ctx context.Context, ns string) *gangRecord {
	t.Helper()
	list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing pods: %v", err)
	}
	if len(list.Items) > 0 {
		t.Fatalf("namespace %s already has %d pods", ns, len(list.Items))
	}
	lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		return kube.CoreV1().Pods(ns).Watch(ctx, opts)
	}}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, lw)
	if err != nil {
		t.Fatalf("watching pods: %v", err)
	}
	r := &gangRecord{created: map[string]int{}, ungated: map[string]int{}}
	go func() {
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					return
				}
				if p, ok := ev.Object.(*corev1.Pod); ok {
					r.observe(ev.Type, p)
				}
			}
		}
	}()
	return r
}

func (r *gangRecord) observe(typ watch.EventType, p *corev1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	if _, seen := r.created[p.Name]; !seen && typ == watch.Added {
		r.created[p.Name] = r.seq
		if !isGated(p) {
			r.bornOpen = append(r.bornOpen, p.Name)
		}
	}
	if _, seen := r.ungated[p.Name]; !seen && !isGated(p) {
		r.ungated[p.Name] = r.seq
	}
}

// releasedTogether checks that all n pods were created gated and that
// none lost its gate before the last of them existed.
func (r *gangRecord) releasedTogether(t *testing.T, n int) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.bornOpen) > 0 {
		t.Errorf("pods %v were created without Muster's gate", r.bornOpen)
	}
	if len(r.created) != n || len(r.ungated) != n {
		t.Fatalf("watch saw %d pods created and %d released, want %d of each", len(r.created), len(r.ungated), n)
	}
	lastCreated, lastName := 0, ""
	for name, seq := range r.created {
		if seq > lastCreated {
			lastCreated, lastName = seq, name
		}
	}
	t.Logf("watch events: created %v, released %v", r.created, r.ungated)
	for name, seq := range r.ungated {
		if seq < lastCreated {
			t.Errorf("pod %s was released (event %d) before pod %s of its gang existed (event %d)", name, seq, lastName, lastCreated)
		}
	}
}

// limitPods sets a ResourceQuota of n pods in ns, and waits until the
// quota controller has taken the limit into its status, which quota
// admission enforces.
func limitPods(t *testing.T, ctx context.Context, ns string, n int) {
	t.Helper()
	limit := *resource.NewQuantity(int64(n), resource.DecimalSI)
	quotas := kube.CoreV1().ResourceQuotas(ns)
	q := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "pods", Namespace: ns},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: limit}},
	}
	if _, err := quotas.Create(ctx, q, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		patch := fmt.Sprintf(`{"spec":{"hard":{"pods":"%d"}}}`, n)
		if _, err := quotas.Patch(ctx, q.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatalf("raising the pod quota to %d: %v", n, err)
		}
	} else if err != nil {
		t.Fatalf("creating a pod quota: %v", err)
	}
	waitFor(t, ctx, fmt.Sprintf("the quota controller to enforce %d pods", n), func(ctx context.Context) (bool, error) {
		got, err := quotas.Get(ctx, q.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		hard, ok := got.Status.Hard[corev1.ResourcePods]
		return ok && hard.Cmp(limit) == 0, nil
	})
}

// jobSetCondition returns the status of a JobSet condition, or "".
func jobSetCondition(js *unstructured.Unstructured, typ string) string {
	conditions, _, _ := unstructured.NestedSlice(js.Object, "status", "conditions")
	for _, c := range conditions {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			status, _ := m["status"].(string)
			return status
		}
	}
	return ""
}

// expectRoles compares status.roles, in spec order, with want.
func expectRoles(t *testing.T, pg *v1alpha1.PodGroup, want []v1alpha1.PodGroupRoleStatus) {
	t.Helper()
	if len(pg.Status.Roles) != len(want) {
		t.Fatalf("status.roles = %+v, want %+v", pg.Status.Roles, want)
	}
	for i, w := range want {
		g := pg.Status.Roles[i]
		if g.Name != w.Name || g.Active != w.Active || g.Succeeded != w.Succeeded || g.Failed != w.Failed || g.UncountedTerminatedPods != nil {
			t.Errorf("status.roles[%d] = %+v, want %+v", i, g, w)
		}
	}
}

// TestJobSetGang: a JobSet (sigs.k8s.io/jobset, run by the harness with its
// webhooks) whose leader Job and workers Job carry Muster's label and roles
// annotations forms one gang with two roles. A pod quota holds the gang at
// 3 of its pods, all gated; once the quota lets the Job controller create
// the rest, none is released before the last exists, then all are. The
// group counts both roles, the JobSet completes, and the group ends
// Succeeded with exact counts. Deleting a running JobSet takes its Jobs,
// its pods (none kept by Muster's finalizer) and its group away.
func TestJobSetGang(t *testing.T) {
	const gang = 1 + jobSetWorkers

	t.Run("completes", func(t *testing.T) {
		ctx := testContext(t, 3*time.Minute)
		ns := namespace(t, ctx)
		// The Job controller creates all pods within milliseconds; a quota
		// of 3 pods holds the gang short for as long as the test needs.
		limitPods(t, ctx, ns, 3)
		record := watchGang(t, ctx, ns)
		createJobSet(t, ctx, newJobSet(ns, "train", "5s"))
		waitFor(t, ctx, "the quota to refuse the Job controller a pod", func(ctx context.Context) (bool, error) {
			events, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=FailedCreate"})
			return err == nil && len(events.Items) > 0, nil
		})
		short := listPods(t, ctx, ns)
		if len(short) != 3 {
			t.Fatalf("%d pods exist under a quota of 3", len(short))
		}
		for _, p := range short {
			if !isGated(&p) || p.Spec.NodeName != "" {
				t.Fatalf("pod %s is not held while the gang has 3 of %d pods: gated=%v node=%q", p.Name, gang, isGated(&p), p.Spec.NodeName)
			}
		}
		// The Job controller retries with its backoff (1s, 2s, 4s...).
		limitPods(t, ctx, ns, gang)

		waitFor(t, ctx, "all pods of the gang to be bound", func(ctx context.Context) (bool, error) {
			pods := listPods(t, ctx, ns)
			for _, p := range pods {
				if isGated(&p) || p.Spec.NodeName == "" {
					return false, nil
				}
			}
			return len(pods) == gang, nil
		})
		record.releasedTogether(t, gang)

		pg, err := getGroup(ctx, ns, "train")
		if err != nil {
			t.Fatalf("the group created from the pods: %v", err)
		}
		if g := pg.Spec.SchedulingPolicy.Gang; g == nil || g.MinCount != gang || len(pg.Spec.Roles) != 2 ||
			pg.Spec.Roles[0] != (v1alpha1.PodGroupRole{Name: "leader", Count: 1}) ||
			pg.Spec.Roles[1] != (v1alpha1.PodGroupRole{Name: "workers", Count: jobSetWorkers}) {
			t.Fatalf("group spec = %+v, want roles leader 1 and workers %d, a gang of %d", pg.Spec, jobSetWorkers, gang)
		}
		waitFor(t, ctx, "both roles to count their active pods", func(ctx context.Context) (bool, error) {
			pg, err := getGroup(ctx, ns, "train")
			return err == nil && len(pg.Status.Roles) == 2 && pg.Status.Roles[0].Active == 1 && pg.Status.Roles[1].Active == jobSetWorkers, nil
		})

		waitFor(t, ctx, "the JobSet to complete", func(ctx context.Context) (bool, error) {
			js, err := jobSets(t, ns).Get(ctx, "train", metav1.GetOptions{})
			return err == nil && jobSetCondition(js, "Completed") == "True", nil
		})
		pg = waitGroupFinished(t, ctx, ns, "train")
		if c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.ConditionFinished); c.Reason != v1alpha1.ReasonSucceeded ||
			pg.Status.Phase != v1alpha1.PodGroupSucceeded || pg.Status.Succeeded != gang || pg.Status.Failed != 0 ||
			pg.Status.Active != 0 || pg.Status.UncountedTerminatedPods != nil {
			t.Errorf("group status: Finished %s, phase %s, succeeded %d, failed %d, active %d, uncounted %v; want Succeeded, Succeeded, %d, 0, 0, none",
				c.Reason, pg.Status.Phase, pg.Status.Succeeded, pg.Status.Failed, pg.Status.Active, pg.Status.UncountedTerminatedPods, gang)
		}
		expectRoles(t, pg, []v1alpha1.PodGroupRoleStatus{{Name: "leader", Succeeded: 1}, {Name: "workers", Succeeded: jobSetWorkers}})
		expectNoFinalizers(t, ctx, ns)
	})

	t.Run("deleted", func(t *testing.T) {
		ctx := testContext(t, 3*time.Minute)
		ns := namespace(t, ctx)
		createJobSet(t, ctx, newJobSet(ns, "doomed", ""))
		waitFor(t, ctx, "all pods of the gang to run", func(ctx context.Context) (bool, error) {
			pods := listPods(t, ctx, ns)
			for _, p := range pods {
				if p.Status.Phase != corev1.PodRunning {
					return false, nil
				}
			}
			return len(pods) == gang, nil
		})
		waitFor(t, ctx, "both roles to count their active pods", func(ctx context.Context) (bool, error) {
			pg, err := getGroup(ctx, ns, "doomed")
			return err == nil && len(pg.Status.Roles) == 2 && pg.Status.Roles[0].Active == 1 && pg.Status.Roles[1].Active == jobSetWorkers, nil
		})

		// kubectl's default: the garbage collector deletes the Jobs, then
		// their pods, and the group, which names the Job of the pod that
		// created it as its owner. Nothing of the JobSet may stay behind:
		// no pod kept Terminating by Muster's finalizer, no orphan group.
		background := metav1.DeletePropagationBackground
		if err := jobSets(t, ns).Delete(ctx, "doomed", metav1.DeleteOptions{PropagationPolicy: &background}); err != nil {
			t.Fatalf("deleting the JobSet: %v", err)
		}
		waitFor(t, ctx, "the JobSet's Jobs, pods and PodGroup to be gone", func(ctx context.Context) (bool, error) {
			jobs, err := kube.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
			if err != nil || len(jobs.Items) > 0 || len(listPods(t, ctx, ns)) > 0 {
				return false, nil
			}
			_, err = getGroup(ctx, ns, "doomed")
			return isNotFound(err), nil
		})
	})
}

// jobSetPodSpec is the pod spec of the JobSets' pods: one pause container
// of 100m CPU that stops a second after it is told to.
func jobSetPodSpec() map[string]any {
	return map[string]any{
		"restartPolicy":                 "Never",
		"terminationGracePeriodSeconds": int64(1),
		"containers": []any{map[string]any{
			"name": "main", "image": "registry.k8s.io/pause:3.10",
			"resources": map[string]any{"requests": map[string]any{"cpu": "100m"}},
		}},
	}
}
