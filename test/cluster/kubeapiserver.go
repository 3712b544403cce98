package cluster

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"

	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// serviceCIDR is the Service range. Nothing routes to it: there is no
// kube-proxy, and the aggregator reaches Muster through an ExternalName
// Service instead.
const serviceCIDR = "10.96.0.0/16"

// kubeAPIServerArgs are the flags for a loopback-only kube-apiserver that
// authenticates clients by certificate, authorizes with RBAC and can proxy
// to aggregated API servers.
func (c *Cluster) kubeAPIServerArgs(port int) []string {
	pki := c.pki
	args := []string{
		"--etcd-servers=" + c.EtcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		// The endpoint reconciler would publish 127.0.0.1 as the endpoint of
		// default/kubernetes, which Endpoints validation rejects.
		"--endpoint-reconciler-type=none",
		"--cert-dir=" + filepath.Join(c.opts.WorkDir, "kube-apiserver"),
		"--tls-cert-file=" + pki.APIServerCert,
		"--tls-private-key-file=" + pki.APIServerKey,
		"--client-ca-file=" + pki.CACert,
		"--authorization-mode=Node,RBAC",
		"--service-cluster-ip-range=" + serviceCIDR,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + pki.ServiceAccountPub,
		"--service-account-signing-key-file=" + pki.ServiceAccountKey,
		"--requestheader-client-ca-file=" + pki.FrontProxyCACert,
		"--requestheader-allowed-names=" + FrontProxyClientName,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + pki.FrontProxyCert,
		"--proxy-client-key-file=" + pki.FrontProxyKey,
		// Endpoint routing cannot resolve ExternalName Services (see
		// k8s.io/apiserver/pkg/util/proxy.ResolveEndpoint); cluster routing
		// resolves them to externalName:port, which is how the aggregator
		// reaches a Muster listening on loopback.
		"--enable-aggregator-routing=false",
		"--allow-privileged=true",
		// Webhook calls present a client certificate to Muster's webhook
		// listener, which serves only callers that do (admission.go).
		"--admission-control-config-file=" + c.admissionConfig,
	}
	args = append(args, apiServerFlagsFor(c.KubeVersion)...)
	return append(args, c.opts.APIServerArgs...)
}

// startKubeAPIServer runs kube-apiserver, waits for /readyz and writes the
// admin kubeconfig.
func (c *Cluster) startKubeAPIServer(ctx context.Context) error {
	v, err := binaryVersion(ctx, c.opts.binary(KubeAPIServerBinary))
	if err != nil {
		return fmt.Errorf("finding kube-apiserver's release: %w", err)
	}
	c.KubeVersion = v
	if c.admissionConfig, err = c.writeAdmissionConfig(); err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Starting kube-apiserver", "version", v, "versionedFlags", apiServerFlagsFor(v))
	start := func(ports []int) (*process, error) {
		return startProcess("kube-apiserver", c.opts.binary(KubeAPIServerBinary), c.kubeAPIServerArgs(ports[0]), c.logDir())
	}
	ready := func(ctx context.Context, p *process, ports []int) error {
		server := fmt.Sprintf("https://127.0.0.1:%d", ports[0])
		if err := c.connect(server); err != nil {
			return err
		}
		return p.waitReady(ctx, c.opts.StartTimeout, func(ctx context.Context) error {
			return c.Client.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error()
		})
	}
	p, ports, err := launch(ctx, 1, start, ready)
	if err != nil {
		return fmt.Errorf("starting kube-apiserver: %w", err)
	}
	c.register(KubeAPIServerComponent, p, ports, start, ready)
	c.APIServerURL = fmt.Sprintf("https://127.0.0.1:%d", ports[0])
	return nil
}

// connect writes the admin kubeconfig for server and builds clients from it.
func (c *Cluster) connect(server string) error {
	c.Kubeconfig = filepath.Join(c.opts.WorkDir, "kubeconfig")
	creds := credentials{certFile: c.pki.AdminCert, keyFile: c.pki.AdminKey}
	if err := writeKubeconfig(c.Kubeconfig, server, c.pki.CACert, creds); err != nil {
		return err
	}
	cfg, err := restConfigFromFile(c.Kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating admin client: %w", err)
	}
	c.Config, c.Client = cfg, client
	return nil
}
