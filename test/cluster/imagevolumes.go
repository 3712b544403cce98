package cluster

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-dev/muster/test/ocirun"
)

// projectVolumes gives the volumes materialiseMounts wrote (mount path ->
// local directory) the owners and modes the kubelet gives a pod's, and
// returns them as the container's mounts at the chart's own mount paths:
// Secrets and ConfigMaps read-only, files in the volume's mode (an item's
// own mode where it names one) and, with an fsGroup, owned by that group
// and readable by it; emptyDirs writable by all.
func projectVolumes(volumes []corev1.Volume, mounts []corev1.VolumeMount, local map[string]string, fsGroup *uint32) ([]ocirun.Mount, error) {
	byName := map[string]corev1.Volume{}
	for _, v := range volumes {
		byName[v.Name] = v
	}
	var out []ocirun.Mount
	for _, m := range mounts {
		if m.SubPath != "" || m.SubPathExpr != "" {
			return nil, fmt.Errorf("volume mount %s: the harness mounts whole volumes only", m.Name)
		}
		v, dir := byName[m.Name], local[m.MountPath]
		readOnly := m.ReadOnly
		var err error
		switch {
		case v.Secret != nil:
			readOnly = true
			err = ownFiles(dir, itemModes(v.Secret.Items), fileMode(v.Secret.DefaultMode), fsGroup)
		case v.ConfigMap != nil:
			readOnly = true
			err = ownFiles(dir, itemModes(v.ConfigMap.Items), fileMode(v.ConfigMap.DefaultMode), fsGroup)
		case v.EmptyDir != nil:
			// The kubelet makes an emptyDir 0777, and the pod's user
			// writes there.
			err = os.Chmod(dir, 0o777)
		default:
			err = fmt.Errorf("the harness mounts Secrets, ConfigMaps and emptyDirs into a container only")
		}
		if err != nil {
			return nil, fmt.Errorf("volume %s: %w", m.Name, err)
		}
		out = append(out, ocirun.Mount{Source: dir, Destination: m.MountPath, ReadOnly: readOnly})
	}
	return out, nil
}

// fileMode is a volume's defaultMode, 0644 when unset as in the API.
func fileMode(defaultMode *int32) fs.FileMode {
	if defaultMode == nil {
		return 0o644
	}
	return fs.FileMode(*defaultMode)
}

// itemModes are the modes a volume's items set for their paths.
func itemModes(items []corev1.KeyToPath) map[string]fs.FileMode {
	modes := map[string]fs.FileMode{}
	for _, it := range items {
		if it.Mode != nil {
			modes[it.Path] = fs.FileMode(*it.Mode)
		}
	}
	return modes
}

// ownFiles sets the mode of each file under dir (modes[path relative to
// dir], else mode) and opens the directory to all, as the kubelet's
// volumes are; with an fsGroup, the files belong to that group and it
// may read them, as the kubelet's ownership management does.
func ownFiles(dir string, modes map[string]fs.FileMode, mode fs.FileMode, fsGroup *uint32) error {
	gid := -1
	if fsGroup != nil {
		gid = int(*fsGroup)
	}
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(path, -1, gid); err != nil {
			return err
		}
		if d.IsDir() {
			return os.Chmod(path, 0o755)
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		m, ok := modes[rel]
		if !ok {
			m = mode
		}
		if fsGroup != nil {
			m |= 0o440
		}
		return os.Chmod(path, m)
	})
}
