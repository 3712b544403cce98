package kubectlmuster

import (
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// TestCommandFlags checks what is refused before a server is asked.
func TestCommandFlags(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{[]string{"whatif"}, `required flag(s) "filename" not set`},
		{[]string{"whatif", "-f", "job.yaml", "-o", "wide"}, "unable to match a printer suitable for the output format \"wide\""},
		{[]string{"queue", "-o", "table"}, "unable to match a printer suitable for the output format \"table\""},
		{[]string{"queue", "train"}, `unknown command "train"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			streams, _, _, _ := genericiooptions.NewTestIOStreams()
			cmd := NewCommand(streams)
			cmd.SetArgs(append(tt.args, "--kubeconfig", "/nonexistent"))
			err := cmd.Execute()
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %v, want one saying %q", err, tt.wantErr)
			}
		})
	}
}

func TestOutputFlagNamesWide(t *testing.T) {
	streams, _, _, _ := genericiooptions.NewTestIOStreams()
	cmd := NewCommand(streams)
	for name, want := range map[string]string{"queue": "(wide, json, yaml,", "whatif": "(json, yaml,"} {
		sub, _, err := cmd.Find([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		if got := sub.Flags().Lookup("output").Usage; !strings.Contains(got, want) {
			t.Errorf("%s -o: %q, want it to hold %q", name, got, want)
		}
	}
}
