package main

import (
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestPushKeepsDigest pushes a written layout's image, as `crane push
// <layout> <ref>` does, to a registry on loopback and checks that the
// registry serves it under the digest the build printed, with both
// platforms: the digest to pin is the one `make image` reports.
func TestPushKeepsDigest(t *testing.T) {
	s := testSpec(t)
	idx, err := build(s)
	if err != nil {
		t.Fatal(err)
	}
	want, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "oci")
	if err := writeLayout(dir, idx, s.Version); err != nil {
		t.Fatal(err)
	}

	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	tm, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if got := tm.Manifests[0].Annotations[refNameAnnotation]; got != s.Version {
		t.Errorf("layout entry tagged %q, want %q", got, s.Version)
	}
	fromLayout, err := top.ImageIndex(tm.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}

	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	ref, err := name.ParseReference(strings.TrimPrefix(srv.URL, "http://") + "/muster/muster-apiserver:" + s.Version)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(ref, fromLayout); err != nil {
		t.Fatalf("pushing: %v", err)
	}
	desc, err := remote.Get(ref)
	if err != nil {
		t.Fatalf("reading back: %v", err)
	}
	if desc.Digest != want {
		t.Errorf("registry serves %s as %s, build printed %s", ref, desc.Digest, want)
	}
	pushed, err := desc.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := pushed.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 2 {
		t.Errorf("pushed index lists %d images, want 2", len(m.Manifests))
	}
}
