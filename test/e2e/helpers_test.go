package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/test/cluster"
)

const pollInterval = 200 * time.Millisecond

func testContext(t *testing.T, timeout time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return ctx
}

// namespace creates a namespace for one test and deletes it when the test
// ends, as a user would: kube-controller-manager's namespace controller
// then deletes what the test left (TestNamespaceDeletion checks that it
// finishes). Pods are admitted once the service-account controller has
// created the namespace's "default" ServiceAccount, so it waits for that.
func namespace(t *testing.T, ctx context.Context) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	name = strings.Trim(name, "-") + fmt.Sprintf("-%d", time.Now().UnixNano()%100000)
	return env.NewNamespace(t, ctx, name)
}

// podOpts shape a test pod.
type podOpts struct {
	group       string
	runFor      string // sim.muster.dev/run-for
	exitCode    int
	annotations map[string]string
	labels      map[string]string
}

func newPod(ns, name string, o podOpts) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{}, Annotations: map[string]string{}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "main", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
			}},
			TerminationGracePeriodSeconds: ptrInt64(1),
		},
	}
	if o.group != "" {
		p.Labels[scheduling.PodGroupLabel] = o.group
	}
	if o.runFor != "" {
		p.Annotations[cluster.RunForAnnotation] = o.runFor
	}
	if o.exitCode != 0 {
		p.Annotations[cluster.ExitCodeAnnotation] = fmt.Sprint(o.exitCode)
	}
	for k, v := range o.annotations {
		p.Annotations[k] = v
	}
	for k, v := range o.labels {
		p.Labels[k] = v
	}
	return p
}

func ptrInt64(v int64) *int64 { return &v }

func createPod(t *testing.T, ctx context.Context, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	created, err := kube.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s: %v", p.Name, err)
	}
	return created
}

// newGroupObject returns a gang PodGroup of minCount.
func newGroupObject(ns, name string, minCount int32) *v1alpha1.PodGroup {
	return &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.PodGroupSpec{SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{
			Gang: &v1alpha1.GangSchedulingPolicy{MinCount: minCount},
		}},
	}
}

func createGroup(t *testing.T, ctx context.Context, ns, name string, minCount int32, gates ...string) {
	t.Helper()
	pg := newGroupObject(ns, name, minCount)
	for _, g := range gates {
		pg.Spec.SchedulingGates = append(pg.Spec.SchedulingGates, v1alpha1.PodGroupSchedulingGate{Name: g})
	}
	if _, err := muster.SchedulingV1alpha1().PodGroups(ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating PodGroup %s: %v", name, err)
	}
}

// waitFor polls cond until it holds, failing the test with what it waited for.
func waitFor(t *testing.T, ctx context.Context, what string, cond wait.ConditionWithContextFunc) {
	t.Helper()
	if err := wait.PollUntilContextCancel(ctx, pollInterval, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func getGroup(ctx context.Context, ns, name string) (*v1alpha1.PodGroup, error) {
	return muster.SchedulingV1alpha1().PodGroups(ns).Get(ctx, name, metav1.GetOptions{})
}

// waitGroupFinished waits for Finished=True and returns the group.
func waitGroupFinished(t *testing.T, ctx context.Context, ns, name string) *v1alpha1.PodGroup {
	t.Helper()
	var pg *v1alpha1.PodGroup
	waitFor(t, ctx, "PodGroup "+name+" to finish", func(ctx context.Context) (bool, error) {
		var err error
		pg, err = getGroup(ctx, ns, name)
		if err != nil {
			return false, nil
		}
		return meta.IsStatusConditionTrue(pg.Status.Conditions, v1alpha1.ConditionFinished), nil
	})
	return pg
}

func listPods(t *testing.T, ctx context.Context, ns string) []corev1.Pod {
	t.Helper()
	list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing pods: %v", err)
	}
	return list.Items
}

// isGated and hasTrackingFinalizer are the API package's predicates, under
// the names the e2e tests already call them by.
var (
	isGated              = scheduling.HasGate
	hasTrackingFinalizer = scheduling.HasTrackingFinalizer
)

// expectNoFinalizers asserts that no pod in ns keeps Muster's finalizer.
func expectNoFinalizers(t *testing.T, ctx context.Context, ns string) {
	t.Helper()
	waitFor(t, ctx, "no pod to keep the tracking finalizer", func(ctx context.Context) (bool, error) {
		for _, p := range listPods(t, ctx, ns) {
			if scheduling.HasTrackingFinalizer(&p) {
				return false, nil
			}
		}
		return true, nil
	})
}

// deleteAllPods deletes every pod of ns and waits until they are gone,
// which proves none is stuck Terminating.
func deleteAllPods(t *testing.T, ctx context.Context, ns string, within time.Duration) {
	t.Helper()
	if err := kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptrInt64(0)}, metav1.ListOptions{}); err != nil {
		t.Fatalf("deleting pods: %v", err)
	}
	dctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	waitFor(t, dctx, "all pods to be gone", func(ctx context.Context) (bool, error) {
		return len(listPods(t, ctx, ns)) == 0, nil
	})
}

func isNotFound(err error) bool  { return apierrors.IsNotFound(err) }
func isForbidden(err error) bool { return apierrors.IsForbidden(err) }

// waitScheduled waits until n pods of the group are bound and the group is
// Scheduled.
func waitScheduled(t *testing.T, ctx context.Context, ns, group string, n int32) {
	t.Helper()
	waitFor(t, ctx, fmt.Sprintf("%d pods of %s to be bound", n, group), func(ctx context.Context) (bool, error) {
		pg, err := getGroup(ctx, ns, group)
		return err == nil && pg.Status.Scheduled >= n && meta.IsStatusConditionTrue(pg.Status.Conditions, v1alpha1.ConditionScheduled), nil
	})
}

// waitNamespaceGone waits up to limit for namespace ns to be deleted and
// returns the error of the wait, and how long it took.
func waitNamespaceGone(ctx context.Context, client kubernetes.Interface, ns string, limit time.Duration) (time.Duration, error) {
	began := time.Now()
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	return time.Since(began), err
}

// clusterOfItsOwn starts a cluster with Muster for one test that must not
// share the suite's (it takes Muster or its etcd away), with the suite's
// flags; mods change its options. It stops when the test ends.
func clusterOfItsOwn(t *testing.T, mods ...func(*cluster.Options)) *cluster.Cluster {
	t.Helper()
	bin, err := cluster.DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	opts := cluster.Options{
		BinDir:          bin,
		MusterBinary:    cluster.DefaultMusterBinary(bin),
		MusterManifests: cluster.DefaultMusterManifests(),
		MusterArgs:      musterArgs,
	}
	for _, m := range mods {
		m(&opts)
	}
	return cluster.StartForTest(t, opts)
}
