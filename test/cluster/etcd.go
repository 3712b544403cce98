package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
)

// startEtcd runs the etcd that kube-apiserver (and Muster, unless
// Options.MusterEtcd) stores in.
func (c *Cluster) startEtcd(ctx context.Context) error {
	url, err := c.startEtcdMember(ctx, EtcdComponent)
	c.EtcdURL = url
	return err
}

// startMusterEtcd runs a second etcd for Muster alone, as a deployment with
// an etcd of its own has (Options.MusterEtcd).
func (c *Cluster) startMusterEtcd(ctx context.Context) error {
	url, err := c.startEtcdMember(ctx, MusterEtcdComponent)
	c.MusterEtcdURL = url
	return err
}

// startEtcdMember runs a single-member etcd named name on two free loopback
// ports, with its data in <work dir>/<name>, and returns its client URL.
// Data is disposable, so fsync is off to keep a 2-core machine responsive.
func (c *Cluster) startEtcdMember(ctx context.Context, name string) (string, error) {
	dataDir := filepath.Join(c.opts.WorkDir, name)
	start := func(ports []int) (*process, error) {
		client := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
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
		return startProcess(name, c.opts.binary(EtcdBinary), args, c.logDir())
	}
	ready := func(ctx context.Context, p *process, ports []int) error {
		url := fmt.Sprintf("http://127.0.0.1:%d/health", ports[0])
		return p.waitReady(ctx, c.opts.StartTimeout, func(ctx context.Context) error { return etcdHealthy(ctx, url) })
	}
	p, ports, err := launch(ctx, 2, start, ready)
	if err != nil {
		return "", fmt.Errorf("starting %s: %w", name, err)
	}
	c.register(name, p, ports, start, ready)
	return fmt.Sprintf("http://127.0.0.1:%d", ports[0]), nil
}

// etcdHealthy checks etcd's /health endpoint.
func etcdHealthy(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
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
