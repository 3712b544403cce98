package main

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// refNameAnnotation names the image inside an OCI layout, so that
// `skopeo copy oci:<dir>:<version>` and similar tools find it by tag.
const refNameAnnotation = "org.opencontainers.image.ref.name"

// writeLayout writes idx as the one entry of a fresh OCI image layout in
// dir, tagged with version. Whatever dir held before is removed: a layout
// that kept older builds' blobs would not be what this build made.
func writeLayout(dir string, idx v1.ImageIndex, version string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("clearing %s: %w", dir, err)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("creating the OCI layout %s: %w", dir, err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{refNameAnnotation: version})); err != nil {
		return fmt.Errorf("writing the image into %s: %w", dir, err)
	}
	return nil
}

// writeArchive packs the layout in dir into one tar file, the form that
// `skopeo copy oci-archive:<file>` and `podman load` read. Entries are
// sorted and carry fixed times and owners, so the archive's bytes are as
// reproducible as the layout's.
func writeArchive(dir, archive string, modTime time.Time) error {
	var paths []string
	if err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			paths = append(paths, p)
		}
		return nil
	}); err != nil {
		return fmt.Errorf("listing %s: %w", dir, err)
	}
	sort.Strings(paths)
	if err := os.MkdirAll(filepath.Dir(archive), 0o755); err != nil {
		return fmt.Errorf("creating the archive's directory: %w", err)
	}
	out, err := os.Create(archive)
	if err != nil {
		return fmt.Errorf("creating %s: %w", archive, err)
	}
	defer out.Close()
	tw := tar.NewWriter(out)
	for _, p := range paths {
		if err := addToArchive(tw, dir, p, modTime); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("closing %s: %w", archive, err)
	}
	return out.Close()
}

func addToArchive(tw *tar.Writer, dir, p string, modTime time.Time) error {
	fi, err := os.Stat(p)
	if err != nil {
		return fmt.Errorf("reading %s: %w", p, err)
	}
	rel, err := filepath.Rel(dir, p)
	if err != nil {
		return err
	}
	hdr := &tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, ModTime: modTime, Format: tar.FormatPAX}
	if fi.IsDir() {
		hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, hdr.Name+"/", 0o755
		return tw.WriteHeader(hdr)
	}
	hdr.Typeflag, hdr.Size = tar.TypeReg, fi.Size()
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("archiving %s: %w", rel, err)
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := io.Copy(tw, f); err != nil {
		return fmt.Errorf("archiving %s: %w", rel, err)
	}
	return nil
}
