package cluster

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/version"
)

// TestAPIServerFlagsFor checks that each release gets exactly the
// versioned flags it accepts.
func TestAPIServerFlagsFor(t *testing.T) {
	uid := "--requestheader-uid-headers=X-Remote-Uid"
	tests := []struct {
		name    string
		version string
		want    []string
	}{
		{"1.30 rejects the UID header flag", "1.30.14", nil},
		{"1.32 has the flag only behind an alpha gate", "1.32.5", nil},
		{"1.33 accepts the UID header flag", "1.33.0", []string{uid}},
		{"a pre-release of 1.33 has 1.33's flags", "1.33.0-rc.1", []string{uid}},
		{"a pre-release of 1.32 has 1.32's", "1.32.0-alpha.3", nil},
		{"the newest release accepts it", "1.37.2", []string{uid}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := apiServerFlagsFor(version.MustParseSemantic(tc.version)); !slices.Equal(got, tc.want) {
				t.Errorf("flags for %s = %v, want %v", tc.version, got, tc.want)
			}
		})
	}
}

// TestParseVersionOutput checks the parsing of `kube-apiserver --version`.
func TestParseVersionOutput(t *testing.T) {
	tests := []struct {
		name    string
		out     string
		want    string
		wantErr string
	}{
		{name: "a release", out: "Kubernetes v1.30.14\n", want: "1.30.14"},
		{name: "a pre-release", out: "Kubernetes v1.37.0-alpha.1", want: "1.37.0-alpha.1"},
		{name: "an unstamped build", out: "Kubernetes v0.0.0-master+$Format:%H$\n", wantErr: "parsing version output"},
		{name: "not kube-apiserver", out: "etcd Version: 3.7.3\n", wantErr: "unexpected version output"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseVersionOutput(tc.out)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parse(%q) = %v, %v; want an error containing %q", tc.out, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got.String() != tc.want {
				t.Fatalf("parse(%q) = %v, %v; want %s", tc.out, got, err, tc.want)
			}
		})
	}
}
