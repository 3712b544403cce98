// Package abuse is the hostile-tenant suite (`make abuse`, and part of
// `make test`). One cluster runs Muster as production does; two tenants
// share it:
//
//   - mallory may only create, read, change and delete pods in one
//     namespace, under a ResourceQuota, and tries every path the
//     tenant-isolation issue names, and more that a user would think of;
//   - a well-behaved tenant in another namespace runs gangs all the while.
//
// It asserts what a shared service owes the well-behaved tenant: release
// latency within twice that of a quiet run, Muster's memory within a stated
// bound, every labelled pod create accepted, exact counts, and nothing left
// stuck on Muster's finalizer. It prints those figures.
package abuse

import (
	"flag"
	"os"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/muster-dev/muster/pkg/generated/clientset/versioned"
	"github.com/muster-dev/muster/test/cluster"
)

// keepFlag keeps the cluster's work dir and logs even when the run passes.
var keepFlag = flag.Bool("abuse.keep", false, "keep the cluster's work dir and logs")

// skipFlag leaves out the attacks whose names match, to find which one
// costs the well-behaved tenant what.
var skipFlag = flag.String("abuse.skip", "", "leave out attacks whose names match this regexp (fails the run: for diagnosis)")

var (
	env *cluster.Cluster
	// kube and muster are admin clients through kube-apiserver.
	kube   kubernetes.Interface
	muster versioned.Interface
)

// createdGroupTTL is Muster's --created-group-ttl here: short, so that the
// suite sees groups created from annotations deleted within its run.
const createdGroupTTL = "15s"

// musterArgs are the e2e suite's short leases, and a short TTL for groups
// created from annotations.
var musterArgs = []string{
	"--leader-elect-lease-duration=4s",
	"--leader-elect-renew-deadline=3s",
	"--leader-elect-retry-period=1s",
	"--release-grace=10s",
	"--created-group-ttl=" + createdGroupTTL,
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
		// Muster's etcd of its own, so that one attack can restart it.
		MusterEtcd: true,
		// The chart's default on a control plane whose kube-apiserver
		// presents no client certificate (issue 34, path 1): the webhook
		// answers any caller, and its bounds alone must hold.
		AnonymousWebhook: true,
	}
	return cluster.RunSuite("abuse", opts, *keepFlag, func(c *cluster.Cluster) int {
		env = c
		cfg := rest.CopyConfig(env.Config)
		cfg.QPS, cfg.Burst = 200, 400
		kube = kubernetes.NewForConfigOrDie(cfg)
		muster = versioned.NewForConfigOrDie(cfg)
		return m.Run()
	})
}
