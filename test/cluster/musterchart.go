package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"

	"github.com/muster-dev/muster/pkg/manifests"
)

// startMusterFromChart installs charts/muster with helm and runs the
// chart's muster-apiserver pod as Options.MusterReplicas processes: one
// serves the Service's port itself; several sit behind a proxy that
// serves it, as a Service spreads connections over its endpoints. The
// chart's muster-webhook pod runs as one more process, on the webhook
// Service's port (behind a proxy of its own with several API replicas, so
// that an upgrade can roll it).
func (c *Cluster) startMusterFromChart(ctx context.Context) error {
	n := c.opts.MusterReplicas
	all, err := freePorts(musterPorts*n + 1)
	if err != nil {
		return err
	}
	replicaPorts := make([][]int, n)
	for i := range n {
		replicaPorts[i] = all[musterPorts*i : musterPorts*(i+1)]
	}
	webhookProcPort := all[len(all)-1]
	apiPort, webhookPort := replicaPorts[0][0], webhookProcPort
	if n > 1 {
		var addrs []string
		for _, ports := range replicaPorts {
			addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", ports[0]))
		}
		if c.proxy, err = newServiceProxy(addrs); err != nil {
			return fmt.Errorf("starting the proxy in front of Muster's replicas: %w", err)
		}
		if c.webhookProxy, err = newServiceProxy([]string{fmt.Sprintf("127.0.0.1:%d", webhookProcPort)}); err != nil {
			return fmt.Errorf("starting the proxy in front of Muster's webhook: %w", err)
		}
		c.webhookProxy.setReady(0, true)
		apiPort, webhookPort = c.proxy.port(), c.webhookProxy.port()
	}
	c.MusterWebhookURL = fmt.Sprintf("https://127.0.0.1:%d", webhookPort)
	if err := c.installChart(ctx, apiPort, webhookPort); err != nil {
		return err
	}
	if err := c.exposeMusterService(ctx); err != nil {
		return err
	}
	if err := c.exposeWebhookService(ctx); err != nil {
		return err
	}
	pod, err := c.readMusterPod(ctx)
	if err != nil {
		return err
	}
	c.setMusterPod(pod)
	if err := c.startMusterReplicasFromChart(ctx, n, replicaPorts); err != nil {
		return err
	}
	// Its serving certificate is in the Secret the replicas write: a
	// kubelet leaves the pod in ContainerCreating until then.
	webhookPod, err := c.readWebhookPod(ctx)
	if err != nil {
		return err
	}
	w, err := c.startWebhook(ctx, webhookPod, WebhookDeployment, webhookProcPort)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.webhook = w
	c.mu.Unlock()
	return nil
}

// startMusterReplicasFromChart runs the chart's muster-apiserver pod as n
// processes on replicaPorts.
func (c *Cluster) startMusterReplicasFromChart(ctx context.Context, n int, replicaPorts [][]int) error {
	for i, ports := range replicaPorts {
		name := "muster-apiserver"
		if i > 0 {
			name += "-" + strconv.Itoa(i)
		}
		p, err := c.runMusterOnChartPorts(ctx, name, ports)
		if err != nil {
			return fmt.Errorf("starting %s: %w", name, err)
		}
		c.recordMusterURLs(ports)
		if n == 1 {
			c.setMuster(p)
			c.musterPort, c.musterWebhookPort = ports[0], ports[1]
			c.MusterURL, _ = c.recordMusterURLs(ports)
			return nil
		}
		c.track(p)
		c.replicas = append(c.replicas, &musterReplica{name: name, port: ports[0], webhookPort: ports[1], proc: p})
	}
	c.setReplicaReady(-1, true)
	c.musterPort = c.proxy.port()
	c.MusterURL, _ = c.recordMusterURLs([]int{c.musterPort, 0})
	return nil
}

// runMusterOnChartPorts runs one replica on the ports the chart was
// installed with and waits until it is ready (onPortsOnceFree).
func (c *Cluster) runMusterOnChartPorts(ctx context.Context, name string, ports []int) (*process, error) {
	return onPortsOnceFree(ctx, name, ports,
		func() (*process, error) { return c.runMuster(name, ports) },
		func(p *process) error { return c.musterReady(ctx, p, ports) })
}

// onPortsOnceFree starts a process (start) on fixed ports and waits until
// it is ready. The ports are in the chart's values, so a port taken
// between freePorts and the listen (by another test cluster's outgoing
// connection, which holds it for a moment) is waited for, not replaced:
// the process is started again on the same ports, a few times, a second
// apart.
func onPortsOnceFree(ctx context.Context, name string, ports []int, start func() (*process, error), ready func(*process) error) (*process, error) {
	const attempts = 5
	for i := 1; ; i++ {
		p, err := start()
		if err != nil {
			return nil, err
		}
		err = ready(p)
		if err == nil {
			return p, nil
		}
		p.stop()
		if i == attempts || !p.portClash() {
			return nil, err
		}
		klog.InfoS("Port was taken, starting again on the same ports", "name", name, "ports", ports, "attempt", i)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func (c *Cluster) setMusterPod(pod *podProcess) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.musterPod = pod
}

// currentMusterPod is the chart's pod template the harness runs, or nil
// with Options.MusterByHand.
func (c *Cluster) currentMusterPod() *podProcess {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.musterPod
}

// exposeMusterService turns the chart's Service into an ExternalName for
// localhost, the one object the harness changes: Endpoints and
// EndpointSlices refuse loopback addresses, and the processes listen on
// loopback. kube-apiserver (--enable-aggregator-routing=false) resolves
// an ExternalName Service to externalName:<port the caller names>, for
// the APIService and the webhooks alike, and verifies Muster's
// certificate for muster-apiserver.muster-system.svc as on any cluster.
func (c *Cluster) exposeMusterService(ctx context.Context) error {
	patch := []byte(`{"spec":{"type":"ExternalName","externalName":"localhost"}}`)
	if _, err := c.Client.CoreV1().Services(MusterNamespace).Patch(ctx, MusterService, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("pointing the chart's Service at loopback: %w", err)
	}
	return nil
}

// registerChartMuster waits until the chart's APIService is Available
// (with the caBundle Muster wrote) and Muster's API answers through
// kube-apiserver, as registerMuster does for the harness's own.
func (c *Cluster) registerChartMuster(ctx context.Context) error {
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		return fmt.Errorf("creating dynamic client: %w", err)
	}
	if err := waitAPIServiceAvailable(ctx, dyn.Resource(apiServiceResource), c.opts.StartTimeout); err != nil {
		return err
	}
	if err := c.waitKubectlServes(ctx); err != nil {
		return err
	}
	return c.waitOpenAPIMerged(ctx)
}

// waitChartPolicies waits until kube-apiserver enforces the chart's
// admission policies, where it serves them.
func (c *Cluster) waitChartPolicies(ctx context.Context) error {
	validating, _, err := c.servesAdmissionPolicies()
	if err != nil {
		return err
	}
	if !validating {
		return nil
	}
	return c.waitPolicyEnforced(ctx)
}

// pointChartWebhooksAt sets the port of the chart's webhooks to the
// webhook listener at webhookURL: the Service resolves to localhost, so
// the port picks the process, as a Service picks a ready endpoint.
func (c *Cluster) pointChartWebhooksAt(ctx context.Context, webhookURL string) error {
	u, err := url.Parse(webhookURL)
	if err != nil {
		return fmt.Errorf("parsing %s: %w", webhookURL, err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		return fmt.Errorf("the port of %s: %w", webhookURL, err)
	}
	admission := c.Client.AdmissionregistrationV1()
	mutating, err := admission.MutatingWebhookConfigurations().Get(ctx, manifests.ConfigurationName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading the mutating webhook: %w", err)
	}
	validating, err := admission.ValidatingWebhookConfigurations().Get(ctx, manifests.ConfigurationName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading the validating webhook: %w", err)
	}
	patch := func(n int) ([]byte, error) {
		var ops []map[string]any
		for i := range n {
			ops = append(ops, map[string]any{"op": "replace", "path": fmt.Sprintf("/webhooks/%d/clientConfig/service/port", i), "value": port})
		}
		return json.Marshal(ops)
	}
	p, err := patch(len(mutating.Webhooks))
	if err != nil {
		return err
	}
	if _, err := admission.MutatingWebhookConfigurations().Patch(ctx, mutating.Name, types.JSONPatchType, p, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("re-pointing the mutating webhook: %w", err)
	}
	if p, err = patch(len(validating.Webhooks)); err != nil {
		return err
	}
	if _, err := admission.ValidatingWebhookConfigurations().Patch(ctx, validating.Name, types.JSONPatchType, p, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("re-pointing the validating webhook: %w", err)
	}
	return nil
}
