// Package version reports which release of Muster a binary is. The image
// tag, the Helm chart and `muster-apiserver --version` all carry the same
// string, which the Makefile computes once (hack/version.sh) and links in
// with -ldflags -X.
//
// It is Muster's own version, kept apart from k8s.io/component-base/version
// on purpose: k8s.io/apiserver reads that one as the Kubernetes release the
// libraries emulate (compatibility.DefaultBuildEffectiveVersion), so setting
// it to Muster's v0.x would make the server think it is Kubernetes 0.x.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set by the Makefile with
// -ldflags "-X github.com/muster-dev/muster/pkg/version.gitVersion=... -X ...gitCommit=...".
var (
	gitVersion string
	gitCommit  string
)

// Info is the version of a build, as `--version` prints it.
type Info struct {
	// Version is the release, from `git describe` (see hack/version.sh).
	Version string
	// Commit is the full hash of the commit built, when known.
	Commit    string
	GoVersion string
	Platform  string
}

// Get returns the version linked into this binary. A binary built without
// the Makefile's -ldflags (`go build`, `go run`) falls back to what the Go
// toolchain stamped from version control, so it still names its commit.
func Get() Info {
	return get(gitVersion, gitCommit, readBuildInfo)
}

func readBuildInfo() (*debug.BuildInfo, bool) { return debug.ReadBuildInfo() }

func get(linkedVersion, linkedCommit string, buildInfo func() (*debug.BuildInfo, bool)) Info {
	info := Info{
		Version:   linkedVersion,
		Commit:    linkedCommit,
		GoVersion: runtime.Version(),
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
	}
	if info.Version != "" && info.Commit != "" {
		return info
	}
	bi, ok := buildInfo()
	if !ok {
		return withUnknown(info)
	}
	if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		info.Version = bi.Main.Version
	}
	if info.Commit == "" {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				info.Commit = s.Value
			}
		}
	}
	return withUnknown(info)
}

// withUnknown says "unknown" rather than print an empty field.
func withUnknown(info Info) Info {
	if info.Version == "" {
		info.Version = "v0.0.0-unknown"
	}
	if info.Commit == "" {
		info.Commit = "unknown"
	}
	return info
}

// String is the one line `muster-apiserver --version` prints after the
// program's name.
func (i Info) String() string {
	return fmt.Sprintf("%s (commit %s, %s, %s)", i.Version, i.Commit, i.GoVersion, i.Platform)
}
