package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// schedulerConfig is the KubeSchedulerConfiguration: one scheduler, no
// leader election, so several clusters never wait on each other. Its client
// may send 1000 requests a second (the default is 50), so that binding
// never throttles a load run (make perf) before the API server does.
const schedulerConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %q
  qps: 1000
  burst: 2000
leaderElection:
  leaderElect: false
`

// startScheduler runs kube-scheduler as the system:kube-scheduler user, so
// it gets exactly the RBAC a real scheduler has.
func (c *Cluster) startScheduler(ctx context.Context) error {
	kubeconfig := filepath.Join(c.opts.WorkDir, "kube-scheduler.kubeconfig")
	creds := credentials{certFile: c.pki.SchedulerCert, keyFile: c.pki.SchedulerKey}
	if err := writeKubeconfig(kubeconfig, c.APIServerURL, c.pki.CACert, creds); err != nil {
		return err
	}
	configPath := filepath.Join(c.opts.WorkDir, "kube-scheduler.yaml")
	if err := os.WriteFile(configPath, fmt.Appendf(nil, schedulerConfig, kubeconfig), 0o600); err != nil {
		return fmt.Errorf("writing scheduler config: %w", err)
	}
	start := func(ports []int) (*process, error) {
		args := []string{
			"--config=" + configPath,
			"--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(ports[0]),
			"--tls-cert-file=" + c.pki.LocalServingCert,
			"--tls-private-key-file=" + c.pki.LocalServKey,
		}
		return startProcess("kube-scheduler", c.opts.binary(SchedulerBinary), append(args, c.opts.SchedulerArgs...), c.logDir())
	}
	ready := func(ctx context.Context, p *process, ports []int) error {
		url := fmt.Sprintf("https://127.0.0.1:%d/healthz", ports[0])
		return p.waitReady(ctx, c.opts.StartTimeout, func(ctx context.Context) error { return c.httpsOK(ctx, url) })
	}
	p, _, err := launch(ctx, 1, start, ready)
	if err != nil {
		return fmt.Errorf("starting kube-scheduler: %w", err)
	}
	c.track(p)
	return nil
}

// httpsOK GETs url as the admin, trusting only the cluster CA, and
// expects 200.
func (c *Cluster) httpsOK(ctx context.Context, url string) error {
	pool, err := c.caPool()
	if err != nil {
		return err
	}
	return c.httpsOKTrusting(ctx, url, pool, "")
}

// httpsOKTrusting GETs url as the admin, trusting pool for serverName
// (empty: the URL's host), and expects 200.
func (c *Cluster) httpsOKTrusting(ctx context.Context, url string, pool *x509.CertPool, serverName string) error {
	admin, err := tls.LoadX509KeyPair(c.pki.AdminCert, c.pki.AdminKey)
	if err != nil {
		return fmt.Errorf("loading admin certificate: %w", err)
	}
	tlsConfig := &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{admin}, ServerName: serverName, MinVersion: tls.VersionTLS12}
	client := &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: tlsConfig},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}
