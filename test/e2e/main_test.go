// Package e2e runs Muster inside a real control plane: etcd, kube-apiserver
// with the aggregator, kube-controller-manager, kube-scheduler and kwok
// nodes, all built from the Go module proxy by hack/build-tools.sh, with
// muster-apiserver registered as an APIService and as the pod webhook, and
// the JobSet controller beside them. One cluster serves the whole suite;
// each test works in its own namespace.
package e2e

import (
	"os"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/muster-dev/muster/pkg/generated/clientset/versioned"
	"github.com/muster-dev/muster/test/cluster"
)

var (
	env *cluster.Cluster
	// kube and muster are admin clients through kube-apiserver, so every
	// Muster request goes through the aggregator.
	kube   kubernetes.Interface
	muster versioned.Interface
)

// musterArgs shorten the timers so the suite runs in minutes: a killed
// leader's Lease expires in 4s.
var musterArgs = []string{
	"--leader-elect-lease-duration=4s",
	"--leader-elect-renew-deadline=3s",
	"--leader-elect-retry-period=1s",
	"--release-grace=10s",
	// A timer shortened as the leases are: a gang is preempted the moment
	// a higher-priority one needs its nodes, not a minute after its
	// admission (the default, which the abuse suite runs with).
	"--preemption-min-runtime=0s",
	"-v=2",
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if cluster.ListingOnly() {
		return m.Run()
	}
	opts := cluster.Options{MusterArgs: musterArgs, MusterManifests: cluster.DefaultMusterManifests(), JobSet: true}
	return cluster.RunSuite("e2e", opts, false, func(c *cluster.Cluster) int {
		env = c
		cfg := rest.CopyConfig(env.Config)
		cfg.QPS, cfg.Burst = 200, 400 // the crash test creates 200 pods.
		kube = kubernetes.NewForConfigOrDie(cfg)
		muster = versioned.NewForConfigOrDie(cfg)
		return m.Run()
	})
}
