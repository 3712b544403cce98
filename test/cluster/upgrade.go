package cluster

import (
	"context"
	"fmt"
	"maps"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// HelmUpgrade runs helm upgrade of the release to chart (a chart directory
// or archive), with the harness's values (ChartValues, for the same
// Service ports) plus values over them, then rolls Muster's processes as
// the Deployment's rolling update would when the pod template changed
// (maxSurge 1, maxUnavailable 0): for each replica in turn, it starts a
// process of the new template, puts it in the old one's place behind the
// Service, waits out the old pod's preStop sleep, and stops the old one
// with SIGTERM. It needs Options.MusterReplicas above 1, where a proxy
// stands in for the Service's endpoints; one replica serves the Service's
// ports itself and has no endpoint to move. It returns whether the
// processes were rolled.
func (c *Cluster) HelmUpgrade(ctx context.Context, chart string, values map[string]any) (bool, error) {
	if c.opts.MusterByHand || len(c.replicas) == 0 {
		return false, fmt.Errorf("HelmUpgrade needs a chart install with MusterReplicas above 1")
	}
	merged := c.ChartValues(c.proxy.port(), c.webhookProxy.port())
	maps.Copy(merged, values)
	path, err := c.writeChartValues("muster-values-upgrade.yaml", merged)
	if err != nil {
		return false, err
	}
	if out, err := c.Helm(ctx, "upgrade", ReleaseName, chart, "--values", path); err != nil {
		return false, fmt.Errorf("upgrading the chart: %w\n%s", err, out)
	}
	// helm may have put the chart's Services back as it renders them.
	if err := c.exposeMusterService(ctx); err != nil {
		return false, err
	}
	if err := c.exposeWebhookService(ctx); err != nil {
		return false, err
	}
	rolledWebhook, err := c.rollWebhook(ctx)
	if err != nil {
		return rolledWebhook, err
	}
	old := c.currentMusterPod()
	d, err := c.Client.AppsV1().Deployments(MusterNamespace).Get(ctx, MusterDeployment, metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("reading the chart's Deployment: %w", err)
	}
	if d.Generation == old.generation {
		return rolledWebhook, nil
	}
	pod, err := c.readMusterPod(ctx)
	if err != nil {
		return false, err
	}
	c.setMusterPod(pod)
	for i := range c.replicas {
		if err := c.rollReplica(ctx, i, pod); err != nil {
			return true, err
		}
	}
	return true, nil
}

// rollReplica replaces replica i's process by one of pod's template on new
// ports, behind the same proxy slot.
func (c *Cluster) rollReplica(ctx context.Context, i int, pod *podProcess) error {
	r := c.replicas[i]
	p, ports, err := launch(ctx, musterPorts, c.musterRunner(r.name+"-gen"+fmt.Sprint(pod.generation)), c.musterReady)
	if err != nil {
		return fmt.Errorf("starting the new %s: %w", r.name, err)
	}
	c.track(p)
	c.recordMusterURLs(ports)
	c.mu.Lock()
	oldProc := r.proc
	r.proc, r.port, r.webhookPort = p, ports[0], ports[1]
	c.mu.Unlock()
	c.proxy.setBackend(i, fmt.Sprintf("127.0.0.1:%d", ports[0]))
	if pod.servesWebhook() {
		c.webhookProxy.setBackend(i, fmt.Sprintf("127.0.0.1:%d", ports[1]))
	}
	c.setReplicaReady(i, true)
	// The old pod's preStop sleep: it keeps serving while the clients
	// that hold connections to it move to the new endpoint.
	grace := pod.preStop
	klog.FromContext(ctx).Info("Rolled a Muster replica", "replica", r.name, "ports", ports, "stoppingOldAfter", grace)
	select {
	case <-ctx.Done():
	case <-time.After(grace):
	}
	oldProc.stop()
	c.untrack(oldProc)
	return nil
}
