// Package backup is `muster-apiserver backup`: one snapshot of Muster's etcd
// into a directory of its own, keeping the newest --keep. The chart runs it
// from a CronJob (charts/muster/templates/etcd-backup.yaml); docs/etcd.md
// says how to restore one.
package backup

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/snapshot"
	"go.uber.org/zap"
	"k8s.io/klog/v2"
)

// Result is what one backup did.
type Result struct {
	// Path is the snapshot written, Server the member it came from and
	// Version that member's etcd version.
	Path, Server, Version string
	// Size is the snapshot's size in bytes.
	Size int64
	// Pruned are the older snapshots deleted to keep --keep.
	Pruned []string
}

// Run takes one snapshot from the first member of o.Servers that gives
// one, then deletes the oldest snapshots beyond o.Keep. A snapshot is
// written to a .part file and renamed only once complete and synced (with
// etcd's own checksum trailer checked), so Dir never holds a partial
// snapshot under a snapshot's name, and nothing is pruned unless the new
// one is complete.
func Run(ctx context.Context, o Options, now time.Time) (Result, error) {
	if err := o.validate(); err != nil {
		return Result{}, err
	}
	logger := klog.FromContext(ctx)
	tlsConfig, err := clientTLS(o)
	if err != nil {
		return Result{}, err
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return Result{}, fmt.Errorf("creating --dir %s: %w", o.Dir, err)
	}
	path := filepath.Join(o.Dir, snapshotName(now))
	var errs []error
	for _, server := range o.Servers {
		version, err := saveFrom(ctx, server, tlsConfig, path, o.DialTimeout, o.Timeout)
		if err != nil {
			logger.Info("No snapshot from this etcd member", "server", server, "err", err)
			errs = append(errs, fmt.Errorf("%s: %w", server, err))
			continue
		}
		info, err := os.Stat(path)
		if err != nil {
			return Result{}, fmt.Errorf("reading the snapshot just written: %w", err)
		}
		pruned, err := prune(o.Dir, o.Keep)
		r := Result{Path: path, Server: server, Version: version, Size: info.Size(), Pruned: pruned}
		if err != nil {
			return r, err
		}
		return r, nil
	}
	return Result{}, fmt.Errorf("no etcd member gave a snapshot: %w", errors.Join(errs...))
}

// saveFrom streams one member's snapshot to path with etcd's own client
// library, which asks exactly one member. A member that does not answer a
// status request within dialTimeout is skipped at once: the snapshot's
// stream would otherwise wait for it until timeout.
func saveFrom(ctx context.Context, server string, tlsConfig *tls.Config, path string, dialTimeout, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cfg := clientv3.Config{
		Endpoints:   []string{server},
		TLS:         tlsConfig,
		DialTimeout: dialTimeout,
		Context:     ctx,
	}
	if err := answers(ctx, cfg); err != nil {
		return "", err
	}
	return snapshot.SaveWithVersion(ctx, zap.NewNop(), cfg, path)
}

// answers asks the one member of cfg for its status within cfg's dial
// timeout.
func answers(ctx context.Context, cfg clientv3.Config) error {
	cfg.Logger = zap.NewNop()
	cli, err := clientv3.New(cfg)
	if err != nil {
		return fmt.Errorf("connecting: %w", err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
	defer cancel()
	if _, err := cli.Status(ctx, cfg.Endpoints[0]); err != nil {
		return fmt.Errorf("no status within %v: %w", cfg.DialTimeout, err)
	}
	return nil
}

// clientTLS is the client configuration for o's TLS files, nil for plain
// HTTP.
func clientTLS(o Options) (*tls.Config, error) {
	if o.CAFile == "" && o.CertFile == "" {
		return nil, nil
	}
	info := transport.TLSInfo{TrustedCAFile: o.CAFile, CertFile: o.CertFile, KeyFile: o.KeyFile}
	cfg, err := info.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the etcd client's TLS files (--etcd-cafile, --etcd-certfile, --etcd-keyfile): %w", err)
	}
	return cfg, nil
}
