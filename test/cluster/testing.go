package cluster

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// StartForTest starts a cluster for a test and stops it when the test ends.
// It skips the test when the control-plane binaries are not built. The
// work dir is a fresh temporary directory, removed if the test passed and
// kept (and named in the test log) if it failed.
func StartForTest(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if missing := opts.MissingBinaries(); len(missing) > 0 {
		t.Skipf("local cluster binaries not built (%s); run hack/build-tools.sh", strings.Join(missing, ", "))
	}
	ownDir := opts.WorkDir == ""
	opts, err := opts.withDefaults()
	if err != nil {
		t.Fatalf("local cluster options: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*opts.StartTimeout)
	defer cancel()
	c, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("starting local cluster (work dir %s kept): %v", opts.WorkDir, err)
	}
	t.Cleanup(func() {
		c.Stop()
		if t.Failed() || !ownDir {
			t.Logf("local cluster work dir kept: %s (logs in %s)", c.WorkDir, c.logDir())
			return
		}
		_ = os.RemoveAll(c.WorkDir)
	})
	return c
}

// RunSuite starts one cluster with Muster for a package's tests, from
// TestMain: the binaries come from DefaultBinDir and DefaultMusterBinary,
// and the work dir is a fresh temporary directory, removed if run returns
// 0 and keep is false, else kept and named on stderr. It returns the exit
// code for os.Exit.
func RunSuite(suite string, opts Options, keep bool, run func(*Cluster) int) int {
	bin, err := DefaultBinDir()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	opts.BinDir = bin
	opts.MusterBinary = DefaultMusterBinary(bin)
	if missing := opts.MissingBinaries(); len(missing) > 0 {
		fmt.Fprintf(os.Stderr, "%s: missing %s: run `make %s`, which builds them\n", suite, strings.Join(missing, ", "), suite)
		return 1
	}
	dir, err := os.MkdirTemp("", "muster-"+suite+"-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	opts.WorkDir = dir
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := Start(ctx, opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", suite, err)
		return 1
	}
	code := func() int {
		defer c.Stop()
		return run(c)
	}()
	if code == 0 && !keep {
		_ = os.RemoveAll(dir)
	} else {
		fmt.Fprintf(os.Stderr, "%s: cluster work dir and logs kept in %s\n", suite, dir)
	}
	return code
}

// ListingOnly reports whether the test binary was asked only to list its
// tests (go test -list, which hack/e2e-shard.sh runs to deal a package's
// tests into shards). A TestMain that starts a cluster checks it first, so
// that listing starts nothing.
func ListingOnly() bool {
	if !flag.Parsed() {
		flag.Parse()
	}
	f := flag.Lookup("test.list")
	return f != nil && f.Value.String() != ""
}
