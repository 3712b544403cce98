package cluster

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
)

// uninstallHookSelector selects the pods of the chart's pre-delete hook Job.
const uninstallHookSelector = "app.kubernetes.io/name=muster-uninstall"

// HelmUninstall runs helm uninstall of the release and, meanwhile, does
// what kubelets would do for the chart's pods: it runs the pre-delete
// hook Job's pod (muster-apiserver uninstall, with the pod's args and its
// ServiceAccount's token) and records its exit in the pod's status, where
// the Job controller reads it, and it stops Muster's processes once the
// hook has deleted their Deployment, as the deletion of their pods would.
// It returns helm's output.
func (c *Cluster) HelmUninstall(ctx context.Context) ([]byte, error) {
	if c.opts.MusterByHand {
		return nil, errors.New("HelmUninstall needs a chart install")
	}
	kubelet, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 2)
	go func() { done <- c.runHookPods(kubelet) }()
	go func() { done <- c.stopMusterWithDeployment(kubelet) }()
	out, err := c.Helm(ctx, "uninstall", ReleaseName, "--timeout", "4m")
	stop()
	for range 2 {
		if kerr := <-done; kerr != nil && !errors.Is(kerr, context.Canceled) {
			err = errors.Join(err, kerr)
		}
	}
	return out, err
}

// runHookPods runs each pod of the uninstall hook Job once, until ctx
// ends.
func (c *Cluster) runHookPods(ctx context.Context) error {
	ran := sets.New[string]()
	return wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		pods, err := c.Client.CoreV1().Pods(MusterNamespace).List(ctx, metav1.ListOptions{LabelSelector: uninstallHookSelector})
		if err != nil {
			return false, nil
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			if ran.Has(string(p.UID)) || p.Status.Phase != corev1.PodPending || p.DeletionTimestamp != nil {
				continue
			}
			ran.Insert(string(p.UID))
			if err := c.runHookPod(ctx, p); err != nil {
				return false, err
			}
		}
		return false, nil
	})
}

// runHookPod runs one hook pod's container to its end and writes the
// outcome into the pod's status.
func (c *Cluster) runHookPod(ctx context.Context, pod *corev1.Pod) error {
	logger := klog.FromContext(ctx)
	root := filepath.Join(c.WorkDir, "hook-pod", pod.Name)
	pp, kubeconfig, err := c.podProcessFor(ctx, pod.Spec, root)
	if err != nil {
		return err
	}
	args := append(pp.args, "--kubeconfig="+kubeconfig)
	p, err := startProcessEnv(pod.Name, c.opts.MusterBinary, args, pp.env, c.logDir())
	if err != nil {
		return err
	}
	c.track(p)
	select {
	case <-p.done:
	case <-ctx.Done():
		p.stop()
		c.untrack(p)
		return ctx.Err()
	}
	c.untrack(p)
	code := 0
	var exit *exec.ExitError
	if errors.As(p.exitErr, &exit) {
		code = exit.ExitCode()
	} else if p.exitErr != nil {
		code = 1
	}
	logger.Info("Ran the uninstall hook's pod", "pod", pod.Name, "exitCode", code, "log", c.LogPath(pod.Name))
	phase := corev1.PodSucceeded
	if code != 0 {
		phase = corev1.PodFailed
	}
	now := metav1.Now()
	return retryOnConflict(ctx, func() error {
		cur, err := c.Client.CoreV1().Pods(MusterNamespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Status.Phase = phase
		cur.Status.ContainerStatuses = []corev1.ContainerStatus{{
			Name:  pod.Spec.Containers[0].Name,
			Image: pod.Spec.Containers[0].Image,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: int32(code), StartedAt: now, FinishedAt: metav1.Now()}},
		}}
		_, err = c.Client.CoreV1().Pods(MusterNamespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
}

// retryOnConflict retries f while it fails with a conflict.
func retryOnConflict(ctx context.Context, f func() error) error {
	var err error
	for range 10 {
		if err = f(); err == nil || !apierrors.IsConflict(err) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return err
}

// stopMusterWithDeployment stops every Muster process once the chart's
// Deployment is gone (helm deletes muster-webhook's with it).
func (c *Cluster) stopMusterWithDeployment(ctx context.Context) error {
	err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := c.Client.AppsV1().Deployments(MusterNamespace).Get(ctx, MusterDeployment, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		return err
	}
	klog.FromContext(ctx).Info("The chart's Deployment is gone: stopping Muster's processes")
	c.mu.Lock()
	var procs []*process
	if c.muster != nil {
		procs = append(procs, c.muster)
	}
	for _, r := range c.replicas {
		procs = append(procs, r.proc)
	}
	if c.webhook != nil {
		c.webhook.stopRefresh()
		procs = append(procs, c.webhook.proc)
	}
	c.mu.Unlock()
	for _, p := range procs {
		p.stop()
		c.untrack(p)
	}
	return nil
}
