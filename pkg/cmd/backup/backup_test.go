package backup

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	etcdutl "go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"

	"github.com/muster-dev/muster/pkg/cmd/internal/etcdtest"
)

// TestRunSavesRestorableSnapshotsAndKeepsTheNewest takes three snapshots
// with --keep=2 from a real etcd and checks that the two newest stay, the
// oldest is deleted, and each one etcd's own tool reads back holds every
// key written before it.
func TestRunSavesRestorableSnapshotsAndKeepsTheNewest(t *testing.T) {
	ctx := context.Background()
	server, _ := etcdtest.Start(t, etcdtest.NewMember(t, "backup-test"), t.TempDir())
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{server}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("creating etcd client: %v", err)
	}
	defer cli.Close()

	dir := filepath.Join(t.TempDir(), "backups")
	start := time.Date(2026, 11, 27, 17, 0, 0, 0, time.UTC)
	var results []Result
	for i := range 3 {
		for j := range 10 {
			if _, err := cli.Put(ctx, fmt.Sprintf("/muster/run%d/key%d", i, j), "v"); err != nil {
				t.Fatalf("writing to etcd: %v", err)
			}
		}
		o := DefaultOptions()
		// The first URL answers nothing: the next member is tried.
		o.Servers = []string{"http://" + etcdtest.FreeURL(t).Host, server}
		o.Dir, o.Keep, o.DialTimeout, o.Timeout = dir, 2, time.Second, time.Minute
		r, err := Run(ctx, o, start.Add(time.Duration(i)*time.Hour))
		if err != nil {
			t.Fatalf("backup %d: %v", i, err)
		}
		if r.Server != server {
			t.Errorf("backup %d came from %s, want %s", i, r.Server, server)
		}
		results = append(results, r)
	}

	if got, want := results[2].Pruned, []string{results[0].Path}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("third backup pruned %v, want %v", got, want)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := []string{"muster-etcd-20261127T180000Z.db", "muster-etcd-20261127T190000Z.db"}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Errorf("%s holds %v, want %v", dir, names, want)
	}
	for i, r := range results[1:] {
		status, err := etcdutl.NewV3(zap.NewNop()).Status(r.Path)
		if err != nil {
			t.Fatalf("etcd cannot read snapshot %s: %v", r.Path, err)
		}
		// Every key of the runs before it; etcd keeps a few of its own.
		if wantKeys := 10 * (i + 2); status.TotalKey < wantKeys {
			t.Errorf("snapshot %s holds %d keys, want at least %d", r.Path, status.TotalKey, wantKeys)
		}
		if r.Size <= 0 {
			t.Errorf("snapshot %s: size %d", r.Path, r.Size)
		}
	}
}

// TestRunWithNoMemberWritesNothing checks that a backup no member answers
// fails, and deletes none of the snapshots already kept.
func TestRunWithNoMemberWritesNothing(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, snapshotName(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	if err := os.WriteFile(old, []byte("kept"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.Servers, o.Dir, o.Keep, o.DialTimeout = []string{"http://" + etcdtest.FreeURL(t).Host}, dir, 1, time.Second
	if _, err := Run(context.Background(), o, time.Now()); err == nil || !strings.Contains(err.Error(), "no etcd member gave a snapshot") {
		t.Fatalf("Run with no etcd: err = %v, want no etcd member gave a snapshot", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != filepath.Base(old) {
		t.Errorf("%s holds %v after a failed backup, want only %s", dir, entries, filepath.Base(old))
	}
}

func TestPrune(t *testing.T) {
	for _, tc := range []struct {
		name        string
		files       []string
		keep        int
		wantPruned  []string
		wantRemains []string
	}{
		{
			name:        "fewer than keep",
			files:       []string{"muster-etcd-20260101T000000Z.db"},
			keep:        3,
			wantRemains: []string{"muster-etcd-20260101T000000Z.db"},
		},
		{
			name:        "oldest go first",
			files:       []string{"muster-etcd-20260103T000000Z.db", "muster-etcd-20260101T000000Z.db", "muster-etcd-20260102T000000Z.db"},
			keep:        1,
			wantPruned:  []string{"muster-etcd-20260101T000000Z.db", "muster-etcd-20260102T000000Z.db"},
			wantRemains: []string{"muster-etcd-20260103T000000Z.db"},
		},
		{
			name:        "other files are never deleted",
			files:       []string{"muster-etcd-20260101T000000Z.db", "muster-etcd-20260102T000000Z.db", "notes.txt", "muster-etcd-20260103T000000Z.db.part", "muster-etcd-latest.db"},
			keep:        1,
			wantPruned:  []string{"muster-etcd-20260101T000000Z.db"},
			wantRemains: []string{"muster-etcd-20260102T000000Z.db", "muster-etcd-20260103T000000Z.db.part", "muster-etcd-latest.db", "notes.txt"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, f), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			pruned, err := prune(dir, tc.keep)
			if err != nil {
				t.Fatal(err)
			}
			var prunedNames []string
			for _, p := range pruned {
				prunedNames = append(prunedNames, filepath.Base(p))
			}
			if strings.Join(prunedNames, ",") != strings.Join(tc.wantPruned, ",") {
				t.Errorf("pruned %v, want %v", prunedNames, tc.wantPruned)
			}
			entries, _ := os.ReadDir(dir)
			var remains []string
			for _, e := range entries {
				remains = append(remains, e.Name())
			}
			if strings.Join(remains, ",") != strings.Join(tc.wantRemains, ",") {
				t.Errorf("left %v, want %v", remains, tc.wantRemains)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	valid := func() Options {
		o := DefaultOptions()
		o.Servers, o.Dir = []string{"https://muster-etcd-0.muster-etcd.muster-system.svc:2379"}, "/backups"
		o.CAFile, o.CertFile, o.KeyFile = "ca.crt", "tls.crt", "tls.key"
		return o
	}
	for _, tc := range []struct {
		name   string
		change func(*Options)
		want   string
	}{
		{name: "valid", change: func(*Options) {}},
		{name: "no servers", change: func(o *Options) { o.Servers = nil }, want: "--etcd-servers: Required value"},
		{name: "not a URL", change: func(o *Options) { o.Servers = []string{"etcd:2379"} }, want: "--etcd-servers[0]: Invalid value"},
		{name: "cert without key", change: func(o *Options) { o.KeyFile = "" }, want: "--etcd-certfile and --etcd-keyfile go together"},
		{name: "no dir", change: func(o *Options) { o.Dir = "" }, want: "--dir: Required value"},
		{name: "keep 0", change: func(o *Options) { o.Keep = 0 }, want: "--keep: Invalid value: 0: must keep at least 1 snapshot"},
		{name: "no timeout", change: func(o *Options) { o.Timeout = 0 }, want: "--timeout: Invalid value"},
		{name: "no dial timeout", change: func(o *Options) { o.DialTimeout = 0 }, want: "--dial-timeout: Invalid value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := valid()
			tc.change(&o)
			err := o.validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("validate: err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}
