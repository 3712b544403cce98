package ocirun

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

var (
	imageLayout = flag.String("image.layout", "", "the OCI layout `make image` wrote (_out/image/oci); the test skips without it")
	ociRuntime  = flag.String("image.runtime", DefaultRuntime, "the OCI runtime to run the image with")
)

// TestImageServesStandalone runs the host platform's image under a real OCI
// runtime, as the user and with the entrypoint the image declares, on a
// read-only root filesystem with one writable volume, and waits for the
// server's /readyz. --standalone needs no cluster; the host's network is
// shared so the test reaches it on 127.0.0.1. (test/e2e's
// TestImageServesChartArguments runs it as the chart's pod.)
func TestImageServesStandalone(t *testing.T) {
	if *imageLayout == "" {
		t.Skip("no -image.layout: run `make image-test`")
	}
	img, err := HostImage(*imageLayout)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	uid, gid, err := ParseUser(cf.Config.User)
	if err != nil {
		t.Fatal(err)
	}
	// A host directory the image's user may write, mounted like a pod's
	// emptyDir.
	data := t.TempDir()
	if err := os.Chown(data, int(uid), int(gid)); err != nil {
		t.Fatalf("chown %s: %v", data, err)
	}
	port := freePort(t)
	bundle := t.TempDir()
	cfg := Config{
		Args:         []string{"--standalone", "--data-dir=/data", "--secure-port=" + strconv.Itoa(port)},
		Mounts:       []Mount{{Source: data, Destination: "/data"}},
		ReadOnlyRoot: true,
	}
	if _, err := exec.LookPath(*ociRuntime); err != nil {
		t.Fatalf("%s not found (hack/install-oci-runtime.sh installs it): %v", *ociRuntime, err)
	}
	if err := WriteBundle(*ociRuntime, bundle, img, cfg); err != nil {
		t.Fatal(err)
	}
	c := start(t, bundle)
	ca := filepath.Join(data, "certificates", "apiserver.crt")
	waitReady(t, c, fmt.Sprintf("https://127.0.0.1:%d/readyz", port), ca)
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

// start runs the bundle's container in the foreground of the runtime; it
// is killed and deleted when the test ends.
func start(t *testing.T, bundle string) *container {
	t.Helper()
	c := &container{
		id:     fmt.Sprintf("muster-image-test-%d", time.Now().UnixNano()),
		output: filepath.Join(bundle, "output.log"),
		exited: make(chan error, 1),
	}
	out, err := os.Create(c.output)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(*ociRuntime, RunArgs(bundle, c.id)...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s run: %v", *ociRuntime, err)
	}
	go func() { c.exited <- cmd.Wait(); out.Close() }()
	t.Cleanup(func() {
		if err := Remove(*ociRuntime, c.id); err != nil {
			t.Error(err)
		}
		select {
		case <-c.exited:
		case <-time.After(time.Minute):
			t.Errorf("%s run %s did not exit after the container was killed", *ociRuntime, c.id)
		}
	})
	return c
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
