package cluster

import (
	"context"
	"crypto/x509"
	"fmt"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/muster-dev/muster/pkg/certs"
)

// MusterCertSecret is the Secret a Muster with Options.MusterInternalCerts
// keeps its certificates in: the server's default name.
const MusterCertSecret = "muster-apiserver-certs"

// musterCertArgs are the flags that give Muster its serving certificate:
// the harness's own, or, with Options.MusterInternalCerts, Muster's
// management of its own, for the names the aggregator (the Service) and
// the webhooks (a URL on 127.0.0.1) verify.
func (c *Cluster) musterCertArgs() []string {
	if !c.opts.MusterInternalCerts {
		return []string{
			"--tls-cert-file=" + c.pki.MusterServingCert,
			"--tls-private-key-file=" + c.pki.MusterServKey,
		}
	}
	args := []string{
		"--cert-management=internal",
		"--cert-secret=" + MusterNamespace + "/" + MusterCertSecret,
		"--cert-service=" + MusterNamespace + "/" + MusterService,
		"--cert-extra-sans=127.0.0.1,localhost",
	}
	if c.opts.MusterCertLifetime > 0 {
		args = append(args, "--cert-lifetime="+c.opts.MusterCertLifetime.String())
	}
	if c.opts.MusterCACertLifetime > 0 {
		args = append(args, "--cert-ca-lifetime="+c.opts.MusterCACertLifetime.String())
	}
	return args
}

// musterCABundle is the caBundle the harness registers Muster with: its
// own CA, or none with Options.MusterInternalCerts, where Muster writes it.
func (c *Cluster) musterCABundle() ([]byte, error) {
	if c.musterOwnCerts() {
		return nil, nil
	}
	caBundle, err := os.ReadFile(c.pki.CACert)
	if err != nil {
		return nil, fmt.Errorf("reading CA bundle: %w", err)
	}
	return caBundle, nil
}

// musterTrust is the pool the harness verifies Muster's listeners with:
// the harness's CA, or the bundle Muster keeps in its Secret.
func (c *Cluster) musterTrust(ctx context.Context) (*x509.CertPool, error) {
	if !c.musterOwnCerts() {
		return c.caPool()
	}
	bundle, err := c.MusterCertBundle(ctx)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(bundle) {
		return nil, fmt.Errorf("Secret %s/%s holds no CA bundle yet", MusterNamespace, MusterCertSecret)
	}
	return pool, nil
}

// musterOwnCerts reports whether Muster manages its own certificates: as
// the chart installs it, or by hand with Options.MusterInternalCerts.
func (c *Cluster) musterOwnCerts() bool {
	return !c.opts.MusterByHand || c.opts.MusterInternalCerts
}

// musterServerName is the name a client verifies Muster's serving
// certificate for when it dials a process on loopback: the Service's, as
// the aggregator and the webhooks do; empty (the address) for the
// harness's own certificate, which carries 127.0.0.1.
func (c *Cluster) musterServerName() string {
	if c.opts.MusterByHand {
		return ""
	}
	return MusterService + "." + MusterNamespace + ".svc"
}

// MusterCertBundle returns the CA bundle in the Secret of a Muster with
// Options.MusterInternalCerts.
func (c *Cluster) MusterCertBundle(ctx context.Context) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	s, err := c.Client.CoreV1().Secrets(MusterNamespace).Get(ctx, MusterCertSecret, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading Muster's certificates: %w", err)
	}
	return s.Data[certs.BundleKey], nil
}

// caPool is the harness's cluster CA.
func (c *Cluster) caPool() (*x509.CertPool, error) {
	caPEM, err := os.ReadFile(c.pki.CACert)
	if err != nil {
		return nil, fmt.Errorf("reading CA: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	return pool, nil
}

// MusterConfig is the admin's client config for the muster-apiserver at
// base (MusterURL, a replica's URL), dialled directly rather than through
// the aggregator: it trusts the CA bundle Muster keeps in its Secret, for
// the Service's name, as the aggregator does.
func (c *Cluster) MusterConfig(base string) (*rest.Config, error) {
	cfg := rest.CopyConfig(c.Config)
	cfg.Host = base
	if !c.musterOwnCerts() {
		return cfg, nil
	}
	bundle, err := c.MusterCertBundle(context.Background())
	if err != nil {
		return nil, err
	}
	cfg.CAFile, cfg.CAData = "", bundle
	cfg.ServerName = c.musterServerName()
	return cfg, nil
}
