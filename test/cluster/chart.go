package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// Names of the chart install the harness makes.
const (
	// ReleaseName is the helm release of charts/muster in MusterNamespace.
	ReleaseName = "muster"
	// ChartDir is the chart, relative to the repository root.
	ChartDir = "charts/muster"
	// HelmBinary is helm, in Options.BinDir or the repository's bin/.
	HelmBinary = "helm"
	// HarnessRunsLabel is the node label in the chart's nodeSelector:
	// no node carries it, so the chart's pods stay Pending, and the
	// harness runs their processes (kwok nodes run no containers).
	HarnessRunsLabel = "muster.dev/harness-runs-this-pod"
	// musterEtcdClientSecret and musterWebhookClientCASecret are the
	// Secrets the chart mounts for etcd.mode external and
	// webhook.clientAuth, which an operator creates before installing.
	musterEtcdClientSecret      = "muster-etcd-client"
	musterWebhookClientCASecret = "muster-webhook-client-ca"
)

// ChartValues are the values the harness installs charts/muster with,
// for a Service whose API and webhook ports are apiPort and webhookPort.
// Each differs from the chart's default only where the local cluster
// forces it (test/cluster/doc.go says why, one by one).
func (c *Cluster) ChartValues(apiPort, webhookPort int) map[string]any {
	internal := map[string]any{}
	if c.opts.MusterCertLifetime > 0 {
		internal["lifetime"] = c.opts.MusterCertLifetime.String()
	}
	if c.opts.MusterCACertLifetime > 0 {
		internal["caLifetime"] = c.opts.MusterCACertLifetime.String()
	}
	extraArgs := append([]string{}, c.opts.MusterArgs...)
	return map[string]any{
		"replicas":     c.opts.MusterReplicas,
		"nodeSelector": map[string]any{HarnessRunsLabel: "true"},
		"service":      map[string]any{"port": apiPort, "webhookPort": webhookPort},
		"etcd": map[string]any{
			"mode": "external",
			"external": map[string]any{
				"endpoints":  []string{c.musterEtcdURL()},
				"secretName": musterEtcdClientSecret,
			},
		},
		"preparePolicy": map[string]any{"enabled": c.opts.PreparePolicy},
		"certificates":  map[string]any{"mode": "internal", "internal": internal},
		"extraArgs":     extraArgs,
	}
}

// helmBinary is bin/helm: Options.BinDir's, else the repository's (a
// BinDir of another Kubernetes release holds the control plane only).
func (c *Cluster) helmBinary() (string, error) {
	if p := c.opts.binary(HelmBinary); isExecutable(p) {
		return p, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	p := filepath.Join(root, "bin", HelmBinary)
	if !isExecutable(p) {
		return "", fmt.Errorf("no helm in %s or %s; run make helm", c.opts.BinDir, filepath.Dir(p))
	}
	return p, nil
}

func isExecutable(path string) bool {
	info, err := os.Stat(path)
	return err == nil && !info.IsDir() && info.Mode()&0o111 != 0
}

// Helm runs bin/helm with the admin kubeconfig in MusterNamespace, logs
// the command and returns its combined output.
func (c *Cluster) Helm(ctx context.Context, args ...string) ([]byte, error) {
	helm, err := c.helmBinary()
	if err != nil {
		return nil, err
	}
	args = append(args, "--namespace", MusterNamespace, "--kubeconfig", c.Kubeconfig)
	klog.FromContext(ctx).Info("Running helm", "command", helm+" "+strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, helm, args...)
	// helm keeps its cache and config under $HOME; a work dir of its own
	// keeps parallel clusters apart.
	home := filepath.Join(c.WorkDir, "helm")
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config", "HELM_DATA_HOME="+home+"/data")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("helm %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return out, nil
}

// writeChartValues writes values as a values file (JSON is YAML) in the
// work dir and returns its path.
func (c *Cluster) writeChartValues(name string, values map[string]any) (string, error) {
	data, err := json.MarshalIndent(values, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encoding chart values: %w", err)
	}
	path := filepath.Join(c.WorkDir, name)
	if err := os.WriteFile(path, append(data, '\n'), 0o600); err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	return path, nil
}

// ChartPath is charts/muster in the repository.
func ChartPath() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, ChartDir), nil
}

// HelmInstallCommand is the helm command line the harness installs Muster
// with (make run prints it).
func (c *Cluster) HelmInstallCommand() string { return c.helmCommand }

// installChart creates what an operator creates before installing (the
// namespace, and the Secrets of the external etcd's client certificate
// and of the webhook client CA), then runs helm install of charts/muster
// with ChartValues.
func (c *Cluster) installChart(ctx context.Context, apiPort, webhookPort int) error {
	if err := c.createChartPrerequisites(ctx); err != nil {
		return err
	}
	values, err := c.writeChartValues("muster-values.yaml", c.ChartValues(apiPort, webhookPort))
	if err != nil {
		return err
	}
	chart, err := ChartPath()
	if err != nil {
		return err
	}
	args := []string{"install", ReleaseName, chart, "--create-namespace", "--values", values}
	helm, _ := c.helmBinary()
	c.helmCommand = fmt.Sprintf("%s %s --namespace %s --kubeconfig %s", helm, strings.Join(args, " "), MusterNamespace, c.Kubeconfig)
	if out, err := c.Helm(ctx, args...); err != nil {
		return fmt.Errorf("installing the chart: %w\n%s", err, out)
	}
	return nil
}

// createChartPrerequisites creates MusterNamespace and the Secrets the
// chart's values name: muster-etcd-client (the CA of Muster's etcd and
// the client certificate it asks for, as docs/install.md says for an
// external etcd) and
// muster-webhook-client-ca (the CA of the client certificate
// kube-apiserver presents to the webhook, admission.go).
func (c *Cluster) createChartPrerequisites(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: MusterNamespace}}
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", MusterNamespace, err)
	}
	read := func(paths map[string]string) (map[string][]byte, error) {
		data := map[string][]byte{}
		for key, path := range paths {
			b, err := os.ReadFile(path)
			if err != nil {
				return nil, fmt.Errorf("reading %s: %w", path, err)
			}
			data[key] = b
		}
		return data, nil
	}
	secrets := []struct {
		name  string
		files map[string]string
	}{
		{musterEtcdClientSecret, map[string]string{"ca.crt": c.pki.MusterEtcdCACert, "tls.crt": c.pki.MusterEtcdClientCert, "tls.key": c.pki.MusterEtcdClntKey}},
	}
	// webhook.clientAuth.mode Auto, the chart's default, turns client
	// certificates on because this Secret exists.
	if !c.opts.AnonymousWebhook {
		secrets = append(secrets, struct {
			name  string
			files map[string]string
		}{musterWebhookClientCASecret, map[string]string{"ca.crt": c.pki.WebhookClientCACert}})
	}
	for _, s := range secrets {
		data, err := read(s.files)
		if err != nil {
			return err
		}
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: MusterNamespace}, Data: data}
		if _, err := c.Client.CoreV1().Secrets(MusterNamespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating Secret %s: %w", s.name, err)
		}
	}
	return nil
}
