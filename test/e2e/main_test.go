// Package e2e runs Muster inside a real control plane: etcd, kube-apiserver
// with the aggregator, kube-scheduler and kwok nodes, all built from the Go
// module proxy by hack/build-tools.sh, with muster-apiserver registered as an
// APIService and as the pod webhook. One cluster serves the whole suite; each
// test works in its own namespace.
package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

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
	"-v=2",
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	opts := cluster.Options{MusterArgs: musterArgs, MusterManifests: cluster.DefaultMusterManifests()}
	bin, err := cluster.DefaultBinDir()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	opts.BinDir = bin
	opts.MusterBinary = cluster.DefaultMusterBinary(bin)
	if missing := opts.MissingBinaries(); len(missing) > 0 {
		fmt.Fprintf(os.Stderr, "e2e: missing %s: run `make e2e`, which builds them\n", strings.Join(missing, ", "))
		return 1
	}
	dir, err := os.MkdirTemp("", "muster-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	opts.WorkDir = dir
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	env, err = cluster.Start(ctx, opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	code := func() int {
		defer env.Stop()
		cfg := rest.CopyConfig(env.Config)
		cfg.QPS, cfg.Burst = 200, 400 // the crash test creates 200 pods.
		kube = kubernetes.NewForConfigOrDie(cfg)
		muster = versioned.NewForConfigOrDie(cfg)
		return m.Run()
	}()
	if code == 0 {
		_ = os.RemoveAll(dir)
	} else {
		fmt.Fprintf(os.Stderr, "e2e: cluster work dir and logs kept in %s\n", dir)
	}
	return code
}
