package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/muster-dev/muster/pkg/manifests"
)

// TestWebhookFlags checks the webhook listener's flags: on by default on
// manifests.DefaultPort, off with 0, and a client CA file that must exist.
func TestWebhookFlags(t *testing.T) {
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, []byte("placeholder"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		args        []string
		wantPort    int
		wantEnabled bool
		wantErr     string
	}{
		{"served by default on its own port", nil, manifests.DefaultPort, true, ""},
		{"0 serves no webhook", []string{"--webhook-port=0"}, 0, false, ""},
		{"a port out of range is refused", []string{"--webhook-port=70000"}, 70000, true, "--webhook-port 70000 must be between 0 and 65535"},
		{"a client CA file is accepted", []string{"--webhook-client-ca-file=" + ca}, manifests.DefaultPort, true, ""},
		{"a missing client CA file is refused", []string{"--webhook-client-ca-file=/nonexistent/ca.crt"}, manifests.DefaultPort, true, "--webhook-client-ca-file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := NewWebhookOptions()
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			errs := o.Validate()
			switch {
			case tt.wantErr == "" && len(errs) > 0:
				t.Errorf("validate: %v", errs)
			case tt.wantErr != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), tt.wantErr)):
				t.Errorf("validate = %v, want an error containing %q", errs, tt.wantErr)
			}
			if o.BindPort != tt.wantPort || o.enabled() != tt.wantEnabled {
				t.Errorf("port %d enabled %v, want %d and %v", o.BindPort, o.enabled(), tt.wantPort, tt.wantEnabled)
			}
		})
	}
}
