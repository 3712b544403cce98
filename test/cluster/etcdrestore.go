package cluster

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/muster-dev/muster/pkg/cmd/backup"
	"github.com/muster-dev/muster/pkg/cmd/restore"
)

// BackupMusterEtcd saves a snapshot of Muster's own etcd
// (Options.MusterEtcd) into dir with `muster-apiserver backup`'s code, and
// returns its path.
func (c *Cluster) BackupMusterEtcd(ctx context.Context, dir string) (string, error) {
	if c.MusterEtcdURL == "" {
		return "", fmt.Errorf("this cluster has no etcd of Muster's own (Options.MusterEtcd)")
	}
	o := backup.DefaultOptions()
	o.Servers, o.Dir = []string{c.MusterEtcdURL}, dir
	if strings.HasPrefix(c.MusterEtcdURL, "https://") {
		// The client certificate the chart's Secret muster-etcd-client
		// holds, as the chart's backup CronJob mounts it.
		o.CAFile, o.CertFile, o.KeyFile = c.pki.MusterEtcdCACert, c.pki.MusterEtcdClientCert, c.pki.MusterEtcdClntKey
	}
	r, err := backup.Run(ctx, o, time.Now())
	if err != nil {
		return "", fmt.Errorf("backing up Muster's etcd: %w", err)
	}
	return r.Path, nil
}

// RestoreMusterEtcd does what docs/etcd.md tells an operator to do, on the
// local cluster: Muster stopped, its etcd stopped, the member's data made
// anew from snapshot with `muster-apiserver restore`'s code (its old data
// moved aside), etcd started on it, then Muster.
func (c *Cluster) RestoreMusterEtcd(ctx context.Context, snapshot string) error {
	c.mu.Lock()
	comp := c.components[MusterEtcdComponent]
	c.mu.Unlock()
	if comp == nil {
		return fmt.Errorf("this cluster has no etcd of Muster's own (Options.MusterEtcd)")
	}
	c.KillMuster()
	if err := c.Kill(MusterEtcdComponent); err != nil {
		return err
	}
	peer := fmt.Sprintf("http://127.0.0.1:%d", comp.ports[1])
	o := restore.DefaultOptions()
	o.Snapshot, o.DataDir = snapshot, filepath.Join(c.opts.WorkDir, MusterEtcdComponent)
	o.Name, o.InitialCluster, o.PeerURL = MusterEtcdComponent, MusterEtcdComponent+"="+peer, peer
	if _, err := restore.Run(o, time.Now()); err != nil {
		return fmt.Errorf("restoring Muster's etcd: %w", err)
	}
	if _, err := c.StartAgain(ctx, MusterEtcdComponent); err != nil {
		return err
	}
	return c.RestartMuster(ctx)
}
