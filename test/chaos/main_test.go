// Package chaos drives a load of gangs through Muster on the local cluster
// while it breaks the control plane on purpose, then checks that nothing
// was lost, doubled or left stuck:
//
//   - R1: the leading replica of two is killed with SIGKILL every few
//     seconds, with short leases, for the whole run;
//   - R2: kube-apiserver, etcd and Muster's own etcd are each killed and
//     restarted once, at 30%, 55% and 80% of the pods.
//
// `make chaos` runs it with 10,000 pods; `make test` with 2,000.
package chaos

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/muster-dev/muster/test/cluster"
)

var (
	podsFlag = flag.Int("chaos.pods", 2000, "how many pods to drive through Muster")
	seedFlag = flag.Uint64("chaos.seed", 0, "seed of the load's random choices (0: from the clock)")
	// keepFlag keeps the cluster's work dir and logs even when the run passes.
	keepFlag = flag.Bool("chaos.keep", false, "keep the cluster's work dir and logs")
)

var env *cluster.Cluster

// musterArgs are the e2e suite's short leases: a killed leader's Lease
// expires in 4s.
var musterArgs = []string{
	"--leader-elect-lease-duration=4s",
	"--leader-elect-renew-deadline=3s",
	"--leader-elect-retry-period=1s",
	"--release-grace=5s",
}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	opts := cluster.Options{
		MusterArgs:      musterArgs,
		MusterManifests: cluster.DefaultMusterManifests(),
		MusterReplicas:  2,
		MusterEtcd:      true,
	}
	bin, err := cluster.DefaultBinDir()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	opts.BinDir = bin
	opts.MusterBinary = cluster.DefaultMusterBinary(bin)
	if missing := opts.MissingBinaries(); len(missing) > 0 {
		fmt.Fprintf(os.Stderr, "chaos: missing %s: run `make chaos`, which builds them\n", strings.Join(missing, ", "))
		return 1
	}
	dir, err := os.MkdirTemp("", "muster-chaos-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	opts.WorkDir = dir
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	env, err = cluster.Start(ctx, opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "chaos: %v\n", err)
		return 1
	}
	code := func() int {
		defer env.Stop()
		return m.Run()
	}()
	if code == 0 && !*keepFlag {
		_ = os.RemoveAll(dir)
	} else {
		fmt.Fprintf(os.Stderr, "chaos: cluster work dir and logs kept in %s\n", dir)
	}
	return code
}
