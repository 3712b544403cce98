package chart

import (
	"testing"

	"github.com/spf13/pflag"

	"github.com/muster-dev/muster/pkg/cmd/server"
)

// defaultMirrors are the flags whose chart default must be the binary's
// own: values.yaml promises "the defaults are muster-apiserver's own".
var defaultMirrors = []string{
	"namespace-selector", "admission", "queueing-strategy", "preemption", "preempt-unmanaged",
	"preemption-min-runtime", "complete-scheduler-preemption", "autoscaling", "capacity-request-timeout", "capacity-request-max-pods", "capacity-request-image",
	"max-podgroups-per-namespace", "created-podgroup-qps", "created-podgroup-burst",
}

// TestChartFlagsAreTheBinarys: every flag the default rendering passes to
// muster-apiserver, in either Deployment, is one it defines, and the
// controller's and webhook's flags default to what the binary defaults to,
// so installing with the chart changes no behaviour the flags document.
func TestChartFlagsAreTheBinarys(t *testing.T) {
	fs := pflag.NewFlagSet("muster-apiserver", pflag.ContinueOnError)
	server.NewOptions().AddFlags(fs)
	objs := render(t, "muster-system")
	api := args(t, mustFind(t, objs, "Deployment", "muster-apiserver"))
	webhook := args(t, mustFind(t, objs, "Deployment", "muster-webhook"))
	for deployment, flags := range map[string]map[string]string{"muster-apiserver": api, "muster-webhook": webhook} {
		for name := range flags {
			if fs.Lookup(name) == nil {
				t.Errorf("the chart passes --%s to %s, which muster-apiserver does not define", name, deployment)
			}
		}
	}
	mirrors := map[string]map[string]string{"webhook-port": webhook}
	for _, name := range defaultMirrors {
		mirrors[name] = api
	}
	for name, flags := range mirrors {
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
