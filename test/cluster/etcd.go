package cluster

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	certutil "k8s.io/client-go/util/cert"
)

// startEtcd runs the etcd that kube-apiserver (and Muster, unless
// Options.MusterEtcd) stores in.
func (c *Cluster) startEtcd(ctx context.Context) error {
	url, err := c.startEtcdMember(ctx, EtcdComponent, false)
	c.EtcdURL = url
	return err
}

// startMusterEtcd runs a second etcd for Muster alone, as a deployment with
// an etcd of its own has (Options.MusterEtcd, and always when the chart
// installs Muster: its values take an etcd that speaks TLS and asks for
// client certificates, as its bundled one does).
func (c *Cluster) startMusterEtcd(ctx context.Context) error {
	url, err := c.startEtcdMember(ctx, MusterEtcdComponent, !c.opts.MusterByHand)
	c.MusterEtcdURL = url
	return err
}

// startEtcdMember runs a single-member etcd named name on two free loopback
// ports, with its data in <work dir>/<name>, and returns its client URL.
// Data is disposable, so fsync is off to keep a 2-core machine responsive.
// With secure, clients speak TLS and present a certificate of the etcd CA
// (pkiFiles.MusterEtcdCACert).
func (c *Cluster) startEtcdMember(ctx context.Context, name string, secure bool) (string, error) {
	dataDir := filepath.Join(c.opts.WorkDir, name)
	scheme := "http"
	if secure {
		scheme = "https"
	}
	start := func(ports []int) (*process, error) {
		client := fmt.Sprintf("%s://127.0.0.1:%d", scheme, ports[0])
		peer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
		args := []string{
			"--name=" + name,
			"--data-dir=" + dataDir,
			"--listen-client-urls=" + client,
			"--advertise-client-urls=" + client,
			"--listen-peer-urls=" + peer,
			"--initial-advertise-peer-urls=" + peer,
			"--initial-cluster=" + name + "=" + peer,
			"--unsafe-no-fsync=true",
			"--log-level=warn",
		}
		if secure {
			args = append(args,
				"--cert-file="+c.pki.MusterEtcdServerCert, "--key-file="+c.pki.MusterEtcdServKey,
				"--trusted-ca-file="+c.pki.MusterEtcdCACert, "--client-cert-auth=true")
		}
		return startProcess(name, c.opts.binary(EtcdBinary), args, c.logDir())
	}
	client := http.DefaultClient
	if secure {
		var err error
		if client, err = c.musterEtcdClient(); err != nil {
			return "", err
		}
	}
	ready := func(ctx context.Context, p *process, ports []int) error {
		url := fmt.Sprintf("%s://127.0.0.1:%d/health", scheme, ports[0])
		return p.waitReady(ctx, c.opts.StartTimeout, func(ctx context.Context) error { return etcdHealthy(ctx, client, url) })
	}
	p, ports, err := launch(ctx, 2, start, ready)
	if err != nil {
		return "", fmt.Errorf("starting %s: %w", name, err)
	}
	c.register(name, p, ports, start, ready)
	return fmt.Sprintf("%s://127.0.0.1:%d", scheme, ports[0]), nil
}

// musterEtcdClient is an HTTPS client that presents Muster's etcd client
// certificate and trusts the etcd CA.
func (c *Cluster) musterEtcdClient() (*http.Client, error) {
	cert, err := tls.LoadX509KeyPair(c.pki.MusterEtcdClientCert, c.pki.MusterEtcdClntKey)
	if err != nil {
		return nil, fmt.Errorf("loading the etcd client certificate: %w", err)
	}
	roots, err := certutil.NewPool(c.pki.MusterEtcdCACert)
	if err != nil {
		return nil, err
	}
	tlsConfig := &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: roots, MinVersion: tls.VersionTLS12}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConfig}}, nil
}

// etcdHealthy checks etcd's /health endpoint.
func etcdHealthy(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var health struct {
		Health string `json:"health"`
	}
	if err := json.Unmarshal(body, &health); err != nil || !strings.EqualFold(health.Health, "true") {
		return fmt.Errorf("etcd not healthy: %s", strings.TrimSpace(string(body)))
	}
	return nil
}
