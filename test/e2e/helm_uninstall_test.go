package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/muster-dev/muster/pkg/generated/clientset/versioned"
	"github.com/muster-dev/muster/test/cluster"
)

// TestHelmUninstall runs helm uninstall of the harness's install, on a
// cluster of its own, over a gang that runs, one whose pods never fit
// (gated) and a pod with another tool's gate. The chart's pre-delete hook
// runs muster-apiserver uninstall (the harness plays the kubelet for its
// Job's pod): afterwards no pod keeps Muster's gate or finalizer, the other
// tool's gate stays, the webhooks and the APIService are gone, so a
// labelled pod is created plain, and the test's namespace deletes.
func TestHelmUninstall(t *testing.T) {
	c := clusterOfItsOwn(t, func(o *cluster.Options) { o.Nodes = 1 })
	kc := kubernetes.NewForConfigOrDie(c.Config)
	mc := versioned.NewForConfigOrDie(c.Config)
	ctx := testContext(t, 6*time.Minute)
	ns := c.NewNamespace(t, ctx, "helm-uninstall")
	create := func(p *corev1.Pod) {
		t.Helper()
		if _, err := kc.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating pod %s: %v", p.Name, err)
		}
	}
	for _, g := range []struct{ name, cpu string }{{"running", "100m"}, {"neverfits", "1000"}} {
		if _, err := mc.SchedulingV1alpha1().PodGroups(ns).Create(ctx, newGroupObject(ns, g.name, 3), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			p := newPod(ns, fmt.Sprintf("%s-%d", g.name, i), podOpts{group: g.name})
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse(g.cpu)
			create(p)
		}
	}
	other := newPod(ns, "other-gate", podOpts{})
	other.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/other"}}
	create(other)
	waitFor(t, ctx, "the running gang to run", func(ctx context.Context) (bool, error) {
		pg, err := mc.SchedulingV1alpha1().PodGroups(ns).Get(ctx, "running", metav1.GetOptions{})
		return err == nil && pg.Status.Scheduled == 3, nil
	})

	out, err := c.HelmUninstall(ctx)
	t.Logf("helm uninstall:\n%s", out)
	if err != nil {
		t.Fatalf("helm uninstall: %v", err)
	}
	// The hook Job's pod, muster-uninstall-<suffix>, ran as a process.
	if logs, _ := filepath.Glob(filepath.Join(filepath.Dir(c.LogPath("x")), "muster-uninstall-*.log")); len(logs) == 0 {
		t.Errorf("no log of the pre-delete hook's pod: the hook did not run")
	}

	expectPodsLetGo(t, ctx, kc, ns)
	if out, err := c.Kubectl(ctx, "get", "apiservice", cluster.MusterAPIServiceName); err == nil {
		t.Errorf("the APIService is still installed:\n%s", out)
	}
	expectMusterGone(t, ctx, kc, ns, create)
}
