// Command muster-apiserver serves Muster's scheduling.muster.dev API.
package main

import (
	"os"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/cli"

	// Registers the workqueue metrics provider with the /metrics registry.
	_ "k8s.io/component-base/metrics/prometheus/workqueue"

	"github.com/muster-dev/muster/pkg/cmd/backup"
	"github.com/muster-dev/muster/pkg/cmd/restore"
	"github.com/muster-dev/muster/pkg/cmd/server"
	"github.com/muster-dev/muster/pkg/cmd/uninstall"
)

func main() {
	ctx := genericapiserver.SetupSignalContext()
	cmd := server.NewCommand(ctx, server.NewOptions())
	// The chart's pre-delete hook runs `muster-apiserver uninstall`.
	cmd.AddCommand(uninstall.NewCommand())
	// The chart's CronJob muster-etcd-backup runs `muster-apiserver backup`.
	cmd.AddCommand(backup.NewCommand())
	// docs/etcd.md restores a snapshot with `muster-apiserver restore`.
	cmd.AddCommand(restore.NewCommand())
	os.Exit(cli.Run(cmd))
}
