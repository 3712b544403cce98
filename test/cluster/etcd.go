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

// startEtcd runs a single-member etcd on two free loopback ports. Data is
// disposable, so fsync is off to keep a 2-core machine responsive.
func (c *Cluster) startEtcd(ctx context.Context) error {
	dataDir := filepath.Join(c.opts.WorkDir, "etcd")
	start := func(ports []int) (*process, error) {
		client := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
		peer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
		args := []string{
			"--name=muster-local",
			"--data-dir=" + dataDir,
			"--listen-client-urls=" + client,
			"--advertise-client-urls=" + client,
			"--listen-peer-urls=" + peer,
			"--initial-advertise-peer-urls=" + peer,
			"--initial-cluster=muster-local=" + peer,
			"--unsafe-no-fsync=true",
			"--log-level=warn",
		}
		return startProcess("etcd", c.opts.binary(EtcdBinary), args, c.logDir())
	}
	ready := func(ctx context.Context, p *process, ports []int) error {
		url := fmt.Sprintf("http://127.0.0.1:%d/health", ports[0])
		return p.waitReady(ctx, c.opts.StartTimeout, func(ctx context.Context) error { return etcdHealthy(ctx, url) })
	}
	p, ports, err := launch(ctx, 2, start, ready)
	if err != nil {
		return fmt.Errorf("starting etcd: %w", err)
	}
	c.track(p)
	c.EtcdURL = fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	return nil
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
