package main

import (
	"archive/zip"
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"os"
	"path"

	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// The image's unprivileged user, by number so that the kubelet can check
// runAsNonRoot without reading /etc/passwd. 65532 is the "nonroot" of
// distroless images, which the Dockerfile this replaces ran as.
const (
	nonrootUID  = 65532
	nonrootHome = "/home/nonroot"
)

// baseFiles is what every platform's image holds besides the binary: users,
// CA certificates and time zone data. It is the same on every platform, so
// the registry stores its layer once.
func baseFiles(zoneinfoZip string) ([]file, error) {
	certs, err := caBundle()
	if err != nil {
		return nil, err
	}
	zones, err := zoneFiles(zoneinfoZip)
	if err != nil {
		return nil, err
	}
	files := []file{
		{Path: "/etc/passwd", Mode: 0o644, Data: []byte(
			"root:x:0:0:root:/root:/sbin/nologin\n" +
				fmt.Sprintf("nonroot:x:%d:%d:nonroot:%s:/sbin/nologin\n", nonrootUID, nonrootUID, nonrootHome))},
		{Path: "/etc/group", Mode: 0o644, Data: []byte(
			"root:x:0:\n" + fmt.Sprintf("nonroot:x:%d:\n", nonrootUID))},
		{Path: "/etc/ssl/certs/ca-certificates.crt", Mode: 0o644, Data: certs},
		{Path: "/tmp", Mode: 0o1777, Dir: true},
		{Path: nonrootHome, Mode: 0o700, UID: nonrootUID, GID: nonrootUID, Dir: true},
		{Path: "/root", Mode: 0o700, Dir: true},
	}
	return append(files, zones...), nil
}

// caBundle returns the Mozilla NSS roots that golang.org/x/crypto's
// x509roots/fallback module carries, as PEM at the path Go's crypto/x509
// reads first on Linux. The module's version is pinned in this module's
// go.sum, so a build of the same commit writes the same bytes; Debian's
// ca-certificates package would change under the same commit with every
// point release. Roots with a distrust-after date are left out: PEM cannot
// carry the constraint, and trusting them without it would be wider than
// NSS does.
func caBundle() ([]byte, error) {
	var out bytes.Buffer
	n := 0
	for root := range bundle.Roots() {
		if root.Constraint != nil {
			continue
		}
		if _, err := x509.ParseCertificate(root.Certificate); err != nil {
			return nil, fmt.Errorf("parsing a root of the x509roots bundle: %w", err)
		}
		if err := pem.Encode(&out, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate}); err != nil {
			return nil, fmt.Errorf("encoding a root certificate: %w", err)
		}
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("the x509roots bundle holds no unconstrained root")
	}
	return out.Bytes(), nil
}

// zoneFiles unpacks the Go toolchain's zoneinfo.zip ($GOROOT/lib/time) into
// /usr/share/zoneinfo, where Go's time package (and any other program)
// looks first: no ZONEINFO variable to set, and the data is the one the
// pinned Go release ships.
func zoneFiles(zoneinfoZip string) ([]file, error) {
	r, err := zip.OpenReader(zoneinfoZip)
	if err != nil {
		return nil, fmt.Errorf("opening time zone data %s: %w", zoneinfoZip, err)
	}
	defer r.Close()
	var files []file
	for _, zf := range r.File {
		if zf.FileInfo().IsDir() {
			continue
		}
		rc, err := zf.Open()
		if err != nil {
			return nil, fmt.Errorf("reading %s from %s: %w", zf.Name, zoneinfoZip, err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("reading %s from %s: %w", zf.Name, zoneinfoZip, err)
		}
		files = append(files, file{Path: path.Join("/usr/share/zoneinfo", path.Clean("/"+zf.Name)), Mode: 0o644, Data: data})
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s holds no time zone", zoneinfoZip)
	}
	return files, nil
}

// binaryFile is the server, where the Dockerfile this replaces put it.
func binaryFile(binPath string) (file, error) {
	data, err := os.ReadFile(binPath)
	if err != nil {
		return file{}, fmt.Errorf("reading the binary: %w", err)
	}
	return file{Path: entrypoint, Mode: 0o755, Data: data}, nil
}
