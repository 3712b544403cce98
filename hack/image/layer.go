package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"path"
	"sort"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// file is one entry of a layer. A nil Data with Dir set is a directory.
type file struct {
	Path string // absolute, e.g. /etc/passwd
	Mode int64
	UID  int
	GID  int
	Dir  bool
	Data []byte
}

// layerOf builds a gzip-compressed OCI layer from files. The bytes depend on
// nothing but the files and modTime: entries sorted by path, every parent
// directory listed, fixed owners and times, no user or host names, so the
// same inputs give the same digest on any machine.
func layerOf(files []file, modTime time.Time) (v1.Layer, error) {
	data, err := tarOf(withParents(files), modTime)
	if err != nil {
		return nil, err
	}
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// withParents adds every missing parent directory (root-owned, 0755), so
// that unpacking never has to invent one with its own mode.
func withParents(files []file) []file {
	have := map[string]bool{}
	for _, f := range files {
		have[f.Path] = true
	}
	out := append([]file(nil), files...)
	for _, f := range files {
		for dir := path.Dir(f.Path); dir != "/"; dir = path.Dir(dir) {
			if !have[dir] {
				have[dir] = true
				out = append(out, file{Path: dir, Mode: 0o755, Dir: true})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func tarOf(files []file, modTime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		hdr := &tar.Header{
			Name:    f.Path[1:], // layers hold relative names
			Mode:    f.Mode,
			Uid:     f.UID,
			Gid:     f.GID,
			ModTime: modTime,
			Format:  tar.FormatPAX,
		}
		if f.Dir {
			hdr.Typeflag = tar.TypeDir
			hdr.Name += "/"
		} else {
			hdr.Typeflag = tar.TypeReg
			hdr.Size = int64(len(f.Data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("writing tar header of %s: %w", f.Path, err)
		}
		if _, err := tw.Write(f.Data); err != nil {
			return nil, fmt.Errorf("writing %s: %w", f.Path, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("closing layer tar: %w", err)
	}
	return buf.Bytes(), nil
}
