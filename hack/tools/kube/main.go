// Command kube is kube-apiserver, kube-controller-manager, kube-scheduler
// and kubectl in one binary, as hyperkube was: it runs the component its
// name (a link to it) or its first argument names. Built once instead of
// four times, its packages are compiled and linked once; see
// hack/tools/README.md for the figures.
//
// The same file serves every release's tools module (each links it); the
// one difference between releases, kubectl's main, is in kubectl.go.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	_ "time/tzdata" // CronJob time zones, as kube-apiserver and kube-controller-manager import it.

	"github.com/spf13/cobra"

	_ "k8s.io/client-go/plugin/pkg/client/auth" // kubectl's client auth plugins.
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // the JSON log format.
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go's metrics.
	_ "k8s.io/component-base/metrics/prometheus/version"  // the version metric.
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
)

// servers are the components whose upstream main is cli.Run of a command.
var servers = map[string]func() *cobra.Command{
	"kube-apiserver":          func() *cobra.Command { return apiserver.NewAPIServerCommand() },
	"kube-controller-manager": func() *cobra.Command { return controllermanager.NewControllerManagerCommand() },
	"kube-scheduler":          func() *cobra.Command { return scheduler.NewSchedulerCommand() },
}

func main() {
	name := filepath.Base(os.Args[0])
	if _, known := servers[name]; !known && name != "kubectl" && len(os.Args) > 1 {
		// Called by its own name: the component is the first argument.
		name = os.Args[1]
		os.Args = os.Args[1:]
	}
	if name == "kubectl" {
		runKubectl()
		return
	}
	newCommand, ok := servers[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "usage: kube COMPONENT [flags], or a link named after it; components: %s\n", components())
		os.Exit(2)
	}
	os.Exit(cli.Run(newCommand()))
}

func components() []string {
	names := []string{"kubectl"}
	for name := range servers {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
