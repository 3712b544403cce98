package main

import (
	"archive/tar"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

var (
	imageLayout = flag.String("image.layout", "", "the OCI layout `make image` wrote (_out/image/oci); the run tests skip without it")
	ociRuntime  = flag.String("image.runtime", "runc", "the OCI runtime to run the image with")
)

// TestImageServesStandalone runs the host platform's image under a real OCI
// runtime, as the user and with the entrypoint the image declares, on a
// read-only root filesystem with one writable volume, and waits for the
// server's /readyz. --standalone needs no cluster; the host's network is
// shared so the test reaches it on 127.0.0.1.
func TestImageServesStandalone(t *testing.T) {
	img := hostImage(t)
	port := freePort(t)
	data := volume(t)
	c := runImage(t, img, []string{"--standalone", "--data-dir=/data", "--secure-port=" + strconv.Itoa(port)},
		map[string]string{data: "/data"})

	ca := filepath.Join(data, "certificates", "apiserver.crt")
	waitReady(t, c, fmt.Sprintf("https://127.0.0.1:%d/readyz", port), ca)
}

// hostImage is the image of this host's platform from the layout.
func hostImage(t *testing.T) v1.Image {
	t.Helper()
	if *imageLayout == "" {
		t.Skip("no -image.layout: run `make image-test`")
	}
	p, err := layout.FromPath(*imageLayout)
	if err != nil {
		t.Fatalf("opening %s: %v", *imageLayout, err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	tm, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(tm.Manifests) != 1 {
		t.Fatalf("%s lists %d entries, want the one `make image` writes", *imageLayout, len(tm.Manifests))
	}
	idx, err := top.ImageIndex(tm.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range m.Manifests {
		if d.Platform != nil && d.Platform.OS == runtime.GOOS && d.Platform.Architecture == runtime.GOARCH {
			img, err := idx.Image(d.Digest)
			if err != nil {
				t.Fatal(err)
			}
			return img
		}
	}
	t.Fatalf("%s has no image for %s/%s", *imageLayout, runtime.GOOS, runtime.GOARCH)
	return nil
}

// volume is a host directory the image's user may write, mounted into the
// container like a pod's emptyDir.
func volume(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chown(dir, nonrootUID, nonrootUID); err != nil {
		t.Fatalf("chown %s: %v", dir, err)
	}
	return dir
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// container is a running image and where its output goes.
type container struct {
	id     string
	output string
	exited chan error
}

// logs is the container's output so far, for failure messages.
func (c *container) logs() string {
	data, _ := os.ReadFile(c.output)
	return string(data)
}

// runImage unpacks img into an OCI runtime bundle and starts it with args
// after the image's entrypoint. mounts maps host directories to container
// paths. The container is killed and deleted when the test ends.
func runImage(t *testing.T, img v1.Image, args []string, mounts map[string]string) *container {
	t.Helper()
	if _, err := exec.LookPath(*ociRuntime); err != nil {
		t.Fatalf("%s not found (hack/install-oci-runtime.sh installs it): %v", *ociRuntime, err)
	}
	bundle := t.TempDir()
	if err := unpack(img, filepath.Join(bundle, "rootfs")); err != nil {
		t.Fatalf("unpacking the image: %v", err)
	}
	if err := writeRuntimeConfig(bundle, img, args, mounts); err != nil {
		t.Fatal(err)
	}
	c := &container{
		id:     fmt.Sprintf("muster-image-test-%d", time.Now().UnixNano()),
		output: filepath.Join(bundle, "output.log"),
		exited: make(chan error, 1),
	}
	out, err := os.Create(c.output)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(*ociRuntime, "run", "--bundle", bundle, c.id)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s run: %v", *ociRuntime, err)
	}
	go func() { c.exited <- cmd.Wait(); out.Close() }()
	t.Cleanup(func() {
		_ = exec.Command(*ociRuntime, "kill", c.id, "KILL").Run()
		select {
		case <-c.exited:
		case <-time.After(time.Minute):
			t.Errorf("container %s did not exit after SIGKILL", c.id)
		}
		if out, err := exec.Command(*ociRuntime, "delete", "--force", c.id).CombinedOutput(); err != nil &&
			!strings.Contains(string(out), "does not exist") {
			t.Errorf("%s delete %s: %v: %s", *ociRuntime, c.id, err, out)
		}
	})
	return c
}

// unpack writes img's flattened filesystem into rootfs, with the owners
// and modes the image gives (the test runs as root).
func unpack(img v1.Image, rootfs string) error {
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
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
		if err := os.Chmod(target, os.FileMode(hdr.Mode&0o777)|modeBits(hdr.Mode)); err != nil {
			return err
		}
	}
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

// writeRuntimeConfig writes the bundle's config.json: the runtime's own
// default spec (`runc spec`), given the image's entrypoint, user, working
// directory and environment, a read-only root as the chart's pods have,
// the host's network namespace, and the volumes.
func writeRuntimeConfig(bundle string, img v1.Image, args []string, mounts map[string]string) error {
	if out, err := exec.Command(*ociRuntime, "spec", "--bundle", bundle).CombinedOutput(); err != nil {
		return fmt.Errorf("%s spec: %v: %s", *ociRuntime, err, out)
	}
	path := filepath.Join(bundle, "config.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var s specs.Spec
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	uid, gid, err := parseUser(cf.Config.User)
	if err != nil {
		return err
	}
	s.Process.Terminal = false
	s.Process.Args = append(append([]string(nil), cf.Config.Entrypoint...), args...)
	s.Process.Env = cf.Config.Env
	s.Process.Cwd = cf.Config.WorkingDir
	s.Process.User = specs.User{UID: uid, GID: gid}
	s.Root = &specs.Root{Path: "rootfs", Readonly: true}
	s.Hostname = ""
	var namespaces []specs.LinuxNamespace
	for _, ns := range s.Linux.Namespaces {
		if ns.Type != specs.NetworkNamespace && ns.Type != specs.UTSNamespace {
			namespaces = append(namespaces, ns)
		}
	}
	s.Linux.Namespaces = namespaces
	for host, target := range mounts {
		s.Mounts = append(s.Mounts, specs.Mount{Destination: target, Type: "bind", Source: host, Options: []string{"rbind", "rw"}})
	}
	data, err = json.MarshalIndent(&s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// parseUser reads the image's numeric "uid:gid".
func parseUser(user string) (uint32, uint32, error) {
	u, g, ok := strings.Cut(user, ":")
	uid, err1 := strconv.ParseUint(u, 10, 32)
	gid, err2 := strconv.ParseUint(g, 10, 32)
	if !ok || err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("image user %q is not a numeric uid:gid", user)
	}
	return uint32(uid), uint32(gid), nil
}

// waitReady polls url until it answers 200 "ok", verifying the server's
// certificate against the CA in caFile (the last certificate there, which
// the server writes once it has started), or fails if the container exits
// or two minutes pass.
func waitReady(t *testing.T, c *container, url, caFile string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	var last string
	for {
		select {
		case err := <-c.exited:
			t.Fatalf("the container exited (%v) before %s was ready; last: %s\noutput:\n%s", err, url, last, c.logs())
		case <-ctx.Done():
			t.Fatalf("%s not ready in 2m; last: %s\noutput:\n%s", url, last, c.logs())
		case <-tick.C:
		}
		code, body, err := get(ctx, url, caFile)
		if err == nil && code == http.StatusOK && body == "ok" {
			t.Logf("%s answered 200 %q", url, body)
			return
		}
		last = fmt.Sprintf("%d %q %v", code, body, err)
	}
}

func get(ctx context.Context, url, caFile string) (int, string, error) {
	pemData, err := os.ReadFile(caFile)
	if err != nil {
		return 0, "", err
	}
	var ca *x509.Certificate
	for rest := pemData; ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
		if ca, err = x509.ParseCertificate(block.Bytes); err != nil {
			return 0, "", err
		}
	}
	if ca == nil {
		return 0, "", fmt.Errorf("no certificate in %s yet", caFile)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	client := &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, strings.TrimSpace(string(body)), err
}
