package cluster

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/muster-dev/muster/pkg/manifests"
)

// WebhookDeployment is the chart's Deployment of the pod webhook
// (muster-apiserver --webhook-only), apart from the API's.
const WebhookDeployment = "muster-webhook"

// webhookProcess is the process the harness runs for the chart's
// muster-webhook Deployment, as it runs muster-apiserver's: one replica,
// on port, behind webhookProxy when the API's replicas have a proxy too.
type webhookProcess struct {
	pod  *podProcess
	proc *process
	port int
	// stopRefresh ends the writing of its Secrets' changes.
	stopRefresh context.CancelFunc
}

// readWebhookPod reads the chart's muster-webhook Deployment and turns its
// pod template into a podProcess, its Secrets written under
// <work dir>/webhook-pod/<generation>/. It mounts no token.
func (c *Cluster) readWebhookPod(ctx context.Context) (*podProcess, error) {
	d, err := c.Client.AppsV1().Deployments(MusterNamespace).Get(ctx, WebhookDeployment, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading the chart's Deployment %s: %w", WebhookDeployment, err)
	}
	root := filepath.Join(c.WorkDir, "webhook-pod", strconv.FormatInt(d.Generation, 10))
	pp, _, err := c.podProcessFor(ctx, d.Spec.Template.Spec, root)
	if err != nil {
		return nil, err
	}
	pp.generation = d.Generation
	pp.inCluster = []string{"--bind-address=127.0.0.1"}
	return pp, nil
}

// startWebhook runs the webhook pod's process on port and waits until its
// /readyz answers over TLS that Muster's CA verifies. Its Secrets'
// changes (the serving certificate rotated) are written to its files
// until it stops, as the kubelet updates a Secret volume.
func (c *Cluster) startWebhook(ctx context.Context, pod *podProcess, name string, port int) (*webhookProcess, error) {
	args := append(append([]string{}, pod.args...), "--webhook-port="+strconv.Itoa(port))
	p, err := onPortsOnceFree(ctx, name, []int{port},
		func() (*process, error) {
			return startProcessEnv(name, c.opts.MusterBinary, append(args, pod.inCluster...), pod.env, c.logDir())
		},
		func(p *process) error { return c.webhookReady(ctx, p, port) })
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	c.track(p)
	refreshCtx, stop := context.WithCancel(context.Background())
	go c.refreshMounts(refreshCtx, pod)
	return &webhookProcess{pod: pod, proc: p, port: port, stopRefresh: stop}, nil
}

// webhookReady waits for the webhook listener's /readyz.
func (c *Cluster) webhookReady(ctx context.Context, p *process, port int) error {
	return p.waitReady(ctx, c.opts.StartTimeout, func(ctx context.Context) error {
		pool, err := c.musterTrust(ctx)
		if err != nil {
			return err
		}
		return c.httpsOKTrusting(ctx, fmt.Sprintf("https://127.0.0.1:%d/readyz", port), pool, c.webhookServerName())
	})
}

// webhookServerName is the name kube-apiserver verifies the webhook's
// certificate for: its Service's.
func (c *Cluster) webhookServerName() string {
	return manifests.WebhookService + "." + MusterNamespace + ".svc"
}

// refreshMounts writes the pod's Secrets again every second while they
// change, until ctx ends.
func (c *Cluster) refreshMounts(ctx context.Context, pod *podProcess) {
	_ = wait.PollUntilContextCancel(ctx, time.Second, false, func(ctx context.Context) (bool, error) {
		if _, err := c.materialiseMounts(ctx, pod.root, pod.volumes, pod.mounts); err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).V(2).Info("Writing the webhook pod's volumes again", "err", err)
		}
		return false, nil
	})
}

// stopWebhook stops it, gracefully unless kill.
func (w *webhookProcess) stopWebhook(kill bool) {
	w.stopRefresh()
	if kill {
		_ = syscall.Kill(-w.proc.cmd.Process.Pid, syscall.SIGKILL)
		<-w.proc.done
		return
	}
	w.proc.stop()
}

// KillWebhook kills the webhook's process with SIGKILL, as a crash would,
// and leaves it down: labelled pod creates are then refused
// (failurePolicy Fail) whatever muster-apiserver's state.
func (c *Cluster) KillWebhook() {
	c.mu.Lock()
	w := c.webhook
	c.mu.Unlock()
	if w == nil || w.proc.exited() {
		return
	}
	w.stopWebhook(true)
	c.untrack(w.proc)
}

// RestartWebhook starts the webhook's process again on its port and waits
// until it is ready.
func (c *Cluster) RestartWebhook(ctx context.Context) error {
	c.mu.Lock()
	w := c.webhook
	c.mu.Unlock()
	if w == nil {
		return fmt.Errorf("no webhook Deployment runs: Options.MusterByHand")
	}
	c.KillWebhook()
	next, err := c.startWebhook(ctx, w.pod, WebhookDeployment, w.port)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.webhook = next
	c.mu.Unlock()
	return nil
}

// rollWebhook replaces the webhook's process by one of the Deployment's
// current template, as its rolling update would (maxSurge 1): the new
// process starts on a new port, takes the old one's place behind the
// proxy, and the old one stops after its preStop sleep. It does nothing
// when the template did not change.
func (c *Cluster) rollWebhook(ctx context.Context) (bool, error) {
	c.mu.Lock()
	old := c.webhook
	c.mu.Unlock()
	d, err := c.Client.AppsV1().Deployments(MusterNamespace).Get(ctx, WebhookDeployment, metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("reading the chart's Deployment %s: %w", WebhookDeployment, err)
	}
	if old == nil || d.Generation == old.pod.generation {
		return false, nil
	}
	if c.webhookProxy == nil {
		return false, fmt.Errorf("rolling the webhook needs the proxy in front of it (Options.MusterReplicas above 1)")
	}
	pod, err := c.readWebhookPod(ctx)
	if err != nil {
		return false, err
	}
	ports, err := freePorts(1)
	if err != nil {
		return false, err
	}
	next, err := c.startWebhook(ctx, pod, fmt.Sprintf("%s-gen%d", WebhookDeployment, pod.generation), ports[0])
	if err != nil {
		return false, err
	}
	c.webhookProxy.setBackend(0, fmt.Sprintf("127.0.0.1:%d", next.port))
	c.mu.Lock()
	c.webhook = next
	c.mu.Unlock()
	klog.FromContext(ctx).Info("Rolled the webhook", "port", next.port, "generation", pod.generation, "stoppingOldAfter", old.pod.preStop)
	// The old pod's preStop sleep, as rollReplica waits it out.
	select {
	case <-ctx.Done():
	case <-time.After(old.pod.preStop):
	}
	old.stopWebhook(false)
	c.untrack(old.proc)
	return true, nil
}

// exposeWebhookService makes the chart's muster-webhook Service an
// ExternalName for localhost, as exposeMusterService does muster-apiserver's.
func (c *Cluster) exposeWebhookService(ctx context.Context) error {
	patch := []byte(`{"spec":{"type":"ExternalName","externalName":"localhost"}}`)
	if _, err := c.Client.CoreV1().Services(MusterNamespace).Patch(ctx, manifests.WebhookService, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("pointing the chart's Service %s at loopback: %w", manifests.WebhookService, err)
	}
	return nil
}
