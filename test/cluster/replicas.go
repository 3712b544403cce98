package cluster

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"syscall"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// musterReplica is one of Options.MusterReplicas muster-apiserver
// processes, on ports of its own (API and webhook) behind the proxies.
type musterReplica struct {
	name        string
	port        int
	webhookPort int
	proc        *process
}

// startMusterReplicas runs Options.MusterReplicas muster-apiservers on one
// etcd and puts a proxy in front of their API ports, which the APIService
// points at, and one in front of their webhook ports, which the webhooks
// point at, as they would at a Service's two ports.
func (c *Cluster) startMusterReplicas(ctx context.Context) error {
	var addrs, webhookAddrs []string
	for i := range c.opts.MusterReplicas {
		name := "muster-apiserver"
		if i > 0 {
			name += "-" + strconv.Itoa(i)
		}
		p, ports, err := launch(ctx, musterPorts, c.musterRunner(name), c.musterReady)
		if err != nil {
			return fmt.Errorf("starting %s: %w", name, err)
		}
		c.track(p)
		c.replicas = append(c.replicas, &musterReplica{name: name, port: ports[0], webhookPort: ports[1], proc: p})
		c.recordMusterURLs(ports)
		addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", ports[0]))
		webhookAddrs = append(webhookAddrs, fmt.Sprintf("127.0.0.1:%d", ports[1]))
	}
	proxy, err := newServiceProxy(addrs)
	if err != nil {
		return fmt.Errorf("starting the proxy in front of Muster's replicas: %w", err)
	}
	c.proxy = proxy
	webhookProxy, err := newServiceProxy(webhookAddrs)
	if err != nil {
		return fmt.Errorf("starting the proxy in front of Muster's webhooks: %w", err)
	}
	c.webhookProxy = webhookProxy
	c.setReplicaReady(-1, true)
	c.musterPort, c.musterWebhookPort = proxy.port(), webhookProxy.port()
	c.MusterURL, c.MusterWebhookURL = c.recordMusterURLs([]int{c.musterPort, c.musterWebhookPort})
	return nil
}

// setReplicaReady puts replica i (every replica for -1) into the proxies,
// or takes it out: the webhook proxy's too where the replicas serve the
// webhook (by hand), not where the chart's muster-webhook does.
func (c *Cluster) setReplicaReady(i int, ready bool) {
	servesWebhook := c.currentMusterPod().servesWebhook()
	for j := range c.replicas {
		if i == -1 || i == j {
			c.proxy.setReady(j, ready)
			if servesWebhook {
				c.webhookProxy.setReady(j, ready)
			}
		}
	}
}

// MusterReplicaURL is the API URL of replica i itself, not through the
// proxy.
func (c *Cluster) MusterReplicaURL(i int) string {
	return fmt.Sprintf("https://127.0.0.1:%d", c.replicas[i].port)
}

// KillMusterReplica takes replica i out of the proxy and kills it with
// SIGKILL, as a crash would: no graceful shutdown, no Lease release.
func (c *Cluster) KillMusterReplica(i int) {
	r := c.replicas[i]
	c.setReplicaReady(i, false)
	c.mu.Lock()
	p := r.proc
	c.mu.Unlock()
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
	c.untrack(p)
}

// RestartMusterReplica kills replica i if it runs, starts it again on its
// port, and puts it back into the proxy once it is ready.
func (c *Cluster) RestartMusterReplica(ctx context.Context, i int) error {
	r := c.replicas[i]
	c.mu.Lock()
	alive := !r.proc.exited()
	c.mu.Unlock()
	if alive {
		c.KillMusterReplica(i)
	}
	ports := []int{r.port, r.webhookPort}
	p, err := c.runMuster(r.name, ports)
	if err != nil {
		return err
	}
	c.track(p)
	c.mu.Lock()
	r.proc = p
	c.mu.Unlock()
	if err := c.musterReady(ctx, p, ports); err != nil {
		// It exited, or is stopped now: a failed start is not a crash of
		// the cluster, and the caller may try again.
		p.stop()
		c.untrack(p)
		return fmt.Errorf("restarting %s: %w", r.name, err)
	}
	c.setReplicaReady(i, true)
	return nil
}

// MusterLeader returns the replica whose controller holds the Lease, or -1
// when no live replica does (the Lease is free, or held by one that was
// killed and has not expired). A replica logs the identity it leads with,
// and each identity carries a UUID of its own process; only the log of the
// replica's current run is searched.
func (c *Cluster) MusterLeader(ctx context.Context) (int, error) {
	lease, err := c.Client.CoordinationV1().Leases(MusterNamespace).Get(ctx, scheduling.ControllerName, metav1.GetOptions{})
	if err != nil {
		return -1, err
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		return -1, nil
	}
	id := []byte(strconv.Quote(*lease.Spec.HolderIdentity))
	for i, r := range c.replicas {
		c.mu.Lock()
		p := r.proc
		c.mu.Unlock()
		if p.exited() {
			continue
		}
		data, err := p.log()
		if err != nil {
			return -1, err
		}
		if bytes.Contains(data, id) {
			return i, nil
		}
	}
	return -1, nil
}
