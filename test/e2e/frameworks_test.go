package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/test/cluster"
)

// startFramework runs framework f's real controller in the suite's
// cluster, once per cluster (the tests of a shard share it).
func startFramework(t *testing.T, ctx context.Context, f cluster.Framework) {
	t.Helper()
	if err := env.StartFramework(ctx, f); err != nil {
		t.Fatalf("starting the %s controller: %v", f, err)
	}
}

// frameworkResource is a dynamic client of gvr in namespace ns.
func frameworkResource(t *testing.T, gvr schema.GroupVersionResource, ns string) dynamic.ResourceInterface {
	t.Helper()
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatalf("dynamic client: %v", err)
	}
	return dyn.Resource(gvr).Namespace(ns)
}

// instanceTemplate is a pod template whose pods form one gang per
// instance of their workload: an empty group label, the group-by
// annotation "instance" and no min-count, so that Muster names the group
// and takes its size from the workload. restartPolicy is the pod's.
func instanceTemplate(restartPolicy string, annotations map[string]any) map[string]any {
	ann := map[string]any{scheduling.GroupByAnnotation: scheduling.GroupByInstance}
	for k, v := range annotations {
		ann[k] = v
	}
	return map[string]any{
		"metadata": map[string]any{
			"labels":      map[string]any{scheduling.PodGroupLabel: ""},
			"annotations": ann,
		},
		"spec": map[string]any{
			"restartPolicy":                 restartPolicy,
			"terminationGracePeriodSeconds": int64(1),
			"containers": []any{map[string]any{
				"name": "main", "image": "registry.k8s.io/pause:3.10",
				"resources": map[string]any{"requests": map[string]any{"cpu": "100m"}},
			}},
		},
	}
}

// create creates obj through client and returns it as stored.
func create(t *testing.T, ctx context.Context, client dynamic.ResourceInterface, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	created, err := client.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating %s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
	return created
}

// createOnceRuntimeSeen creates a TrainJob once Trainer's validating
// webhook, which looks its runtime up in its informer's cache, has seen
// the runtime created just before: until then it refuses the TrainJob
// ("must be created before the TrainJob is created"). Any other error
// fails the test at once.
func createOnceRuntimeSeen(t *testing.T, ctx context.Context, client dynamic.ResourceInterface, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	var created *unstructured.Unstructured
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		created, err = client.Create(ctx, obj, metav1.CreateOptions{})
		if err != nil && strings.Contains(err.Error(), "must be created before the TrainJob is created") {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("creating %s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
	return created
}

// expectGang waits until group name is Scheduled with n pods bound, and
// asserts that its gang's minCount is minCount, that the workload sized it
// (the sized-by annotation names sizedBy) and that it is owned by owner.
func expectGang(t *testing.T, ctx context.Context, ns, name string, n, minCount int32, sizedBy string, owner *unstructured.Unstructured) *v1alpha1.PodGroup {
	t.Helper()
	waitScheduled(t, ctx, ns, name, n)
	pg, err := getGroup(ctx, ns, name)
	if err != nil {
		t.Fatalf("group %s: %v", name, err)
	}
	if g := pg.Spec.SchedulingPolicy.Gang; g == nil || g.MinCount != minCount {
		t.Errorf("group %s gang = %+v, want minCount %d", name, g, minCount)
	}
	if got := pg.Annotations[scheduling.SizedByAnnotation]; got != sizedBy {
		t.Errorf("group %s annotation %s = %q, want %q", name, scheduling.SizedByAnnotation, got, sizedBy)
	}
	expectOwner(t, pg, owner.GetKind(), owner.GetName(), owner.GetUID())
	return pg
}

// expectGroupGone waits for the garbage collector to delete group name
// once its owner is gone. The collector rediscovers aggregated APIs every
// 30 s, so a group may outlive its owner by that much.
func expectGroupGone(t *testing.T, ctx context.Context, ns, name string) {
	t.Helper()
	waitFor(t, ctx, "group "+name+" to be garbage-collected", func(ctx context.Context) (bool, error) {
		_, err := getGroup(ctx, ns, name)
		return apierrors.IsNotFound(err), nil
	})
}

// liveGroupPods lists the pods of group in ns that are not being deleted.
func liveGroupPods(t *testing.T, ctx context.Context, ns, group string) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	for _, p := range groupPods(t, ctx, ns, group) {
		if p.DeletionTimestamp == nil {
			pods = append(pods, p)
		}
	}
	return pods
}

// expectNewPodsReleasedWhole waits until minCount pods of group that are
// not in old exist and are all bound, and fails if any of them was
// released while fewer than minCount of them existed: a restarted gang
// runs whole again.
func expectNewPodsReleasedWhole(t *testing.T, ctx context.Context, ns, group string, minCount int, old map[types.UID]bool) {
	t.Helper()
	waitFor(t, ctx, fmt.Sprintf("%d new pods of %s to be bound", minCount, group), func(ctx context.Context) (bool, error) {
		exist, released, bound := 0, 0, 0
		for _, p := range liveGroupPods(t, ctx, ns, group) {
			if old[p.UID] {
				continue
			}
			exist++
			if !isGated(&p) {
				released++
			}
			if p.Spec.NodeName != "" {
				bound++
			}
		}
		if released > 0 && exist < minCount {
			t.Fatalf("group %s released %d new pods while only %d of its %d existed", group, released, exist, minCount)
		}
		return bound >= minCount, nil
	})
}

// newLeaderWorkerSet is a LeaderWorkerSet of replicas groups of size pods
// (a leader and size-1 workers), whose leader and worker templates form
// one gang per group. A pod that fails or is deleted has LWS recreate its
// whole group.
func newLeaderWorkerSet(ns, name string, replicas, size int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": cluster.LeaderWorkerSetResource.GroupVersion().String(),
		"kind":       "LeaderWorkerSet",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"replicas": replicas,
			"leaderWorkerTemplate": map[string]any{
				"size":           size,
				"restartPolicy":  "RecreateGroupOnPodRestart",
				"leaderTemplate": instanceTemplate("Always", nil),
				"workerTemplate": instanceTemplate("Always", nil),
			},
		},
	}}
}

// TestLeaderWorkerSetGroupsWhole: a LeaderWorkerSet of 2 replicas of size
// 4, run by the real LWS controller and its pod webhook. Each group
// (leader and 3 workers) is a gang of its own, named "<lws>-<group
// index>", of minCount 4 from the LWS's size, owned by the LWS. Deleting
// group 0's leader has LWS recreate the whole group; its new pods wait at
// the gate until all 4 exist and then run together, in the same group.
// Deleting the LWS has the garbage collector delete both groups.
func TestLeaderWorkerSetGroupsWhole(t *testing.T) {
	ctx := testContext(t, 4*time.Minute)
	startFramework(t, ctx, cluster.LeaderWorkerSet)
	ns := namespace(t, ctx)
	stopWatch := watchWhole(t, ctx, ns, 4, 16)
	lwsClient := frameworkResource(t, cluster.LeaderWorkerSetResource, ns)
	lws := create(t, ctx, lwsClient, newLeaderWorkerSet(ns, "infer", 2, 4))

	sizedBy := "LeaderWorkerSet infer"
	expectGang(t, ctx, ns, "infer-0", 4, 4, sizedBy, lws)
	expectGang(t, ctx, ns, "infer-1", 4, 4, sizedBy, lws)
	first := liveGroupPods(t, ctx, ns, "infer-0")
	old := map[types.UID]bool{}
	for _, p := range first {
		old[p.UID] = true
	}
	if len(first) != 4 {
		t.Fatalf("group infer-0 has %d pods, want 4", len(first))
	}

	// The leader of group 0 is the pod named after the group.
	if err := kube.CoreV1().Pods(ns).Delete(ctx, "infer-0", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting the leader of group 0: %v", err)
	}
	expectNewPodsReleasedWhole(t, ctx, ns, "infer-0", 4, old)
	if pods := liveGroupPods(t, ctx, ns, "infer-1"); len(pods) != 4 {
		t.Errorf("group infer-1 has %d pods after group 0 restarted, want its 4", len(pods))
	}
	stopWatch()

	if err := lwsClient.Delete(ctx, "infer", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting the LeaderWorkerSet: %v", err)
	}
	expectGroupGone(t, ctx, ns, "infer-0")
	expectGroupGone(t, ctx, ns, "infer-1")
	expectNoFinalizers(t, ctx, ns)
}

// rayClusterSpec is a RayCluster's spec: a head and the worker groups
// "small" (small replicas, up to 4) and "large" (1), every pod of them in
// one gang per RayCluster.
func rayClusterSpec(small int64) map[string]any {
	worker := func(name string, replicas int64) map[string]any {
		return map[string]any{
			"groupName": name, "replicas": replicas, "minReplicas": int64(0), "maxReplicas": int64(4),
			"rayStartParams": map[string]any{},
			"template":       instanceTemplate("Always", nil),
		}
	}
	return map[string]any{
		"headGroupSpec": map[string]any{
			"rayStartParams": map[string]any{},
			"template":       instanceTemplate("Always", nil),
		},
		"workerGroupSpecs": []any{worker("small", small), worker("large", 1)},
	}
}

// TestRayClusterOneGangAndScaleUp: a RayCluster with a head and two worker
// groups (2 and 1 replicas), run by the real KubeRay operator. Its 4 pods
// are one gang named after the cluster (the label ray.io/cluster), of
// minCount 4 from the head and the workers' replicas, owned by the
// RayCluster. Raising the worker group "small" to 3 replicas, as Ray's
// autoscaler does, adds a pod to the running gang: it joins the admitted
// group and is released on its own, without waiting for another gang.
func TestRayClusterOneGangAndScaleUp(t *testing.T) {
	ctx := testContext(t, 4*time.Minute)
	startFramework(t, ctx, cluster.KubeRay)
	ns := namespace(t, ctx)
	stopWatch := watchWhole(t, ctx, ns, 4, 16)
	rays := frameworkResource(t, cluster.RayClusterResource, ns)
	ray := create(t, ctx, rays, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": cluster.RayClusterResource.GroupVersion().String(),
		"kind":       "RayCluster",
		"metadata":   map[string]any{"name": "ray", "namespace": ns},
		"spec":       rayClusterSpec(2),
	}})
	expectGang(t, ctx, ns, "ray", 4, 4, "RayCluster ray", ray)

	patch := []byte(`[{"op":"replace","path":"/spec/workerGroupSpecs/0/replicas","value":3}]`)
	if _, err := rays.Patch(ctx, "ray", types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("scaling the worker group up: %v", err)
	}
	waitScheduled(t, ctx, ns, "ray", 5)
	pg, err := getGroup(ctx, ns, "ray")
	if err != nil {
		t.Fatalf("group ray: %v", err)
	}
	if g := pg.Spec.SchedulingPolicy.Gang; g == nil || g.MinCount != 4 {
		t.Errorf("group ray gang = %+v after the scale-up, want minCount still 4", g)
	}
	if pods := liveGroupPods(t, ctx, ns, "ray"); len(pods) != 5 {
		t.Errorf("group ray has %d pods after the scale-up, want 5", len(pods))
	}
	stopWatch()

	if err := rays.Delete(ctx, "ray", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting the RayCluster: %v", err)
	}
	expectGroupGone(t, ctx, ns, "ray")
	expectNoFinalizers(t, ctx, ns)
}

// TestRayJobClusterWithIt: a RayJob with its own RayCluster spec, run by
// the real KubeRay operator. The cluster KubeRay creates for it is one
// gang of 4 named after that cluster, sized by the RayCluster and owned by
// the RayJob, its top owner. Deleting the RayJob deletes its cluster, its
// pods and, through the garbage collector, the group.
func TestRayJobClusterWithIt(t *testing.T) {
	ctx := testContext(t, 4*time.Minute)
	startFramework(t, ctx, cluster.KubeRay)
	ns := namespace(t, ctx)
	stopWatch := watchWhole(t, ctx, ns, 4, 16)
	jobs := frameworkResource(t, cluster.RayJobResource, ns)
	job := create(t, ctx, jobs, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": cluster.RayJobResource.GroupVersion().String(),
		"kind":       "RayJob",
		"metadata":   map[string]any{"name": "job", "namespace": ns},
		"spec": map[string]any{
			"entrypoint":     `python -c "print('hello')"`,
			"rayClusterSpec": rayClusterSpec(2),
		},
	}})

	// KubeRay names the cluster in the RayJob's status before it creates
	// it: wait for both.
	var clusterName string
	var ray *unstructured.Unstructured
	waitFor(t, ctx, "the RayJob's RayCluster", func(ctx context.Context) (bool, error) {
		j, err := jobs.Get(ctx, "job", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		clusterName, _, _ = unstructured.NestedString(j.Object, "status", "rayClusterName")
		if clusterName == "" {
			return false, nil
		}
		ray, err = frameworkResource(t, cluster.RayClusterResource, ns).Get(ctx, clusterName, metav1.GetOptions{})
		return err == nil, nil
	})
	pg := expectGang(t, ctx, ns, clusterName, 4, 4, "RayCluster "+clusterName, job)
	expectOwner(t, pg, "RayJob", job.GetName(), job.GetUID())
	if ref := metav1.GetControllerOf(ray); ref == nil || ref.UID != job.GetUID() {
		t.Errorf("RayCluster %s controller = %+v, want the RayJob", clusterName, ref)
	}
	stopWatch()

	if err := jobs.Delete(ctx, "job", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting the RayJob: %v", err)
	}
	expectGroupGone(t, ctx, ns, clusterName)
	waitFor(t, ctx, "the RayJob's pods to be gone", func(ctx context.Context) (bool, error) {
		return len(groupPods(t, ctx, ns, clusterName)) == 0, nil
	})
	expectNoFinalizers(t, ctx, ns)
}

// newTrainingRuntime is a namespaced TrainingRuntime in the shape of
// Kubeflow Trainer's torch-distributed runtime, whose node pods form one
// gang per TrainJob and exit after runFor.
func newTrainingRuntime(ns, name, runFor string) *unstructured.Unstructured {
	node := instanceTemplate("Never", map[string]any{cluster.RunForAnnotation: runFor})
	node["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["name"] = "node"
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": cluster.TrainingRuntimeResource.GroupVersion().String(),
		"kind":       "TrainingRuntime",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"mlPolicy": map[string]any{
				"numNodes": int64(1),
				"torch":    map[string]any{"numProcPerNode": "auto"},
			},
			"template": map[string]any{"spec": map[string]any{
				"replicatedJobs": []any{map[string]any{
					"name": "node",
					"template": map[string]any{
						"metadata": map[string]any{"labels": map[string]any{"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
						"spec": map[string]any{
							"backoffLimit": int64(0),
							"template":     node,
						},
					},
				}},
			}},
		},
	}}
}

// TestTrainJobOnJobSet: a TrainJob of 4 nodes through a torch runtime, run
// by the real Kubeflow Trainer controller, which creates a JobSet that the
// real JobSet controller runs. Its 4 node pods are one gang named
// "<trainjob>-0" (the JobSet's name and restart attempt), of minCount 4
// from the JobSet, owned by the TrainJob. It succeeds 4/0, and the
// TrainJob completes.
func TestTrainJobOnJobSet(t *testing.T) {
	ctx := testContext(t, 4*time.Minute)
	startFramework(t, ctx, cluster.Trainer)
	ns := namespace(t, ctx)
	stopWatch := watchWhole(t, ctx, ns, 4, 16)
	create(t, ctx, frameworkResource(t, cluster.TrainingRuntimeResource, ns), newTrainingRuntime(ns, "torch", "15s"))
	train := createOnceRuntimeSeen(t, ctx, frameworkResource(t, cluster.TrainJobResource, ns), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": cluster.TrainJobResource.GroupVersion().String(),
		"kind":       "TrainJob",
		"metadata":   map[string]any{"name": "train", "namespace": ns},
		"spec": map[string]any{
			"runtimeRef": map[string]any{"name": "torch", "kind": "TrainingRuntime", "apiGroup": cluster.TrainingRuntimeResource.Group},
			"trainer":    map[string]any{"numNodes": int64(4)},
		},
	}})

	expectGang(t, ctx, ns, "train-0", 4, 4, "JobSet train", train)
	expectSucceededGang(t, ctx, ns, "train-0", 4)
	waitFor(t, ctx, "the TrainJob to complete", func(ctx context.Context) (bool, error) {
		tj, err := frameworkResource(t, cluster.TrainJobResource, ns).Get(ctx, "train", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		conditions, _, _ := unstructured.NestedSlice(tj.Object, "status", "conditions")
		for _, c := range conditions {
			if m, ok := c.(map[string]any); ok && m["type"] == "Complete" && m["status"] == string(metav1.ConditionTrue) {
				return true, nil
			}
		}
		return false, nil
	})
	stopWatch()
	expectNoGatedPods(t, ctx, ns)
	expectNoFinalizers(t, ctx, ns)
}
