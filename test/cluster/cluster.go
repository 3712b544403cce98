package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// Cluster is a running local control plane.
type Cluster struct {
	opts Options
	pki  *pkiFiles

	// WorkDir holds pki/, logs/, etcd data and the kubeconfigs.
	WorkDir string
	// Kubeconfig is the path of an admin (system:masters) kubeconfig.
	Kubeconfig string
	// Config and Client are admin clients for kube-apiserver.
	Config *rest.Config
	Client kubernetes.Interface
	// APIServerURL is kube-apiserver's https://127.0.0.1:<port>.
	APIServerURL string
	// KubeVersion is the release of kube-apiserver, as it reports it.
	KubeVersion *version.Version
	// EtcdURL is etcd's client URL, shared by kube-apiserver and Muster
	// unless Options.MusterEtcd gives Muster its own at MusterEtcdURL.
	EtcdURL       string
	MusterEtcdURL string
	// MusterURL is Muster's own https://127.0.0.1:<port>, empty when Muster
	// is not run.
	MusterURL string
	// MusterWebhookURL is Muster's webhook listener (--webhook-port), which
	// the webhook configurations point at: the chart's muster-webhook
	// Deployment's process (or the proxy in front of it).
	MusterWebhookURL string

	musterPort        int
	musterWebhookPort int
	// webhookURLs maps each Muster process's API URL to its webhook
	// listener's, for PointWebhooksAt.
	webhookURLs map[string]string
	// admissionConfig is kube-apiserver's --admission-control-config-file.
	admissionConfig string
	// webhookValidatesUpdates is set on clusters that do not serve
	// ValidatingAdmissionPolicy: the validating webhook then checks pod
	// updates in the policy's place.
	webhookValidatesUpdates bool
	musterKubeconfig        string
	muster                  *process
	// musterPod is the chart's pod template, as the harness runs it; nil
	// with Options.MusterByHand.
	musterPod *podProcess
	// helmCommand is the helm install command line the harness ran.
	helmCommand string

	mu         sync.Mutex
	procs      []*process
	components map[string]*component
	replicas   []*musterReplica
	proxy      *serviceProxy
	// webhookProxy is in front of the webhook's process (the chart's
	// muster-webhook), or of the replicas' webhook ports by hand.
	webhookProxy *serviceProxy
	// webhook is the chart's muster-webhook process; nil by hand.
	webhook  *webhookProcess
	stopOnce sync.Once

	// frameworks are the Frameworks whose controllers run (StartFramework).
	frameworksMu sync.Mutex
	frameworks   map[Framework]bool
}

// Start brings up a cluster and returns once every component is ready: the
// fake nodes are Ready and, if Options.MusterBinary is set, Muster's API
// answers through kube-apiserver. A reused work dir loses its old etcd data
// and logs. On error everything started is stopped.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if missing := opts.MissingBinaries(); len(missing) > 0 {
		return nil, fmt.Errorf("missing binaries %s; run hack/build-tools.sh", strings.Join(missing, ", "))
	}
	c := &Cluster{opts: opts, WorkDir: opts.WorkDir}
	if err := c.start(ctx); err != nil {
		c.Stop()
		return nil, fmt.Errorf("starting local cluster (logs in %s): %w", c.logDir(), err)
	}
	return c, nil
}

// start runs the steps of Start in order.
func (c *Cluster) start(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	// A work dir may hold a previous run: its data and logs are stale.
	for _, dir := range []string{c.logDir(), filepath.Join(c.WorkDir, EtcdComponent), filepath.Join(c.WorkDir, MusterEtcdComponent)} {
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("clearing previous run: %w", err)
		}
	}
	if err := os.MkdirAll(c.logDir(), 0o755); err != nil {
		return fmt.Errorf("creating log dir: %w", err)
	}
	pki, err := generatePKI(filepath.Join(c.WorkDir, "pki"))
	if err != nil {
		return fmt.Errorf("generating certificates: %w", err)
	}
	c.pki = pki

	steps := []step{
		{"etcd", c.startEtcd},
		{"kube-apiserver", c.startKubeAPIServer},
		{"kube-controller-manager", c.startControllerManager},
		{"kube-scheduler", c.startScheduler},
		{"terminal phases", c.registerTerminalPhasePolicy},
		{"kwok", c.startKwok},
		{"fake nodes", c.createNodes},
	}
	if c.opts.JobSet {
		steps = append(steps, step{"jobset", c.startJobSet})
	}
	if c.opts.Karpenter {
		steps = append(steps, step{"karpenter", c.startKarpenter})
	}
	for _, f := range c.opts.Frameworks {
		steps = append(steps, step{string(f), func(ctx context.Context) error { return c.StartFramework(ctx, f) }})
	}
	if c.opts.ProvisioningRequestCRD {
		steps = append(steps, step{"provisioningrequest crd", c.installProvisioningRequestCRD})
	}
	if c.opts.MusterBinary != "" && (c.opts.MusterEtcd || !c.opts.MusterByHand) {
		steps = append(steps, step{"muster-etcd", c.startMusterEtcd})
	}
	if c.opts.MusterBinary != "" {
		steps = append(steps, step{"muster-apiserver", c.startMuster}, step{"aggregation", c.registerMuster}, step{"pod webhook", c.registerWebhooks})
	}
	for _, step := range steps {
		began := time.Now()
		if err := step.run(ctx); err != nil {
			return err
		}
		logger.Info("Started", "component", step.name, "took", time.Since(began).Round(time.Millisecond))
	}
	return nil
}

// step is one named stage of Start.
type step struct {
	name string
	run  func(context.Context) error
}

// Stop stops every process, newest first, and waits for them to exit. It
// is safe to call more than once. The work dir is left for inspection.
func (c *Cluster) Stop() {
	c.stopOnce.Do(func() {
		c.mu.Lock()
		procs := c.procs
		c.procs = nil
		w := c.webhook
		c.mu.Unlock()
		if w != nil {
			w.stopRefresh()
		}
		for i := len(procs) - 1; i >= 0; i-- {
			procs[i].stop()
		}
		if c.webhookProxy != nil {
			c.webhookProxy.close()
		}
		if c.proxy != nil {
			c.proxy.close()
		}
	})
}

// Exited returns the names of processes that have stopped on their own,
// which means the cluster is broken.
func (c *Cluster) Exited() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var names []string
	for _, p := range c.procs {
		if p.exited() {
			names = append(names, p.name)
		}
	}
	return names
}

// LogPath returns the log file of a component (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, kwok, muster-apiserver).
func (c *Cluster) LogPath(component string) string {
	return filepath.Join(c.logDir(), component+".log")
}

// Binary is the path of the named binary of the cluster's BinDir, such as
// KubectlBinary.
func (c *Cluster) Binary(name string) string { return c.opts.binary(name) }

// Kubectl runs bin/kubectl with the admin kubeconfig and returns its
// combined output.
func (c *Cluster) Kubectl(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, c.opts.binary(KubectlBinary), append([]string{"--kubeconfig=" + c.Kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return out, nil
}

// track records a started process so Stop ends it.
func (c *Cluster) track(p *process) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.procs = append(c.procs, p)
}

// logDir is where each process writes <name>.log.
func (c *Cluster) logDir() string {
	return filepath.Join(c.WorkDir, "logs")
}
