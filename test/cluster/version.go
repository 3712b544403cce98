package cluster

import (
	"context"
	"fmt"
	"os/exec"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"
)

// versionedFlag is a kube-apiserver flag that only some releases accept.
type versionedFlag struct {
	flag string
	// since is the first release that accepts the flag with the default
	// feature gates.
	since *version.Version
}

// versionedAPIServerFlags are the harness's kube-apiserver flags that older
// releases reject. Every other flag in kubeAPIServerArgs is accepted by
// every supported release (1.30 and later).
var versionedAPIServerFlags = []versionedFlag{
	// Forwards the user's UID to aggregated servers. 1.32 added the flag
	// behind the alpha RemoteRequestHeaderUID gate; 1.33 turned it on.
	{"--requestheader-uid-headers=X-Remote-Uid", version.MajorMinor(1, 33)},
}

// apiServerFlagsFor returns the versioned flags that release v accepts.
// Only the minor release counts, as for feature gates: a 1.33
// pre-release has 1.33's flags.
func apiServerFlagsFor(v *version.Version) []string {
	minor := version.MajorMinor(v.Major(), v.Minor())
	var flags []string
	for _, f := range versionedAPIServerFlags {
		if minor.AtLeast(f.since) {
			flags = append(flags, f.flag)
		}
	}
	return flags
}

// binaryVersion runs `<binary> --version`, which prints "Kubernetes
// v1.30.14" for kube-apiserver, and parses the release.
func binaryVersion(ctx context.Context, binary string) (*version.Version, error) {
	out, err := exec.CommandContext(ctx, binary, "--version").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s --version: %w: %s", binary, err, strings.TrimSpace(string(out)))
	}
	return parseVersionOutput(string(out))
}

// parseVersionOutput parses the output of `kube-apiserver --version`.
func parseVersionOutput(out string) (*version.Version, error) {
	fields := strings.Fields(out)
	if len(fields) != 2 || fields[0] != "Kubernetes" {
		return nil, fmt.Errorf("unexpected version output %q, want \"Kubernetes vX.Y.Z\"", strings.TrimSpace(out))
	}
	v, err := version.ParseSemantic(fields[1])
	if err != nil {
		return nil, fmt.Errorf("parsing version output %q: %w", strings.TrimSpace(out), err)
	}
	return v, nil
}
