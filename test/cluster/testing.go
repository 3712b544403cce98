package cluster

import (
	"context"
	"os"
	"strings"
	"testing"
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
