package cluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
)

// writeAdmissionConfig writes kube-apiserver's --admission-control-config-file:
// both webhook admission plugins read a kubeconfig whose one user, "*"
// (every webhook), presents the client certificate that Muster's
// --webhook-client-ca-file trusts, as an operator would configure a
// cluster whose Muster serves only authenticated webhook callers. A webhook
// that asks for no certificate is sent none, so other webhooks are
// unaffected.
func (c *Cluster) writeAdmissionConfig() (string, error) {
	dir := filepath.Join(c.opts.WorkDir, "kube-apiserver")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("creating %s: %w", dir, err)
	}
	certData, err := os.ReadFile(c.pki.WebhookClientCert)
	if err != nil {
		return "", fmt.Errorf("reading the webhook client certificate: %w", err)
	}
	keyData, err := os.ReadFile(c.pki.WebhookClientKey)
	if err != nil {
		return "", fmt.Errorf("reading the webhook client key: %w", err)
	}
	kubeconfig := filepath.Join(dir, "webhook-client.kubeconfig")
	cfg := clientcmdapi.NewConfig()
	cfg.AuthInfos["*"] = &clientcmdapi.AuthInfo{ClientCertificateData: certData, ClientKeyData: keyData}
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		return "", fmt.Errorf("writing %s: %w", kubeconfig, err)
	}
	path := filepath.Join(dir, "admission-configuration.yaml")
	plugin := func(name string) string {
		return fmt.Sprintf(`- name: %s
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: %q
`, name, kubeconfig)
	}
	doc := "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n" +
		plugin("ValidatingAdmissionWebhook") + plugin("MutatingAdmissionWebhook")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	return path, nil
}

// WebhookClientTLS is the TLS configuration kube-apiserver uses to call
// Muster's webhook listener: the client certificate it trusts, and the CA
// that verifies its serving certificate (Muster's own, for the Service's
// name, unless the harness issued it).
func (c *Cluster) WebhookClientTLS() (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(c.pki.WebhookClientCert, c.pki.WebhookClientKey)
	if err != nil {
		return nil, fmt.Errorf("loading the webhook client certificate: %w", err)
	}
	roots, err := certutil.NewPool(c.pki.CACert)
	if err != nil {
		return nil, err
	}
	if c.musterOwnCerts() {
		if roots, err = c.musterTrust(context.Background()); err != nil {
			return nil, err
		}
	}
	// The name kube-apiserver verifies: the webhook Service's, where the
	// chart's muster-webhook serves it.
	name := c.musterServerName()
	if c.webhook != nil {
		name = c.webhookServerName()
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: roots, ServerName: name, MinVersion: tls.VersionTLS12}, nil
}
