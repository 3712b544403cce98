package kubectlmuster

import (
	"strings"
	"testing"
)

func TestPodGroupName(t *testing.T) {
	tests := []struct {
		args    []string
		want    string
		wantErr string
	}{
		{[]string{"pg", "train"}, "train", ""},
		{[]string{"podgroup", "train"}, "train", ""},
		{[]string{"podgroups.scheduling.muster.dev", "train"}, "train", ""},
		{[]string{"pg/train"}, "train", ""},
		{[]string{"PodGroup/train"}, "train", ""},
		{[]string{"pod", "train"}, "", `not "pod"`},
		{[]string{"pg"}, "", "needs the PodGroup's name"},
		{[]string{"pg/"}, "", "needs the PodGroup's name"},
	}
	for _, tt := range tests {
		got, err := podGroupName(tt.args)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("podGroupName(%q) error %v, want one saying %q", tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("podGroupName(%q) = %q, %v; want %q", tt.args, got, err, tt.want)
		}
	}
}
