// Package ocirun runs Muster's image, from the OCI layout `make image`
// writes, under a real OCI runtime (runc from Debian's packages, see
// hack/install-oci-runtime.sh), as a container runtime would for the
// kubelet: the image's own entrypoint, user and environment, on a
// read-only root filesystem, with host directories mounted as volumes.
// Tests use it to prove that the image, not only the binary, serves.
package ocirun

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// HostImage is the image for this host's platform in the OCI layout at
// dir, whose index.json lists the one multi-platform index `make image`
// writes.
func HostImage(dir string) (v1.Image, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("opening the OCI layout %s: %w", dir, err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", dir, err)
	}
	tm, err := top.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("reading %s/index.json: %w", dir, err)
	}
	if len(tm.Manifests) != 1 {
		return nil, fmt.Errorf("%s lists %d entries, want the one `make image` writes", dir, len(tm.Manifests))
	}
	idx, err := top.ImageIndex(tm.Manifests[0].Digest)
	if err != nil {
		return nil, fmt.Errorf("reading the image index in %s: %w", dir, err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("reading the image index in %s: %w", dir, err)
	}
	for _, d := range m.Manifests {
		if d.Platform != nil && d.Platform.OS == runtime.GOOS && d.Platform.Architecture == runtime.GOARCH {
			return idx.Image(d.Digest)
		}
	}
	return nil, fmt.Errorf("%s has no image for %s/%s (make image IMAGE_PLATFORMS=%s/%s)", dir, runtime.GOOS, runtime.GOARCH, runtime.GOOS, runtime.GOARCH)
}

// Unpack writes img's flattened filesystem into rootfs with the owners
// and modes the image gives (the caller runs as root, as the runtime
// must). Muster's image holds directories and regular files only.
func Unpack(img v1.Image, rootfs string) error {
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the image's filesystem: %w", err)
		}
		if err := unpackEntry(tr, hdr, rootfs); err != nil {
			return err
		}
	}
}

// unpackEntry writes one tar entry under rootfs.
func unpackEntry(tr *tar.Reader, hdr *tar.Header, rootfs string) error {
	target := filepath.Join(rootfs, filepath.Clean("/"+hdr.Name))
	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := os.MkdirAll(target, 0o755); err != nil {
			return err
		}
	case tar.TypeReg:
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, tr)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("writing %s: %w", hdr.Name, err)
		}
	default:
		return fmt.Errorf("%s: unexpected tar entry type %q", hdr.Name, hdr.Typeflag)
	}
	if err := os.Lchown(target, hdr.Uid, hdr.Gid); err != nil {
		return err
	}
	return os.Chmod(target, os.FileMode(hdr.Mode&0o777)|modeBits(hdr.Mode))
}

// modeBits maps the tar header's sticky, setuid and setgid bits to Go's.
func modeBits(mode int64) os.FileMode {
	var m os.FileMode
	if mode&0o1000 != 0 {
		m |= os.ModeSticky
	}
	if mode&0o2000 != 0 {
		m |= os.ModeSetgid
	}
	if mode&0o4000 != 0 {
		m |= os.ModeSetuid
	}
	return m
}
