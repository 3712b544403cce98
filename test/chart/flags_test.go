package chart

import (
	"testing"

	"github.com/spf13/pflag"

	"github.com/muster-dev/muster/pkg/cmd/server"
)

// defaultMirrors are the flags whose chart default must be the binary's
// own: values.yaml promises "the defaults are muster-apiserver's own".
var defaultMirrors = []string{
	"webhook-port", "namespace-selector", "admission", "queueing-strategy", "preemption", "preempt-unmanaged",
	"preemption-min-runtime", "autoscaling", "capacity-request-timeout", "capacity-request-max-pods", "capacity-request-image",
	"max-podgroups-per-namespace", "created-podgroup-qps", "created-podgroup-burst",
}

// TestChartFlagsAreTheBinarys: every flag the default rendering passes to
// muster-apiserver is one it defines, and the controller's and webhook's
// flags default to what the binary defaults to, so installing with the
// chart changes no behaviour the flags document.
func TestChartFlagsAreTheBinarys(t *testing.T) {
	fs := pflag.NewFlagSet("muster-apiserver", pflag.ContinueOnError)
	server.NewOptions().AddFlags(fs)
	flags := args(t, mustFind(t, render(t, "muster-system"), "Deployment", "muster-apiserver"))
	for name := range flags {
		if fs.Lookup(name) == nil {
			t.Errorf("the chart passes --%s, which muster-apiserver does not define", name)
		}
	}
	for _, name := range defaultMirrors {
		got, ok := flags[name]
		if !ok {
			t.Errorf("the chart does not pass --%s", name)
			continue
		}
		if want := fs.Lookup(name).DefValue; got != want {
			t.Errorf("the chart's default --%s=%s, muster-apiserver's is %s", name, got, want)
		}
	}
}
