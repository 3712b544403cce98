package cluster

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// Annotations that select the nodes kwok manages and steer the simulated
// pod lifecycle (see stages/*.yaml).
const (
	// KwokNodeAnnotation marks a node as fake; kwok manages only those.
	KwokNodeAnnotation = "kwok.x-k8s.io/node"
	// RunForAnnotation makes a running pod exit after the given duration.
	RunForAnnotation = "sim.muster.dev/run-for"
	// ExitCodeAnnotation is the exit code of a pod that ends by run-for;
	// non-zero makes it Failed instead of Succeeded.
	ExitCodeAnnotation = "sim.muster.dev/exit-code"
	// StartAfterAnnotation delays the start of a bound pod.
	StartAfterAnnotation = "sim.muster.dev/start-after"
	// StopAfterAnnotation makes a deleted pod exit that long after deletion
	// instead of at the end of its grace period.
	StopAfterAnnotation = "sim.muster.dev/stop-after"
)

// stageFiles are the kwok Stages that simulate nodes and pods.
//
//go:embed stages/*.yaml
var stageFiles embed.FS

// writeKwokConfig concatenates the embedded Stages into one kwok config.
func writeKwokConfig(path string) error {
	names, err := fs.Glob(stageFiles, "stages/*.yaml")
	if err != nil {
		return fmt.Errorf("listing kwok stages: %w", err)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	for _, name := range names {
		data, err := stageFiles.ReadFile(name)
		if err != nil {
			return fmt.Errorf("reading kwok stage %s: %w", name, err)
		}
		buf.WriteString("---\n")
		buf.Write(data)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		return fmt.Errorf("writing kwok config: %w", err)
	}
	return nil
}

// startKwok runs kwok for the nodes annotated as fake. Its server serves
// the kubelet API for those nodes (logs, exec) and its health check, on a
// loopback port that the nodes advertise as their kubelet port.
func (c *Cluster) startKwok(ctx context.Context) error {
	configPath := filepath.Join(c.opts.WorkDir, "kwok.yaml")
	if err := writeKwokConfig(configPath); err != nil {
		return err
	}
	start := func(ports []int) (*process, error) {
		args := []string{
			"--kubeconfig=" + c.Kubeconfig,
			"--config=" + configPath,
			"--manage-all-nodes=false",
			"--manage-nodes-with-annotation-selector=" + KwokNodeAnnotation + "=fake",
			fmt.Sprintf("--server-address=127.0.0.1:%d", ports[0]),
			fmt.Sprintf("--node-port=%d", ports[0]),
			"--node-ip=127.0.0.1",
			"--tls-cert-file=" + c.pki.LocalServingCert,
			"--tls-private-key-file=" + c.pki.LocalServKey,
		}
		return startProcess("kwok", c.opts.binary(KwokBinary), args, c.logDir())
	}
	ready := func(ctx context.Context, p *process, ports []int) error {
		url := fmt.Sprintf("https://127.0.0.1:%d/healthz", ports[0])
		return p.waitReady(ctx, c.opts.StartTimeout, func(ctx context.Context) error { return c.httpsOK(ctx, url) })
	}
	p, ports, err := launch(ctx, 1, start, ready)
	if err != nil {
		return fmt.Errorf("starting kwok: %w", err)
	}
	c.register(KwokComponent, p, ports, start, ready)
	return nil
}
