// Command image assembles Muster's multi-platform OCI image from static
// muster-apiserver binaries, with no container daemon and no base image:
// an empty base, a layer of users, CA certificates and time zone data, and
// a layer with the binary. It writes an OCI image layout and, optionally,
// the same layout as one tar archive, and prints the index digest.
//
// `make image` builds the binaries and runs it; see docs/image.md.
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// binariesFlag collects repeated --binary=<os>/<arch>=<path>.
type binariesFlag map[string]string

func (b binariesFlag) String() string { return fmt.Sprint(map[string]string(b)) }

func (b binariesFlag) Set(v string) error {
	platform, path, ok := strings.Cut(v, "=")
	if !ok || platform == "" || path == "" {
		return fmt.Errorf("want <os>/<arch>=<path>, got %q", v)
	}
	b[platform] = path
	return nil
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	binaries := binariesFlag{}
	fs.Var(binaries, "binary", "<os>/<arch>=<path> of a static muster-apiserver; repeat for each platform")
	s := spec{}
	fs.StringVar(&s.ZoneinfoZip, "zoneinfo", "", "the Go toolchain's lib/time/zoneinfo.zip")
	fs.StringVar(&s.Version, "version", "", "the version (hack/version.sh): the layout's tag and the version label")
	fs.StringVar(&s.Revision, "revision", "", "the commit built, for the revision label")
	fs.StringVar(&s.Source, "source", "https://github.com/muster-dev/muster", "the source repository, for the source label")
	created := fs.Int64("created", 0, "the commit's time in Unix seconds, the image's only timestamp")
	layoutDir := fs.String("layout", "", "directory to write the OCI image layout into (replaced)")
	archive := fs.String("archive", "", "if set, also write the layout as this tar file (an OCI archive)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	s.Binaries = binaries
	s.Created = time.Unix(*created, 0).UTC()
	if len(s.Binaries) == 0 || s.ZoneinfoZip == "" || s.Version == "" || *layoutDir == "" {
		return fmt.Errorf("--binary, --zoneinfo, --version and --layout are required")
	}

	idx, err := build(s)
	if err != nil {
		return err
	}
	if err := writeLayout(*layoutDir, idx, s.Version); err != nil {
		return err
	}
	if *archive != "" {
		if err := writeArchive(*layoutDir, *archive, s.Created); err != nil {
			return err
		}
	}
	return report(idx, s.Version, *layoutDir, *archive)
}

// report prints the index digest (the one to pin and compare) and each
// platform's manifest digest.
func report(idx v1.ImageIndex, version, layoutDir, archive string) error {
	digest, err := idx.Digest()
	if err != nil {
		return fmt.Errorf("digesting the index: %w", err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return fmt.Errorf("reading the index: %w", err)
	}
	fmt.Printf("muster-apiserver:%s\n", version)
	fmt.Printf("  index   %s\n", digest)
	for _, d := range m.Manifests {
		fmt.Printf("  %-7s %s\n", d.Platform.Architecture, d.Digest)
	}
	fmt.Printf("  layout  %s\n", layoutDir)
	if archive != "" {
		fmt.Printf("  archive %s\n", archive)
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
