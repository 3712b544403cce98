package cluster

import (
	"os/exec"
	"strings"
	"testing"
)

// TestChartValuesRender renders charts/muster with the harness's values:
// they must pass the chart's schema, and the webhooks and the APIService
// must call the Service on the ports given.
func TestChartValuesRender(t *testing.T) {
	dir, err := DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{opts: Options{BinDir: dir, MusterReplicas: 2, MusterArgs: []string{"-v=2"}, PreparePolicy: true}, WorkDir: t.TempDir(), MusterEtcdURL: "https://127.0.0.1:2379"}
	helm, err := c.helmBinary()
	if err != nil {
		t.Skip(err)
	}
	values, err := c.writeChartValues("values.yaml", c.ChartValues(40001, 40002))
	if err != nil {
		t.Fatal(err)
	}
	chart, err := ChartPath()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(helm, "template", ReleaseName, chart, "--namespace", MusterNamespace, "--values", values).CombinedOutput()
	if err != nil {
		t.Fatalf("helm template with the harness's values: %v\n%s", err, out)
	}
	rendered := string(out)
	for _, want := range []string{
		"port: 40001",                           // the APIService and the Service
		"port: 40002",                           // the webhooks and the Service
		"--etcd-servers=https://127.0.0.1:2379", // Muster's etcd
		"--cert-management=internal",            // Muster's own certificates
		"- -v=2",                                // MusterArgs as extraArgs
		HarnessRunsLabel + `: "true"`,           // no node runs the pods
		"kind: MutatingAdmissionPolicy\n",       // PreparePolicy
	} {
		if !strings.Contains(rendered, want) {
			t.Errorf("the rendering lacks %q", want)
		}
	}
}
