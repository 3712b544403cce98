package server

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/muster-dev/muster/pkg/version"
)

// TestVersionFlag checks that --version prints the linked version and exits
// without serving: no etcd, no data directory, no listener is needed.
func TestVersionFlag(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{name: "--version alone", args: []string{"--version"}},
		{name: "--version wins over serving flags", args: []string{"--version", "--standalone", "--secure-port=1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := NewCommand(context.Background(), NewOptions())
			var out bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetErr(&out)
			cmd.SetArgs(tc.args)
			if err := cmd.Execute(); err != nil {
				t.Fatalf("Execute(%v): %v\n%s", tc.args, err, out.String())
			}
			want := "muster-apiserver " + version.Get().String() + "\n"
			if out.String() != want {
				t.Errorf("Execute(%v) printed %q, want %q", tc.args, out.String(), want)
			}
			if !strings.HasPrefix(version.Get().Version, "v") {
				t.Errorf("version %q does not start with v", version.Get().Version)
			}
		})
	}
}

// TestVersionFlagHasNoShorthand checks that -v stays free: klog's verbosity
// is --v, and a -v that printed the version would surprise.
func TestVersionFlagHasNoShorthand(t *testing.T) {
	cmd := NewCommand(context.Background(), NewOptions())
	f := cmd.Flags().Lookup("version")
	if f == nil {
		t.Fatal("no --version flag")
	}
	if f.Shorthand != "" {
		t.Errorf("--version has shorthand -%s, want none", f.Shorthand)
	}
}
