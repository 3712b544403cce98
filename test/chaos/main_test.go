// Package chaos drives a load of gangs through Muster on the local cluster
// while it breaks the control plane on purpose, then checks that nothing
// was lost, doubled or left stuck:
//
//   - R1: the leading replica of two is killed with SIGKILL every few
//     seconds, with short leases, for the whole run;
//   - R2: kube-apiserver, etcd and Muster's own etcd are each killed and
//     restarted once, at 30%, 55% and 80% of the pods.
//
// The gangs have mixed PriorityClasses and the nodes are too small to run
// the load at once, so gangs of higher priority preempt admitted gangs of
// lower priority all along; the load's framework restarts a preempted gang
// whole (priority_test.go).
//
// `make chaos` runs it with 10,000 pods; `make test` with 2,000.
package chaos

import (
	"flag"
	"os"
	"testing"

	"github.com/muster-dev/muster/test/cluster"
)

var (
	podsFlag = flag.Int("chaos.pods", 2000, "how many pods to drive through Muster")
	seedFlag = flag.Uint64("chaos.seed", 0, "seed of the load's random choices (0: from the clock)")
	// keepFlag keeps the cluster's work dir and logs even when the run passes.
	keepFlag = flag.Bool("chaos.keep", false, "keep the cluster's work dir and logs")
)

var env *cluster.Cluster

// nodeCPU is each fake node's CPU.
const nodeCPU = "4"

// musterArgs are the e2e suite's short leases: a killed leader's Lease
// expires in 4s.
var musterArgs = []string{
	"--leader-elect-lease-duration=4s",
	"--leader-elect-renew-deadline=3s",
	"--leader-elect-retry-period=1s",
	"--release-grace=5s",
	// Preemption at once, as the e2e suite's (the default spares a gang
	// its first minute).
	"--preemption-min-runtime=0s",
	"-v=2",
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
		// 4 nodes of 4 CPUs run 160 of the load's pods (100m each) at
		// once, fewer than it keeps going (maxActive), so that admitted
		// gangs hold the room that gangs of higher priority wait for.
		NodeCPU: nodeCPU,
	}
	return cluster.RunSuite("chaos", opts, *keepFlag, func(c *cluster.Cluster) int {
		env = c
		return m.Run()
	})
}
