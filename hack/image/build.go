package main

import (
	"fmt"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const entrypoint = "/usr/local/bin/muster-apiserver"

// spec is everything an image is made of. Two builds from equal specs give
// the same index digest.
type spec struct {
	// Binaries maps a platform ("linux/amd64") to its static binary.
	Binaries map[string]string
	// ZoneinfoZip is $GOROOT/lib/time/zoneinfo.zip.
	ZoneinfoZip string
	Version     string
	Revision    string
	Source      string
	// Created is the commit's time: the image's only timestamp, so that it
	// says when its source was made and never when it was built.
	Created time.Time
}

// labels are the OCI annotation keys, set on each image's config and on
// the index.
func (s spec) labels() map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       "muster-apiserver",
		"org.opencontainers.image.description": "Muster's gang-admission API server (scheduling.muster.dev)",
		"org.opencontainers.image.version":     s.Version,
		"org.opencontainers.image.revision":    s.Revision,
		"org.opencontainers.image.source":      s.Source,
		"org.opencontainers.image.created":     s.Created.UTC().Format(time.RFC3339),
	}
}

// build returns the multi-platform index, its platforms in sorted order.
func build(s spec) (v1.ImageIndex, error) {
	base, err := baseFiles(s.ZoneinfoZip)
	if err != nil {
		return nil, err
	}
	baseLayer, err := layerOf(base, s.Created)
	if err != nil {
		return nil, fmt.Errorf("building the base layer: %w", err)
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	idx = mutate.Annotations(idx, s.labels()).(v1.ImageIndex)
	for _, platform := range sortedKeys(s.Binaries) {
		p, err := v1.ParsePlatform(platform)
		if err != nil {
			return nil, fmt.Errorf("parsing platform %q: %w", platform, err)
		}
		img, err := imageFor(s, *p, baseLayer, s.Binaries[platform])
		if err != nil {
			return nil, fmt.Errorf("building the %s image: %w", platform, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: p},
		})
	}
	return idx, nil
}

// imageFor is one platform's image: the shared base layer, then the binary.
func imageFor(s spec, p v1.Platform, baseLayer v1.Layer, binPath string) (v1.Image, error) {
	bin, err := binaryFile(binPath)
	if err != nil {
		return nil, err
	}
	binLayer, err := layerOf([]file{bin}, s.Created)
	if err != nil {
		return nil, fmt.Errorf("building the binary layer: %w", err)
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	created := v1.Time{Time: s.Created.UTC()}
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: baseLayer, MediaType: types.OCILayer, History: v1.History{
			Created: created, CreatedBy: "hack/image: users, CA certificates (x509roots), time zone data (Go)"}},
		mutate.Addendum{Layer: binLayer, MediaType: types.OCILayer, History: v1.History{
			Created: created, CreatedBy: "hack/image: " + entrypoint + " " + s.Version}},
	)
	if err != nil {
		return nil, fmt.Errorf("appending layers: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.Created = created
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Config.Entrypoint = []string{entrypoint}
	cf.Config.Env = []string{"PATH=/usr/local/bin", "HOME=" + nonrootHome}
	cf.Config.User = fmt.Sprintf("%d:%d", nonrootUID, nonrootUID)
	// The server writes self-signed certificates under its working
	// directory when given none; the home is the one place it may write.
	cf.Config.WorkingDir = nonrootHome
	cf.Config.Labels = s.labels()
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("writing the config: %w", err)
	}
	return mutate.Annotations(img, s.labels()).(v1.Image), nil
}
