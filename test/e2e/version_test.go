package e2e

import (
	"os"
	"testing"
)

// TestKubeVersion: the cluster runs the Kubernetes release that `make e2e`
// asked for (MUSTER_KUBE_VERSION), so a pass on the oldest release is not a
// pass on the newest by mistake.
func TestKubeVersion(t *testing.T) {
	want := os.Getenv("MUSTER_KUBE_VERSION")
	if want == "" {
		t.Skip("MUSTER_KUBE_VERSION not set; `make e2e` sets it")
	}
	info, err := kube.Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("reading the server version: %v", err)
	}
	if info.GitVersion != "v"+want {
		t.Fatalf("kube-apiserver is %s, want v%s", info.GitVersion, want)
	}
	t.Logf("kube-apiserver %s, harness saw %s", info.GitVersion, env.KubeVersion)
}
