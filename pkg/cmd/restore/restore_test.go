package restore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/muster-dev/muster/pkg/cmd/backup"
	"github.com/muster-dev/muster/pkg/cmd/internal/etcdtest"
)

// TestRestoreBringsBackTheSnapshot backs up a real etcd, writes more, then
// restores the snapshot over the member's data directory and starts etcd
// on it: the keys of the snapshot are back, the later ones are gone, the
// revision is past every revision handed out before, the old data is moved
// aside, and a watch from an old revision is told it was compacted.
func TestRestoreBringsBackTheSnapshot(t *testing.T) {
	ctx := context.Background()
	member := etcdtest.NewMember(t, "muster-etcd-0")
	dataDir := filepath.Join(t.TempDir(), "data")
	server, stop := etcdtest.Start(t, member, dataDir)
	cli := client(t, server)
	put := func(prefix string) int64 {
		var rev int64
		for i := range 5 {
			r, err := cli.Put(ctx, fmt.Sprintf("%s/%d", prefix, i), "v")
			if err != nil {
				t.Fatalf("writing: %v", err)
			}
			rev = r.Header.Revision
		}
		return rev
	}
	put("/muster/before")
	bo := backup.DefaultOptions()
	bo.Servers, bo.Dir = []string{server}, filepath.Join(t.TempDir(), "backups")
	saved, err := backup.Run(ctx, bo, time.Now())
	if err != nil {
		t.Fatalf("backup: %v", err)
	}
	lastRev := put("/muster/after")
	cli.Close()
	stop() // a member is stopped before its restore

	o := DefaultOptions()
	o.Snapshot, o.DataDir = saved.Path, dataDir
	o.Name, o.InitialCluster, o.PeerURL = member.Name, member.InitialCluster(), member.PeerURL.String()
	r, err := Run(o, time.Date(2026, 11, 27, 18, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	if want := dataDir + ".before-restore-20261127T180000Z"; r.MovedAside != want {
		t.Errorf("old data moved to %q, want %q", r.MovedAside, want)
	}
	if _, err := os.Stat(filepath.Join(r.MovedAside, "member")); err != nil {
		t.Errorf("the old data directory is not kept: %v", err)
	}

	restored, _ := etcdtest.Start(t, member, dataDir)
	cli = client(t, restored)
	defer cli.Close()
	for prefix, want := range map[string]int64{"/muster/before": 5, "/muster/after": 0} {
		got, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatalf("reading %s: %v", prefix, err)
		}
		if got.Count != want {
			t.Errorf("%s: %d keys after the restore, want %d", prefix, got.Count, want)
		}
		if got.Header.Revision <= lastRev+int64(o.RevisionBump)-1000 {
			t.Errorf("revision %d after the restore, want past %d + the bump %d", got.Header.Revision, lastRev, o.RevisionBump)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	w := <-cli.Watch(wctx, "/muster/", clientv3.WithPrefix(), clientv3.WithRev(lastRev))
	if w.CompactRevision == 0 {
		t.Errorf("a watch from revision %d was not told it was compacted (err %v): watchers would not relist", lastRev, w.Err())
	}
}

func TestValidate(t *testing.T) {
	snap := filepath.Join(t.TempDir(), "s.db")
	if err := os.WriteFile(snap, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		change func(*Options)
		want   string
	}{
		{name: "valid", change: func(*Options) {}},
		{name: "no snapshot", change: func(o *Options) { o.Snapshot = "" }, want: "--snapshot: Required value"},
		{name: "missing snapshot", change: func(o *Options) { o.Snapshot += ".gone" }, want: "--snapshot: Invalid value"},
		{name: "no data dir", change: func(o *Options) { o.DataDir = "" }, want: "--data-dir: Required value"},
		{name: "no name", change: func(o *Options) { o.Name = "" }, want: "--name: Required value"},
		{name: "no bump", change: func(o *Options) { o.RevisionBump = 0 }, want: "--bump-revision: Invalid value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultOptions()
			o.Snapshot, o.DataDir = snap, "/var/lib/etcd/data"
			tc.change(&o)
			err := o.validate()
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("validate: %v, want %q", err, tc.want)
			}
		})
	}
}

func client(t *testing.T, server string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{server}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("creating etcd client: %v", err)
	}
	return cli
}
