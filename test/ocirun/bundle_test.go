package ocirun

import (
	"slices"
	"testing"
)

func TestMergeEnv(t *testing.T) {
	tests := []struct {
		name              string
		base, extra, want []string
	}{
		{"the container's env follows the image's", []string{"PATH=/bin"}, []string{"A=1"}, []string{"PATH=/bin", "A=1"}},
		{"the container's value wins, in the image's place", []string{"PATH=/bin", "B=2"}, []string{"PATH=/usr/bin"}, []string{"PATH=/usr/bin", "B=2"}},
		{"the last of the container's wins", nil, []string{"A=1", "A=2"}, []string{"A=2"}},
		{"nothing added", []string{"PATH=/bin"}, nil, []string{"PATH=/bin"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mergeEnv(tt.base, tt.extra); !slices.Equal(got, tt.want) {
				t.Errorf("mergeEnv(%q, %q) = %q, want %q", tt.base, tt.extra, got, tt.want)
			}
		})
	}
}

func TestParseUser(t *testing.T) {
	tests := []struct {
		user     string
		uid, gid uint32
		wantErr  bool
	}{
		{user: "65532:65532", uid: 65532, gid: 65532},
		{user: "0:0"},
		{user: "nonroot", wantErr: true},
		{user: "65532", wantErr: true},
		{user: "nonroot:nonroot", wantErr: true},
		{user: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.user, func(t *testing.T) {
			uid, gid, err := ParseUser(tt.user)
			if (err != nil) != tt.wantErr || uid != tt.uid || gid != tt.gid {
				t.Errorf("ParseUser(%q) = %d, %d, %v; want %d, %d, error %v", tt.user, uid, gid, err, tt.uid, tt.gid, tt.wantErr)
			}
		})
	}
}
