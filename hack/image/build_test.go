package main

import (
	"archive/tar"
	"crypto/x509"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// testSpec is a spec with small stand-in binaries, one per platform.
func testSpec(t *testing.T) spec {
	t.Helper()
	dir := t.TempDir()
	bins := map[string]string{}
	for _, p := range []string{"linux/amd64", "linux/arm64"} {
		path := filepath.Join(dir, filepath.Base(p))
		if err := os.WriteFile(path, []byte("binary for "+p), 0o755); err != nil {
			t.Fatal(err)
		}
		bins[p] = path
	}
	return spec{
		Binaries:    bins,
		ZoneinfoZip: filepath.Join(goroot(t), "lib", "time", "zoneinfo.zip"),
		Version:     "v0.0.0-1-gabcdef0",
		Revision:    "abcdef0123456789abcdef0123456789abcdef01",
		Source:      "https://github.com/muster-dev/muster",
		Created:     time.Unix(1700000000, 0).UTC(),
	}
}

func mustDigest(t *testing.T, s spec) v1.Hash {
	t.Helper()
	idx, err := build(s)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	d, err := idx.Digest()
	if err != nil {
		t.Fatalf("digest: %v", err)
	}
	return d
}

// TestBuildIsReproducible checks that equal inputs give equal index
// digests, also through a layout written to disk and its archive, and that
// each input that should count does change the digest.
func TestBuildIsReproducible(t *testing.T) {
	base := testSpec(t)
	want := mustDigest(t, base)

	var archives [2][]byte
	for i := range archives {
		dir := t.TempDir()
		idx, err := build(base)
		if err != nil {
			t.Fatal(err)
		}
		if err := writeLayout(filepath.Join(dir, "oci"), idx, base.Version); err != nil {
			t.Fatal(err)
		}
		got := layoutImageDigest(t, filepath.Join(dir, "oci"))
		if got != want {
			t.Errorf("build %d: layout holds index %s, want %s", i, got, want)
		}
		if err := writeArchive(filepath.Join(dir, "oci"), filepath.Join(dir, "image.tar"), base.Created); err != nil {
			t.Fatal(err)
		}
		if archives[i], err = os.ReadFile(filepath.Join(dir, "image.tar")); err != nil {
			t.Fatal(err)
		}
	}
	if string(archives[0]) != string(archives[1]) {
		t.Errorf("two archives of the same build differ")
	}

	changes := []struct {
		name   string
		change func(*spec)
	}{
		{name: "version", change: func(s *spec) { s.Version = "v0.1.0" }},
		{name: "revision", change: func(s *spec) { s.Revision = "0000000000000000000000000000000000000000" }},
		{name: "commit time", change: func(s *spec) { s.Created = s.Created.Add(time.Second) }},
		{name: "binary", change: func(s *spec) {
			path := filepath.Join(t.TempDir(), "other")
			if err := os.WriteFile(path, []byte("another binary"), 0o755); err != nil {
				t.Fatal(err)
			}
			s.Binaries = map[string]string{"linux/amd64": path, "linux/arm64": s.Binaries["linux/arm64"]}
		}},
	}
	for _, tc := range changes {
		t.Run(tc.name+" changes the digest", func(t *testing.T) {
			s := base
			tc.change(&s)
			if got := mustDigest(t, s); got == want {
				t.Errorf("changing the %s kept digest %s", tc.name, got)
			}
		})
	}
}

// layoutImageDigest is the digest of the one index a layout written by
// writeLayout holds.
func layoutImageDigest(t *testing.T, dir string) v1.Hash {
	t.Helper()
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 {
		t.Fatalf("layout lists %d entries, want 1", len(m.Manifests))
	}
	return m.Manifests[0].Digest
}

// TestImageContents checks what each platform's image holds and how it
// runs: non-root, the entrypoint, the OCI labels, and the files beside the
// binary.
func TestImageContents(t *testing.T) {
	s := testSpec(t)
	idx, err := build(s)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Annotations["org.opencontainers.image.version"]; got != s.Version {
		t.Errorf("index version annotation = %q, want %q", got, s.Version)
	}
	if len(m.Manifests) != 2 {
		t.Fatalf("index lists %d images, want 2", len(m.Manifests))
	}
	for _, d := range m.Manifests {
		platform := d.Platform.OS + "/" + d.Platform.Architecture
		t.Run(platform, func(t *testing.T) {
			img, err := idx.Image(d.Digest)
			if err != nil {
				t.Fatal(err)
			}
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if cf.OS+"/"+cf.Architecture != platform {
				t.Errorf("config platform %s/%s, index says %s", cf.OS, cf.Architecture, platform)
			}
			if cf.Config.User != "65532:65532" {
				t.Errorf("user = %q, want 65532:65532", cf.Config.User)
			}
			if len(cf.Config.Entrypoint) != 1 || cf.Config.Entrypoint[0] != entrypoint {
				t.Errorf("entrypoint = %q, want [%s]", cf.Config.Entrypoint, entrypoint)
			}
			for key, want := range map[string]string{
				"org.opencontainers.image.version":  s.Version,
				"org.opencontainers.image.revision": s.Revision,
				"org.opencontainers.image.source":   s.Source,
			} {
				if got := cf.Config.Labels[key]; got != want {
					t.Errorf("label %s = %q, want %q", key, got, want)
				}
			}
			files := readFiles(t, img)
			if got := string(files[entrypoint]); got != "binary for "+platform {
				t.Errorf("%s holds %q, want this platform's binary", entrypoint, got)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(files["/etc/ssl/certs/ca-certificates.crt"]) {
				t.Errorf("/etc/ssl/certs/ca-certificates.crt holds no certificate")
			}
			for _, zone := range []string{"/usr/share/zoneinfo/UTC", "/usr/share/zoneinfo/Europe/Berlin"} {
				if _, err := time.LoadLocationFromTZData(zone, files[zone]); err != nil {
					t.Errorf("%s: %v", zone, err)
				}
			}
			if len(files["/etc/passwd"]) == 0 {
				t.Errorf("no /etc/passwd")
			}
		})
	}
}

// readFiles returns every regular file of img's flattened filesystem.
func readFiles(t *testing.T, img v1.Image) map[string][]byte {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	files := map[string][]byte{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files["/"+hdr.Name] = data
	}
}

// goroot is the Go installation's root, from `go env GOROOT`:
// runtime.GOROOT is empty in a test built with -trimpath, as make builds
// every test.
func goroot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	return strings.TrimSpace(string(out))
}
