package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/controller/autoscaling"
	"github.com/muster-dev/muster/pkg/generated/clientset/versioned"
	"github.com/muster-dev/muster/test/cluster"
)

// TestUninstall runs `muster-apiserver uninstall`, what the chart's
// pre-delete hook runs, then deletes the rest of the install as kubectl
// users do (kubectl delete -f dist/muster.yaml), on a cluster of its own
// (it takes Muster away), over a gang that
// never fit (gated pods), a running gang and a pod with another tool's
// gate, and a capacity-request pod. Afterwards no pod keeps Muster's gate
// or finalizer, the other tool's gate stays, the capacity-request pod and
// its PriorityClass are gone, Muster's webhook is gone so labelled pods are
// created plain, and the namespace and muster-system are deleted.
func TestUninstall(t *testing.T) {
	c := clusterOfItsOwn(t)
	kube := kubernetes.NewForConfigOrDie(c.Config)
	muster := versioned.NewForConfigOrDie(c.Config)
	ctx := testContext(t, 4*time.Minute)
	ns := "uninstall"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitForDefaultServiceAccount(ctx, ns); err != nil {
		t.Fatal(err)
	}
	create := func(p *corev1.Pod) {
		t.Helper()
		if _, err := kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating pod %s: %v", p.Name, err)
		}
	}
	// A gang of 3 that runs, and one whose pods ask for more CPU than any
	// node has, so it stays gated.
	for _, g := range []struct {
		name, cpu string
	}{{"running", "100m"}, {"neverfits", "1000"}} {
		if _, err := muster.SchedulingV1alpha1().PodGroups(ns).Create(ctx, newGroupObject(ns, g.name, 3), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			p := newPod(ns, fmt.Sprintf("%s-%d", g.name, i), podOpts{group: g.name})
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse(g.cpu)
			create(p)
		}
	}
	// A capacity-request pod for the gang that never fits, as the controller
	// makes one for an autoscaler: its PodGroup goes with Muster's API, so
	// the garbage collector would never remove it.
	pg, err := muster.SchedulingV1alpha1().PodGroups(ns).Get(ctx, "neverfits", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tmpl := autoscaling.CapacityRequestTemplate(newPod(ns, "neverfits-0", podOpts{group: "neverfits"}), pg.Name, scheduling.DefaultCapacityRequestImage)
	cr := &corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
	cr.Name = "neverfits-cr-0"
	cr.OwnerReferences = []metav1.OwnerReference{autoscaling.OwnerReference(autoscaling.Demand{Namespace: ns, Name: pg.Name, UID: pg.UID})}
	create(cr)
	other := newPod(ns, "other-gate", podOpts{})
	other.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/other"}}
	create(other)
	waitFor(t, ctx, "the running gang to run", func(ctx context.Context) (bool, error) {
		pg, err := muster.SchedulingV1alpha1().PodGroups(ns).Get(ctx, "running", metav1.GetOptions{})
		return err == nil && pg.Status.Scheduled == 3, nil
	})

	// The harness runs Muster as a process, not as the Deployment the
	// uninstall deletes: stop it the way the Deployment's deletion would.
	c.KillMuster()
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := cluster.DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, cluster.DefaultMusterBinary(bin), "uninstall", "--kubeconfig="+c.Kubeconfig, "--namespace="+cluster.MusterNamespace)
	out, err := cmd.CombinedOutput()
	t.Logf("muster-apiserver uninstall:\n%s", out)
	if err != nil {
		t.Fatalf("muster-apiserver uninstall: %v", err)
	}
	out, err = c.Kubectl(ctx, "delete", "-f", filepath.Join(root, "dist", "muster.yaml"), "--ignore-not-found", "--wait=false")
	if err != nil {
		t.Fatalf("kubectl delete -f dist/muster.yaml: %v\n%s", err, out)
	}

	expectPodsLetGo(t, ctx, kube, ns)
	waitFor(t, ctx, "the capacity-request pod to be deleted", func(ctx context.Context) (bool, error) {
		_, err := kube.CoreV1().Pods(ns).Get(ctx, cr.Name, metav1.GetOptions{})
		return isNotFound(err), nil
	})
	if _, err := kube.SchedulingV1().PriorityClasses().Get(ctx, scheduling.CapacityRequestPriorityClass, metav1.GetOptions{}); !isNotFound(err) {
		t.Errorf("the PriorityClass %s is still installed: %v", scheduling.CapacityRequestPriorityClass, err)
	}
	expectMusterGone(t, ctx, kube, ns, create)
	// kubectl deletes muster-system without waiting; that must finish too.
	if _, err := waitNamespaceGone(ctx, kube, cluster.MusterNamespace, namespaceDeletionLimit); err != nil {
		t.Errorf("namespace %s not deleted within %s after the uninstall", cluster.MusterNamespace, namespaceDeletionLimit)
	}
}

// expectPodsLetGo checks, after an uninstall, that no pod of ns keeps
// Muster's gate or finalizer, and that the pod other-gate kept the gate of
// another tool.
func expectPodsLetGo(t *testing.T, ctx context.Context, kc kubernetes.Interface, ns string) {
	t.Helper()
	pods, err := kc.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if isGated(&p) || hasTrackingFinalizer(&p) {
			t.Errorf("pod %s still carries Muster's gate or finalizer: gates %v, finalizers %v", p.Name, p.Spec.SchedulingGates, p.Finalizers)
		}
		if p.Name == "other-gate" && (len(p.Spec.SchedulingGates) != 1 || p.Spec.SchedulingGates[0].Name != "example.com/other") {
			t.Errorf("pod other-gate lost another tool's gate: %v", p.Spec.SchedulingGates)
		}
	}
}

// expectMusterGone checks, after an uninstall, that the pod webhook is
// gone, that a labelled pod is now created as any other (ungated, with no
// finalizer), and that nothing holds the deletion of ns any more.
func expectMusterGone(t *testing.T, ctx context.Context, kc kubernetes.Interface, ns string, create func(*corev1.Pod)) {
	t.Helper()
	if _, err := kc.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "muster-pod-webhook", metav1.GetOptions{}); !isNotFound(err) {
		t.Errorf("the mutating webhook is still installed: %v", err)
	}
	create(newPod(ns, "after", podOpts{group: "running"}))
	after, err := kc.CoreV1().Pods(ns).Get(ctx, "after", metav1.GetOptions{})
	if err != nil || isGated(after) || hasTrackingFinalizer(after) {
		t.Errorf("a labelled pod created after the uninstall = %+v, %v; want it plain", after.Spec.SchedulingGates, err)
	}
	if err := kc.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := waitNamespaceGone(ctx, kc, ns, namespaceDeletionLimit); err != nil {
		t.Errorf("namespace %s not deleted within %s after the uninstall", ns, namespaceDeletionLimit)
	}
}
