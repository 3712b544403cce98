package cluster

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

// podTimeout bounds every wait for a pod to change; kwok and the scheduler
// act within a second or two, so this only matters on a stuck cluster.
const podTimeout = time.Minute

// TestLocalClusterSmoke starts the control plane without Muster and checks
// that the real scheduler and kwok's stages drive pods through their
// lifecycle: gated, bound, running, finished and deleted.
func TestLocalClusterSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane; skipped with -short")
	}
	c := StartForTest(t, Options{Nodes: 2})
	ctx := t.Context()
	ns := createNamespace(t, c, "smoke")

	// The release the binary reports is the one the server runs, and the one
	// `make e2e` asked for (MUSTER_KUBE_VERSION).
	want := "v" + c.KubeVersion.String()
	if requested := os.Getenv("MUSTER_KUBE_VERSION"); requested != "" && want != "v"+requested {
		t.Errorf("kube-apiserver --version = %s, want v%s (MUSTER_KUBE_VERSION)", want, requested)
	}
	if out, err := c.Kubectl(ctx, "version"); err != nil || !strings.Contains(string(out), "Server Version: "+want+"\n") {
		t.Errorf("kubectl version = %q, %v; want a %s server", out, err, want)
	}

	t.Run("gated pod is bound once ungated and runs", func(t *testing.T) {
		t.Parallel()
		pod := newPod("gated", nil)
		pod.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/gate"}}
		pods := c.Client.CoreV1().Pods(ns)
		if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating pod: %v", err)
		}
		// The scheduler records that it saw the gate; until then "still
		// pending" would prove nothing.
		got := waitPod(t, c, ns, "gated", "PodScheduled=False/SchedulingGated", func(p *corev1.Pod) bool {
			cond := podCondition(p, corev1.PodScheduled)
			return cond != nil && cond.Reason == corev1.PodReasonSchedulingGated
		})
		if got.Spec.NodeName != "" || got.Status.Phase != corev1.PodPending {
			t.Fatalf("gated pod: node %q phase %s; want unbound and Pending", got.Spec.NodeName, got.Status.Phase)
		}

		ungate := []byte(`[{"op":"remove","path":"/spec/schedulingGates"}]`)
		if _, err := pods.Patch(ctx, "gated", types.JSONPatchType, ungate, metav1.PatchOptions{}); err != nil {
			t.Fatalf("removing scheduling gate: %v", err)
		}
		got = waitPod(t, c, ns, "gated", "Running and Ready", func(p *corev1.Pod) bool {
			ready := podCondition(p, corev1.PodReady)
			return p.Status.Phase == corev1.PodRunning && ready != nil && ready.Status == corev1.ConditionTrue
		})
		if !strings.HasPrefix(got.Spec.NodeName, "kwok-node-") || got.Status.PodIP == "" {
			t.Errorf("running pod: node %q podIP %q; want a kwok node and an IP", got.Spec.NodeName, got.Status.PodIP)
		}

		// Without finalizers, kwok removes the pod once its grace period ends.
		if err := pods.Delete(ctx, "gated", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](1)}); err != nil {
			t.Fatalf("deleting pod: %v", err)
		}
		waitGone(t, c, ns, "gated")
	})

	finishing := []struct {
		name     string
		exitCode string
		phase    corev1.PodPhase
		wantCode int32
	}{
		{name: "run-for ends Succeeded", phase: corev1.PodSucceeded, wantCode: 0},
		{name: "run-for with exit-code 0 ends Succeeded", exitCode: "0", phase: corev1.PodSucceeded, wantCode: 0},
		{name: "run-for with exit-code 1 ends Failed", exitCode: "1", phase: corev1.PodFailed, wantCode: 1},
	}
	for i, tc := range finishing {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			annotations := map[string]string{RunForAnnotation: "2s"}
			if tc.exitCode != "" {
				annotations[ExitCodeAnnotation] = tc.exitCode
			}
			name := fmt.Sprintf("finishing-%d", i)
			if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, newPod(name, annotations), metav1.CreateOptions{}); err != nil {
				t.Fatalf("creating pod: %v", err)
			}
			waitPod(t, c, ns, name, "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
			got := waitPod(t, c, ns, name, string(tc.phase), func(p *corev1.Pod) bool { return p.Status.Phase == tc.phase })
			if code := exitCode(got); code != tc.wantCode {
				t.Errorf("exit code = %d, want %d", code, tc.wantCode)
			}
			// Ended is final, as with a kubelet (registerTerminalPhasePolicy).
			other := corev1.PodFailed
			if tc.phase == corev1.PodFailed {
				other = corev1.PodSucceeded
			}
			got.Status.Phase = other
			_, err := c.Client.CoreV1().Pods(ns).UpdateStatus(ctx, got, metav1.UpdateOptions{})
			if err == nil || !strings.Contains(err.Error(), TerminalPhasePolicyName) || !strings.Contains(err.Error(), "status.phase: Forbidden") {
				t.Errorf("changing the phase of a pod that ended %s to %s: %v, want a denial by %s naming status.phase", tc.phase, other, err, TerminalPhasePolicyName)
			}
		})
	}

	t.Run("deleted pod stops after its grace period and goes once its finalizer is removed", func(t *testing.T) {
		t.Parallel()
		pod := newPod("finalized", nil)
		pod.Finalizers = []string{"example.com/hold"}
		pods := c.Client.CoreV1().Pods(ns)
		if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating pod: %v", err)
		}
		waitPod(t, c, ns, "finalized", "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
		if err := pods.Delete(ctx, "finalized", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](2)}); err != nil {
			t.Fatalf("deleting pod: %v", err)
		}
		got := waitPod(t, c, ns, "finalized", "Failed while terminating", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
		if got.DeletionTimestamp == nil || exitCode(got) != 137 {
			t.Errorf("terminated pod: deletionTimestamp %v exit code %d; want set and 137", got.DeletionTimestamp, exitCode(got))
		}
		release := []byte(`[{"op":"remove","path":"/metadata/finalizers"}]`)
		if _, err := pods.Patch(ctx, "finalized", types.JSONPatchType, release, metav1.PatchOptions{}); err != nil {
			t.Fatalf("removing finalizer: %v", err)
		}
		waitGone(t, c, ns, "finalized")
	})
	t.Run("a deleted pod is never reported Succeeded by a container that ended after its grace period", func(t *testing.T) {
		t.Parallel()
		// stop-after keeps kwok from killing it at its deletionTimestamp.
		pod := newPod("late", map[string]string{StopAfterAnnotation: "30s"})
		pod.Finalizers = []string{"example.com/hold"}
		pods := c.Client.CoreV1().Pods(ns)
		if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating pod: %v", err)
		}
		waitPod(t, c, ns, "late", "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
		if err := pods.Delete(ctx, "late", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](1)}); err != nil {
			t.Fatalf("deleting pod: %v", err)
		}
		got := waitPod(t, c, ns, "late", "being deleted", func(p *corev1.Pod) bool { return p.DeletionTimestamp != nil })
		time.Sleep(time.Until(got.DeletionTimestamp.Add(2 * time.Second)))
		got.Status.Phase = corev1.PodSucceeded
		for i := range got.Status.ContainerStatuses {
			got.Status.ContainerStatuses[i].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 0, Reason: "Completed", FinishedAt: metav1.Now()}}
		}
		_, err := pods.UpdateStatus(ctx, got, metav1.UpdateOptions{})
		if err == nil || !strings.Contains(err.Error(), TerminalPhasePolicyName) || !strings.Contains(err.Error(), "deletionTimestamp") {
			t.Errorf("reporting Succeeded after the grace period: %v, want a denial by %s", err, TerminalPhasePolicyName)
		}
		release := []byte(`[{"op":"remove","path":"/metadata/finalizers"}]`)
		if _, err := pods.Patch(ctx, "late", types.JSONPatchType, release, metav1.PatchOptions{}); err != nil {
			t.Fatalf("removing finalizer: %v", err)
		}
		waitGone(t, c, ns, "late")
	})
	t.Run("deleted pod with stop-after exits 143 before its grace period ends", func(t *testing.T) {
		t.Parallel()
		pod := newPod("stopping", map[string]string{StartAfterAnnotation: "1s", StopAfterAnnotation: "1s"})
		pod.Finalizers = []string{"example.com/hold"}
		pods := c.Client.CoreV1().Pods(ns)
		if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating pod: %v", err)
		}
		waitPod(t, c, ns, "stopping", "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
		// The default grace period (30s) would end with exit code 137.
		if err := pods.Delete(ctx, "stopping", metav1.DeleteOptions{}); err != nil {
			t.Fatalf("deleting pod: %v", err)
		}
		got := waitPod(t, c, ns, "stopping", "Failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
		if code := exitCode(got); code != 143 {
			t.Errorf("stopped pod exit code = %d, want 143", code)
		}
		release := []byte(`[{"op":"remove","path":"/metadata/finalizers"}]`)
		if _, err := pods.Patch(ctx, "stopping", types.JSONPatchType, release, metav1.PatchOptions{}); err != nil {
			t.Fatalf("removing finalizer: %v", err)
		}
		waitGone(t, c, ns, "stopping")
	})
}

// createNamespace creates a namespace and waits for its default service
// account, without which pods are rejected.
func createNamespace(t *testing.T, c *Cluster, name string) string {
	t.Helper()
	ctx := t.Context()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, podTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := c.Client.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("waiting for default service account: %v", err)
	}
	return name
}

// newPod returns a small pod for the fake nodes.
func newPod(name string, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name:  "main",
				Image: "example.com/fake:latest",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse("100m"),
					corev1.ResourceMemory: resource.MustParse("64Mi"),
				}},
			}},
		},
	}
}

// waitPod polls a pod until done holds and returns it.
func waitPod(t *testing.T, c *Cluster, ns, name, want string, done func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var last *corev1.Pod
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, podTimeout, true, func(ctx context.Context) (bool, error) {
		pod, err := c.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = pod
		return done(pod), nil
	})
	if err != nil {
		if last != nil {
			t.Fatalf("pod %s/%s never became %s: phase %s, node %q, conditions %+v", ns, name, want, last.Status.Phase, last.Spec.NodeName, last.Status.Conditions)
		}
		t.Fatalf("pod %s/%s never became %s: %v", ns, name, want, err)
	}
	return last
}

// waitGone polls until the pod no longer exists.
func waitGone(t *testing.T, c *Cluster, ns, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, podTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := c.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s still exists: %v", ns, name, err)
	}
}

// podCondition returns the pod's condition of the given type, or nil.
func podCondition(pod *corev1.Pod, typ corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == typ {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// exitCode returns the first container's exit code, or -1 if it has not
// terminated.
func exitCode(pod *corev1.Pod) int32 {
	if len(pod.Status.ContainerStatuses) == 0 || pod.Status.ContainerStatuses[0].State.Terminated == nil {
		return -1
	}
	return pod.Status.ContainerStatuses[0].State.Terminated.ExitCode
}
