package cluster

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"syscall"

	"k8s.io/client-go/dynamic"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/manifests"
)

// musterReadRole names the ClusterRole with what every k8s.io/apiserver
// based server reads from kube-apiserver (namespaces for the lifecycle
// admission plugin, admission configuration, priority and fairness).
const musterReadRole = "muster-apiserver:harness-read"

// startMuster creates Muster's identity and RBAC, applies
// Options.MusterManifests and runs the muster-apiserver binary against the
// shared etcd under /muster.
func (c *Cluster) startMuster(ctx context.Context) error {
	if !c.opts.MusterByHand {
		return c.startMusterFromChart(ctx)
	}
	if err := c.createMusterNamespace(ctx); err != nil {
		return err
	}
	for _, manifest := range c.opts.MusterManifests {
		if _, err := c.Kubectl(ctx, "apply", "-f", manifest); err != nil {
			return fmt.Errorf("applying Muster manifest: %w", err)
		}
	}
	if err := c.grantMusterDelegation(ctx); err != nil {
		return err
	}
	if err := c.createCapacityRequestPriorityClass(ctx); err != nil {
		return err
	}
	kubeconfig := filepath.Join(c.WorkDir, "muster-apiserver.kubeconfig")
	creds := credentials{certFile: c.pki.MusterClientCert, keyFile: c.pki.MusterClientKey}
	if err := writeKubeconfig(kubeconfig, c.APIServerURL, c.pki.CACert, creds); err != nil {
		return err
	}
	c.musterKubeconfig = kubeconfig
	if c.opts.MusterReplicas > 1 {
		return c.startMusterReplicas(ctx)
	}
	p, ports, err := launch(ctx, musterPorts, c.musterRunner("muster-apiserver"), c.musterReady)
	if err != nil {
		return fmt.Errorf("starting muster-apiserver: %w", err)
	}
	c.setMuster(p)
	c.musterPort, c.musterWebhookPort = ports[0], ports[1]
	c.MusterURL, c.MusterWebhookURL = c.recordMusterURLs(ports)
	return nil
}

// musterPorts is how many ports a muster-apiserver takes: the API's
// (--secure-port) and the webhook's (--webhook-port).
const musterPorts = 2

// recordMusterURLs returns the API and webhook URLs of a Muster process on
// ports, and remembers which webhook URL goes with the API URL.
func (c *Cluster) recordMusterURLs(ports []int) (api, webhook string) {
	api = fmt.Sprintf("https://127.0.0.1:%d", ports[0])
	webhook = fmt.Sprintf("https://127.0.0.1:%d", ports[1])
	if !c.currentMusterPod().servesWebhook() {
		// The chart's muster-webhook serves it, whichever replica this is.
		webhook = c.MusterWebhookURL
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.webhookURLs == nil {
		c.webhookURLs = map[string]string{}
	}
	c.webhookURLs[api] = webhook
	return api, webhook
}

// musterRunner starts a muster-apiserver process, logging to <name>.log.
func (c *Cluster) musterRunner(name string) func(ports []int) (*process, error) {
	return func(ports []int) (*process, error) { return c.runMuster(name, ports) }
}

// runMuster starts a muster-apiserver process on the given ports: the
// API's, then the webhook's, which serves only kube-apiserver's client
// certificate.
func (c *Cluster) runMuster(name string, ports []int) (*process, error) {
	if pod := c.currentMusterPod(); pod != nil {
		return startProcessEnv(name, c.opts.MusterBinary, pod.command(ports), pod.env, c.logDir())
	}
	args := []string{
		"--secure-port=" + strconv.Itoa(ports[0]),
		"--webhook-port=" + strconv.Itoa(ports[1]),
		"--webhook-client-ca-file=" + c.pki.WebhookClientCACert,
		"--bind-address=127.0.0.1",
		"--kubeconfig=" + c.musterKubeconfig,
		"--authentication-kubeconfig=" + c.musterKubeconfig,
		"--authorization-kubeconfig=" + c.musterKubeconfig,
		"--etcd-servers=" + c.musterEtcdURL(),
		"--etcd-prefix=/muster",
	}
	args = append(args, c.musterCertArgs()...)
	return startProcess(name, c.opts.MusterBinary, append(args, c.opts.MusterArgs...), c.logDir())
}

// musterEtcdURL is the etcd Muster stores in.
func (c *Cluster) musterEtcdURL() string {
	if c.MusterEtcdURL != "" {
		return c.MusterEtcdURL
	}
	return c.EtcdURL
}

// musterReady waits for the API's readiness and the webhook listener's,
// where the process serves one.
func (c *Cluster) musterReady(ctx context.Context, p *process, ports []int) error {
	if !c.currentMusterPod().servesWebhook() {
		ports = ports[:1]
	}
	return p.waitReady(ctx, c.opts.StartTimeout, func(ctx context.Context) error {
		pool, err := c.musterTrust(ctx)
		if err != nil {
			return err
		}
		for _, port := range ports {
			if err := c.httpsOKTrusting(ctx, fmt.Sprintf("https://127.0.0.1:%d/readyz", port), pool, c.musterServerName()); err != nil {
				return err
			}
		}
		return nil
	})
}

func (c *Cluster) setMuster(p *process) {
	c.track(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.muster = p
}

// KillMuster kills the muster-apiserver process with SIGKILL, as a crash
// would: no graceful shutdown, no Lease release. With Options.MusterReplicas
// above 1 it does nothing: see KillMusterReplica.
func (c *Cluster) KillMuster() {
	c.mu.Lock()
	p := c.muster
	c.mu.Unlock()
	if p == nil {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// RestartMuster starts muster-apiserver again on its old port, which the
// APIService and the webhooks point at, and waits until it is ready. With
// Options.MusterReplicas above 1, use RestartMusterReplica.
func (c *Cluster) RestartMuster(ctx context.Context) error {
	if len(c.replicas) > 0 {
		return fmt.Errorf("RestartMuster on a cluster of %d Muster replicas; use RestartMusterReplica", len(c.replicas))
	}
	c.KillMuster()
	ports := []int{c.musterPort, c.musterWebhookPort}
	p, err := c.runMuster("muster-apiserver", ports)
	if err != nil {
		return err
	}
	if err := c.musterReady(ctx, p, ports); err != nil {
		p.stop()
		return fmt.Errorf("restarting muster-apiserver: %w", err)
	}
	c.setMuster(p)
	// The aggregator marked the APIService unavailable while Muster was
	// down, and answers 503 until its availability check passes again: wait
	// for that, so that the next test does not meet the gap.
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		return fmt.Errorf("creating dynamic client: %w", err)
	}
	if err := waitAPIServiceAvailable(ctx, dyn.Resource(apiServiceResource), c.opts.StartTimeout); err != nil {
		return err
	}
	return c.waitKubectlServes(ctx)
}

// createCapacityRequestPriorityClass creates the PriorityClass every
// capacity-request pod names, as manifests.PriorityClassFile does:
// kube-apiserver refuses a pod whose class is missing, and Muster's role
// may not create it.
func (c *Cluster) createCapacityRequestPriorityClass(ctx context.Context) error {
	pc := manifests.PriorityClass()
	if _, err := c.Client.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating PriorityClass %s: %w", pc.Name, err)
	}
	return nil
}

// createMusterNamespace creates Muster's namespace and service account.
// The harness's client certificate for Muster carries that service
// account's user name and groups.
func (c *Cluster) createMusterNamespace(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: MusterNamespace}}
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", MusterNamespace, err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: MusterService, Namespace: MusterNamespace}}
	if _, err := c.Client.CoreV1().ServiceAccounts(MusterNamespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating service account for Muster: %w", err)
	}
	return nil
}

// grantMusterDelegation grants Muster what any aggregated API server needs,
// whatever Options.MusterManifests grant besides: delegated authentication
// and authorization, reading the front-proxy CA from kube-system, and the
// reads of k8s.io/apiserver's admission and flow-control machinery. Objects
// of the same name from the manifests are left as they are.
func (c *Cluster) grantMusterDelegation(ctx context.Context) error {
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: MusterService, Namespace: MusterNamespace}}
	readRole := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: musterReadRole},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"flowcontrol.apiserver.k8s.io"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}},
		},
	}
	clusterBinding := func(name, role string) *rbacv1.ClusterRoleBinding {
		return &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   subject,
		}
	}
	authReader := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "muster-apiserver:extension-apiserver-authentication-reader", Namespace: metav1.NamespaceSystem},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "extension-apiserver-authentication-reader"},
		Subjects:   subject,
	}

	rbac := c.Client.RbacV1()
	creates := []struct {
		what   string
		create func() error
	}{
		{"read role", func() error { _, err := rbac.ClusterRoles().Create(ctx, readRole, metav1.CreateOptions{}); return err }},
		{"read binding", func() error {
			_, err := rbac.ClusterRoleBindings().Create(ctx, clusterBinding(musterReadRole, musterReadRole), metav1.CreateOptions{})
			return err
		}},
		{"auth-delegator binding", func() error {
			b := clusterBinding("muster-apiserver:system:auth-delegator", "system:auth-delegator")
			_, err := rbac.ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{})
			return err
		}},
		{"authentication reader binding", func() error {
			_, err := rbac.RoleBindings(metav1.NamespaceSystem).Create(ctx, authReader, metav1.CreateOptions{})
			return err
		}},
	}
	for _, cr := range creates {
		if err := cr.create(); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating Muster %s: %w", cr.what, err)
		}
	}
	return nil
}

// StartMusterReplica starts a second muster-apiserver on the same etcd and
// with the same identity, as the Deployment's second replica would run. It
// serves the API and the webhook too, but the aggregator and the webhooks
// keep pointing at the first. It returns the replica's API URL (which
// PointWebhooksAt accepts) and a func that stops it; the cluster stops it
// too.
func (c *Cluster) StartMusterReplica(ctx context.Context) (string, func(), error) {
	p, ports, err := launch(ctx, musterPorts, c.musterRunner("muster-apiserver-replica"), c.musterReady)
	if err != nil {
		return "", nil, fmt.Errorf("starting a muster-apiserver replica: %w", err)
	}
	c.track(p)
	api, _ := c.recordMusterURLs(ports)
	return api, p.stop, nil
}
