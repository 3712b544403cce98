package version

import (
	"runtime/debug"
	"testing"
)

// TestGet checks where each field comes from: the Makefile's -ldflags win,
// the toolchain's VCS stamp fills what they left empty, and a binary with
// neither says "unknown" rather than print nothing.
func TestGet(t *testing.T) {
	stamped := func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{
			Main:     debug.Module{Version: "v0.0.0-20261127120000-a0a4081abcde+dirty"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "a0a4081abcdef0123456789abcdef0123456789a"}},
		}, true
	}
	devel := func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true
	}
	none := func() (*debug.BuildInfo, bool) { return nil, false }

	tests := []struct {
		name          string
		linkedVersion string
		linkedCommit  string
		buildInfo     func() (*debug.BuildInfo, bool)
		wantVersion   string
		wantCommit    string
	}{
		{name: "ldflags win over the VCS stamp", linkedVersion: "v0.1.0", linkedCommit: "0123456789abcdef0123456789abcdef01234567", buildInfo: stamped,
			wantVersion: "v0.1.0", wantCommit: "0123456789abcdef0123456789abcdef01234567"},
		{name: "no ldflags: the VCS stamp names the build", buildInfo: stamped,
			wantVersion: "v0.0.0-20261127120000-a0a4081abcde+dirty", wantCommit: "a0a4081abcdef0123456789abcdef0123456789a"},
		{name: "a version from ldflags keeps the stamped commit", linkedVersion: "v0.0.0-12-ga0a4081", buildInfo: stamped,
			wantVersion: "v0.0.0-12-ga0a4081", wantCommit: "a0a4081abcdef0123456789abcdef0123456789a"},
		{name: "a devel build with no VCS says unknown", buildInfo: devel,
			wantVersion: "v0.0.0-unknown", wantCommit: "unknown"},
		{name: "no build info says unknown", buildInfo: none,
			wantVersion: "v0.0.0-unknown", wantCommit: "unknown"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := get(tc.linkedVersion, tc.linkedCommit, tc.buildInfo)
			if got.Version != tc.wantVersion || got.Commit != tc.wantCommit {
				t.Errorf("get() = version %q commit %q, want version %q commit %q", got.Version, got.Commit, tc.wantVersion, tc.wantCommit)
			}
			if got.GoVersion == "" || got.Platform == "" {
				t.Errorf("get() = %+v: Go version and platform must be set", got)
			}
		})
	}
}
