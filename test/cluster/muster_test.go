package cluster

import (
	"os"
	"strings"
	"testing"
)

// TestLocalClusterServesMuster starts the control plane with the
// muster-apiserver from bin/ and checks that kubectl reaches Muster's API
// through the aggregator over verified TLS.
func TestLocalClusterServesMuster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane; skipped with -short")
	}
	binDir, err := DefaultBinDir()
	if err != nil {
		t.Fatalf("finding bin dir: %v", err)
	}
	muster := DefaultMusterBinary(binDir)
	if _, err := os.Stat(muster); err != nil {
		t.Skipf("%s not built: %v", muster, err)
	}
	c := StartForTest(t, Options{Nodes: 1, MusterBinary: muster, MusterManifests: DefaultMusterManifests()})
	ctx := t.Context()

	out, err := c.Kubectl(ctx, "get", "apiservice", MusterAPIServiceName,
		"-o", `jsonpath={.spec.insecureSkipTLSVerify},{.status.conditions[?(@.type=="Available")].status}`)
	if err != nil {
		t.Fatalf("reading APIService: %v", err)
	}
	if got := string(out); got != ",True" {
		t.Errorf("APIService insecureSkipTLSVerify,Available = %q, want %q", got, ",True")
	}
	out, err = c.Kubectl(ctx, "api-resources", "--api-group="+MusterGroup, "-o", "name")
	if err != nil {
		t.Fatalf("listing Muster resources: %v", err)
	}
	for _, want := range []string{"podgroups." + MusterGroup, "workloads." + MusterGroup} {
		if !strings.Contains(string(out), want) {
			t.Errorf("api-resources = %q, missing %s", out, want)
		}
	}
	if _, err := c.Kubectl(ctx, "get", "podgroups", "-A"); err != nil {
		t.Errorf("kubectl get podgroups: %v", err)
	}
}
