// Package restore is `muster-apiserver restore`: one etcd member's data
// directory made anew from a snapshot that `muster-apiserver backup` (or
// etcdctl) saved. docs/etcd.md gives the whole procedure.
package restore

import (
	"fmt"
	"os"
	"time"

	etcdutl "go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Options are the flags of `muster-apiserver restore`. The member flags
// carry etcd's own names and must equal the member's: a restored member
// starts a new cluster of exactly --initial-cluster.
type Options struct {
	Snapshot, DataDir                           string
	Name, InitialCluster, PeerURL, ClusterToken string
	// RevisionBump raises the revision past any a client has seen, and
	// the old revisions are marked compacted: kube-apiserver's and
	// Muster's watch caches, informers included, then relist instead of
	// waiting for revisions the restored store handed out again.
	RevisionBump uint64
}

// DefaultOptions are those of the chart's single bundled member.
func DefaultOptions() Options {
	return Options{
		Name:           "muster-etcd-0",
		InitialCluster: "muster-etcd-0=http://127.0.0.1:2380",
		PeerURL:        "http://127.0.0.1:2380",
		ClusterToken:   "etcd-cluster",
		RevisionBump:   1_000_000_000,
	}
}

func (o Options) validate() error {
	var errs field.ErrorList
	if o.Snapshot == "" {
		errs = append(errs, field.Required(field.NewPath("--snapshot"), "the snapshot file to restore"))
	} else if _, err := os.Stat(o.Snapshot); err != nil {
		errs = append(errs, field.Invalid(field.NewPath("--snapshot"), o.Snapshot, err.Error()))
	}
	if o.DataDir == "" {
		errs = append(errs, field.Required(field.NewPath("--data-dir"), "the member's data directory, as etcd's --data-dir"))
	}
	for flag, v := range map[string]string{"--name": o.Name, "--initial-cluster": o.InitialCluster, "--initial-advertise-peer-urls": o.PeerURL, "--initial-cluster-token": o.ClusterToken} {
		if v == "" {
			errs = append(errs, field.Required(field.NewPath(flag), "must equal the member's own etcd flag"))
		}
	}
	if o.RevisionBump == 0 {
		errs = append(errs, field.Invalid(field.NewPath("--bump-revision"), o.RevisionBump,
			"must be positive: without it watchers would wait for revisions the restored store hands out again"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid flags: %w", errs.ToAggregate())
	}
	return nil
}

// Result says where the data went.
type Result struct {
	// MovedAside is where the member's previous data directory now is, ""
	// if there was none.
	MovedAside string
}

// Run restores o.Snapshot into o.DataDir. The snapshot is restored into a
// directory beside it first; only once that succeeded is an existing data
// directory renamed to <data-dir>.before-restore-<UTC time> (never
// deleted) and the restored one renamed into place. Run again after a
// crash, it starts over.
func Run(o Options, now time.Time) (Result, error) {
	if err := o.validate(); err != nil {
		return Result{}, err
	}
	staging := o.DataDir + ".restoring"
	if err := os.RemoveAll(staging); err != nil {
		return Result{}, fmt.Errorf("removing an earlier, unfinished restore at %s: %w", staging, err)
	}
	err := etcdutl.NewV3(zap.NewNop()).Restore(etcdutl.RestoreConfig{
		SnapshotPath:        o.Snapshot,
		Name:                o.Name,
		OutputDataDir:       staging,
		PeerURLs:            []string{o.PeerURL},
		InitialCluster:      o.InitialCluster,
		InitialClusterToken: o.ClusterToken,
		RevisionBump:        o.RevisionBump,
		MarkCompacted:       true,
	})
	if err != nil {
		return Result{}, fmt.Errorf("restoring %s: %w", o.Snapshot, err)
	}
	var r Result
	if _, err := os.Stat(o.DataDir); err == nil {
		r.MovedAside = o.DataDir + ".before-restore-" + now.UTC().Format("20060102T150405Z")
		if err := os.Rename(o.DataDir, r.MovedAside); err != nil {
			return Result{}, fmt.Errorf("moving the old data directory aside: %w", err)
		}
	} else if !os.IsNotExist(err) {
		return Result{}, fmt.Errorf("reading --data-dir %s: %w", o.DataDir, err)
	}
	if err := os.Rename(staging, o.DataDir); err != nil {
		return r, fmt.Errorf("moving the restored data into %s: %w", o.DataDir, err)
	}
	return r, nil
}
