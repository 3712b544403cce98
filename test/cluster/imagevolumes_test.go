package cluster

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestCheckRunAs(t *testing.T) {
	id := func(v int64) *int64 { return &v }
	tests := []struct {
		name      string
		pod       *corev1.PodSecurityContext
		container *corev1.SecurityContext
		wantErr   bool
	}{
		{name: "no securityContext runs as the image says"},
		{name: "the pod asks for the image's user", pod: &corev1.PodSecurityContext{RunAsUser: id(65532), RunAsGroup: id(65532)}},
		{name: "the pod asks for another user", pod: &corev1.PodSecurityContext{RunAsUser: id(1000)}, wantErr: true},
		{name: "the pod asks for another group", pod: &corev1.PodSecurityContext{RunAsGroup: id(0)}, wantErr: true},
		{name: "the container's user overrides the pod's", pod: &corev1.PodSecurityContext{RunAsUser: id(1000)},
			container: &corev1.SecurityContext{RunAsUser: id(65532)}},
		{name: "the container asks for another user", pod: &corev1.PodSecurityContext{RunAsUser: id(65532)},
			container: &corev1.SecurityContext{RunAsUser: id(0)}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := checkRunAs(tt.pod, tt.container, 65532, 65532); (err != nil) != tt.wantErr {
				t.Errorf("checkRunAs = %v, want error %v", err, tt.wantErr)
			}
		})
	}
}

// TestProjectVolumes checks the modes, group and read-only flags the
// container's volumes get, as the kubelet gives a pod's.
func TestProjectVolumes(t *testing.T) {
	root := t.TempDir()
	write := func(dir string, files ...string) string {
		path := filepath.Join(root, dir)
		if err := os.MkdirAll(path, 0o700); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if err := os.WriteFile(filepath.Join(path, f), []byte(f), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return path
	}
	mode := func(m int32) *int32 { return &m }
	volumes := []corev1.Volume{
		{Name: "certs", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", DefaultMode: mode(0o400),
			Items: []corev1.KeyToPath{{Key: "a", Path: "a"}, {Key: "b", Path: "b", Mode: mode(0o600)}}}}},
		{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
		{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	mounts := []corev1.VolumeMount{{Name: "certs", MountPath: "/certs"}, {Name: "config", MountPath: "/config"}, {Name: "tmp", MountPath: "/tmp"}}
	local := map[string]string{"/certs": write("certs", "a", "b"), "/config": write("config", "c"), "/tmp": write("tmp")}
	fsGroup := uint32(os.Getegid())

	got, err := projectVolumes(volumes, mounts, local, &fsGroup)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct {
		dest     string
		readOnly bool
	}{{"/certs", true}, {"/config", true}, {"/tmp", false}} {
		if got[i].Destination != want.dest || got[i].Source != local[want.dest] || got[i].ReadOnly != want.readOnly {
			t.Errorf("mount %d = %+v, want %s from %s, read-only %v", i, got[i], want.dest, local[want.dest], want.readOnly)
		}
	}
	files := []struct {
		path string
		mode fs.FileMode
	}{
		{"certs", fs.ModeDir | 0o755},
		{"certs/a", 0o440}, // defaultMode 0400, readable by the fsGroup
		{"certs/b", 0o640}, // the item's own 0600, readable by the fsGroup
		{"config/c", 0o644},
		{"tmp", fs.ModeDir | 0o777},
	}
	for _, f := range files {
		info, err := os.Stat(filepath.Join(root, f.path))
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode() != f.mode {
			t.Errorf("%s has mode %v, want %v", f.path, info.Mode(), f.mode)
		}
		if gid := info.Sys().(*syscall.Stat_t).Gid; f.path != "tmp" && gid != fsGroup {
			t.Errorf("%s belongs to group %d, want the fsGroup %d", f.path, gid, fsGroup)
		}
	}

	subPath := []corev1.VolumeMount{{Name: "certs", MountPath: "/certs/a", SubPath: "a"}}
	if _, err := projectVolumes(volumes, subPath, map[string]string{"/certs/a": local["/certs"]}, nil); err == nil {
		t.Error("a subPath mount was accepted; the harness mounts whole volumes only")
	}
}
