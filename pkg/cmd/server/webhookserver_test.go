package server

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"

	"github.com/muster-dev/muster/pkg/manifests"
	"github.com/muster-dev/muster/pkg/webhook/pods"
	"github.com/muster-dev/muster/test/abuse/attack"
)

// testCA is a CA that issues client certificates for the tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return &testCA{cert: c, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// client issues a client certificate.
func (ca *testCA) client(t *testing.T, name string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// echo stands in for the pod webhook: it answers with the body it read.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	_, _ = w.Write(body)
})

// startWebhookServer serves echo on a loopback port and returns its address
// and the CA pool that verifies it.
func startWebhookServer(t *testing.T, clientCA []byte, limits webhookLimits, ready bool) (string, *x509.CertPool) {
	addr, roots, _ := startWebhookServerWith(t, clientCA, limits, ready)
	return addr, roots
}

func startWebhookServerWith(t *testing.T, clientCA []byte, limits webhookLimits, ready bool) (string, *x509.CertPool, *webhookServer) {
	t.Helper()
	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey("localhost", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	certs, err := dynamiccertificates.NewStaticCertKeyContent("serving", certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	var ca dynamiccertificates.CAContentProvider
	if clientCA != nil {
		if ca, err = dynamiccertificates.NewStaticCAContent("client-ca", clientCA); err != nil {
			t.Fatal(err)
		}
	}
	ws := newWebhookServer(klog.Background(), certs, ca, echo, limits)
	ws.ready.Store(ready)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = ws.serve(ctx, l) }()
	t.Cleanup(func() { cancel(); <-done })
	roots, err := cert.NewPoolFromBytes(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	return l.Addr().String(), roots, ws
}

func post(client *http.Client, addr, path, body string) (int, string, error) {
	resp, err := client.Post("https://"+addr+path, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out), nil
}

// TestWebhookClientCertificates: with a client CA, the webhook paths serve
// only callers whose certificate it signed; the health checks serve
// anyone, since the kubelet's probes present no certificate.
func TestWebhookClientCertificates(t *testing.T) {
	trusted, other := newTestCA(t, "trusted"), newTestCA(t, "other")
	tests := []struct {
		name     string
		clientCA []byte
		cert     *tls.Certificate
		path     string
		want     int
	}{
		{"no client CA: anyone is served", nil, nil, manifests.MutatePath, http.StatusOK},
		{"client CA: no certificate is refused", trusted.pem, nil, manifests.MutatePath, http.StatusUnauthorized},
		{"client CA: another CA's certificate is refused", trusted.pem, ptr(other.client(t, "mallory")), manifests.ValidatePath, http.StatusUnauthorized},
		{"client CA: its own certificate is served", trusted.pem, ptr(trusted.client(t, "kube-apiserver")), manifests.MutatePath, http.StatusOK},
		{"client CA: readyz needs no certificate", trusted.pem, nil, "/readyz", http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr, roots := startWebhookServer(t, tt.clientCA, defaultWebhookLimits, true)
			cfg := &tls.Config{RootCAs: roots}
			if tt.cert != nil {
				cfg.Certificates = []tls.Certificate{*tt.cert}
			}
			client := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
			var code int
			var err error
			if tt.path == "/readyz" {
				var resp *http.Response
				if resp, err = client.Get("https://" + addr + tt.path); err == nil {
					code = resp.StatusCode
					_ = resp.Body.Close()
				}
			} else {
				code, _, err = post(client, addr, tt.path, "{}")
			}
			if err != nil {
				t.Fatal(err)
			}
			if code != tt.want {
				t.Errorf("status %d, want %d", code, tt.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestWebhookReadiness: /readyz on the webhook listener fails until the
// API serves, and checks nothing else (no etcd).
func TestWebhookReadiness(t *testing.T) {
	for _, ready := range []bool{false, true} {
		t.Run(fmt.Sprint("ready=", ready), func(t *testing.T) {
			addr, roots := startWebhookServer(t, nil, defaultWebhookLimits, ready)
			client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
			resp, err := client.Get("https://" + addr + "/readyz")
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if got := resp.StatusCode == http.StatusOK; got != ready {
				t.Errorf("readyz answered %d with ready=%v", resp.StatusCode, ready)
			}
		})
	}
}

// TestWebhookDeadlines: a caller that sends its headers or its body too
// slowly is cut off at the listener's deadline, and a body over the cap is
// refused before it is read.
func TestWebhookDeadlines(t *testing.T) {
	limits := defaultWebhookLimits
	limits.readHeader, limits.read = 300*time.Millisecond, 600*time.Millisecond
	addr, _ := startWebhookServer(t, nil, limits, true)
	tests := []struct {
		name string
		// send writes the request; it may stall.
		send   string
		stall  bool
		within time.Duration
		want   string
	}{
		{"headers never finished", "POST " + manifests.MutatePath + " HTTP/1.1\r\nHost: x\r\n", true, limits.readHeader, ""},
		{"body never finished", "POST " + manifests.MutatePath + " HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{", true, limits.read, "400"},
		{"body over the cap", fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", manifests.MutatePath, pods.MaxRequestBytes+1), true, limits.read, "413"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}}) //nolint:gosec // test
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			start := time.Now()
			if _, err := conn.Write([]byte(tt.send)); err != nil {
				t.Fatal(err)
			}
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			out, _ := io.ReadAll(conn) // until the server closes
			took := time.Since(start)
			if took > tt.within+2*time.Second {
				t.Errorf("the server closed the connection after %v, want about %v", took, tt.within)
			}
			if tt.want != "" && !bytes.Contains(out, []byte(" "+tt.want+" ")) {
				t.Errorf("answer %q, want status %s", out, tt.want)
			}
		})
	}
}

// TestSlowClientsDoNotStarveTheWebhook holds many more slow connections
// than the listener has in-flight slots, each dribbling a body, and checks
// that a caller that sends its review at once is still answered, at once.
// The slots alone are tested: the connections per address are not bounded.
func TestSlowClientsDoNotStarveTheWebhook(t *testing.T) {
	limits := defaultWebhookLimits
	limits.maxInFlight = 4
	limits.maxConnsPerAddress = 0
	addr, roots := startWebhookServer(t, nil, limits, true)
	stop := attack.SlowWebhookClients(context.Background(), addr, 200, nil)
	defer stop()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	for i := range 20 {
		code, body, err := post(client, addr, manifests.MutatePath, `{"n":1}`)
		if err != nil || code != http.StatusOK || body != `{"n":1}` {
			t.Fatalf("request %d with 200 slow clients: %d %q %v", i, code, body, err)
		}
	}
	stats := stop()
	if stats.Connections < 200 || stats.DialErrors > 0 {
		t.Errorf("the slow clients made %d connections (%d failed dials), want at least 200 and none failed", stats.Connections, stats.DialErrors)
	}
}

// TestWebhookBufferedBytesBudget: bodies are counted as their bytes arrive;
// once the budget is held, a body that would pass it is refused with 503,
// a smaller one is still served, and every byte is given back.
func TestWebhookBufferedBytesBudget(t *testing.T) {
	limits := defaultWebhookLimits
	limits.maxBuffered = 1000
	addr, roots, ws := startWebhookServerWith(t, nil, limits, true)
	// A caller that sent 900 bytes of a longer body and stalls.
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2000\r\n\r\n", manifests.MutatePath)
	if _, err := conn.Write([]byte(head + strings.Repeat(" ", 900))); err != nil {
		t.Fatal(err)
	}
	holds := func(want func(int64) bool) wait.ConditionWithContextFunc {
		return func(context.Context) (bool, error) { return want(ws.buffered.Load()), nil }
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, holds(func(n int64) bool { return n >= 900 })); err != nil {
		t.Fatalf("the server holds %d bytes, want 900: %v", ws.buffered.Load(), err)
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	tests := []struct {
		name string
		body string
		want int
	}{
		{"a body that would pass the budget is refused", strings.Repeat(" ", 200), http.StatusServiceUnavailable},
		{"a body within what is left is served", strings.Repeat(" ", 50), http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, err := post(client, addr, manifests.MutatePath, tt.body)
			if err != nil {
				t.Fatal(err)
			}
			if code != tt.want {
				t.Errorf("status %d, want %d", code, tt.want)
			}
		})
	}
	_ = conn.Close()
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, holds(func(n int64) bool { return n == 0 })); err != nil {
		t.Fatalf("the server still holds %d bytes after every request ended, want 0: %v", ws.buffered.Load(), err)
	}
}

// holdBody opens a connection that sends sent bytes of a body of length
// bytes and stalls, and waits until the server holds them.
func holdBody(t *testing.T, addr string, roots *x509.CertPool, ws *webhookServer, length, sent int) net.Conn {
	t.Helper()
	before := ws.buffered.Load()
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", manifests.MutatePath, length)
	if _, err := conn.Write([]byte(head + strings.Repeat(" ", sent))); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return ws.buffered.Load() >= before+int64(sent), nil
	}); err != nil {
		t.Fatalf("the server holds %d bytes, want %d more than %d", ws.buffered.Load(), sent, before)
	}
	return conn
}

// TestWebhookPerHostBudget: callers from one address hold at most their
// share of the body budget; a body that would pass it is refused with 503
// and says so, after the pacing delay and with its bytes given back before
// that; a smaller one is served.
func TestWebhookPerHostBudget(t *testing.T) {
	limits := defaultWebhookLimits
	limits.maxBuffered, limits.maxBufferedPerHost = 1<<20, 1000
	limits.overShareDelay = 500 * time.Millisecond
	addr, roots, ws := startWebhookServerWith(t, nil, limits, true)
	holdBody(t, addr, roots, ws, 2000, 900)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	tests := []struct {
		name     string
		body     string
		want     int
		wantBody string
		paced    bool
	}{
		{"a body that would pass the address's share is refused", strings.Repeat(" ", 200), http.StatusServiceUnavailable, "callers from this address hold", true},
		{"a body within what is left of it is served", strings.Repeat(" ", 50), http.StatusOK, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			code, body, err := post(client, addr, manifests.MutatePath, tt.body)
			if err != nil {
				t.Fatal(err)
			}
			if code != tt.want || !strings.Contains(body, tt.wantBody) {
				t.Errorf("status %d %q, want %d with %q", code, body, tt.want, tt.wantBody)
			}
			if took := time.Since(start); tt.paced && took < limits.overShareDelay {
				t.Errorf("refused after %v, before the pacing delay %v", took, limits.overShareDelay)
			}
		})
	}
	t.Run("a refused body's bytes are given back while it is paced", func(t *testing.T) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _, _ = post(client, addr, manifests.MutatePath, strings.Repeat(" ", 200))
		}()
		// The stalled caller's 900 bytes stay held; the refused body's are
		// given back within its delay, before it is answered.
		time.Sleep(limits.overShareDelay / 2)
		if n := ws.buffered.Load(); n != 900 {
			t.Errorf("%d bytes held halfway through the refused body's delay, want the stalled caller's 900", n)
		}
		select {
		case <-done:
			t.Errorf("the refused body was answered before its delay")
		default:
		}
		<-done
	})
}

// TestWebhookMinBodyRate: a caller that sends all of a body but a byte and
// stalls is cut off once the body is late at the minimum rate, long
// before the read timeout, and gives back what it held.
func TestWebhookMinBodyRate(t *testing.T) {
	limits := defaultWebhookLimits
	limits.read = 20 * time.Second
	limits.bodyGrace, limits.minBodyRate = 200*time.Millisecond, 1000
	addr, roots, ws := startWebhookServerWith(t, nil, limits, true)
	start := time.Now()
	conn := holdBody(t, addr, roots, ws, 500, 499) // due within 0.2 s + 0.5 s
	_ = conn.SetReadDeadline(time.Now().Add(15 * time.Second))
	out, _ := io.ReadAll(conn)
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("the stalled body was cut off after %v, want about 0.7 s (the read timeout is %v)", took, limits.read)
	}
	if !bytes.Contains(out, []byte(" 400 ")) || !bytes.Contains(out, []byte("did not arrive within 700ms, the webhook's minimum body rate of 1000 bytes/s after 200ms")) {
		t.Errorf("answer %q, want 400 saying the body was late at the minimum rate", out)
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return ws.buffered.Load() == 0, nil
	}); err != nil {
		t.Errorf("the server still holds %d bytes", ws.buffered.Load())
	}
}

// TestWebhookNotReadyWhileSaturated: /readyz answers 503 while the bodies
// held reach WebhookSaturated of the budget, or every in-flight slot is
// taken, and 200 again once they are given back.
func TestWebhookNotReadyWhileSaturated(t *testing.T) {
	limits := defaultWebhookLimits
	limits.maxBuffered = 1000
	addr, roots, ws := startWebhookServerWith(t, nil, limits, true)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	readyz := func() (int, string) {
		t.Helper()
		resp, err := client.Get("https://" + addr + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := readyz(); code != http.StatusOK {
		t.Fatalf("idle: readyz %d %q, want 200", code, body)
	}
	conn := holdBody(t, addr, roots, ws, 2000, 800)
	if code, body := readyz(); code != http.StatusServiceUnavailable || !strings.Contains(body, "saturated: 800 bytes") {
		t.Errorf("800 of 1000 bytes held: readyz %d %q, want 503 saying saturated", code, body)
	}
	_ = conn.Close()
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		code, _ := readyz()
		return code == http.StatusOK, nil
	}); err != nil {
		t.Errorf("readyz stays unready once the bodies are given back")
	}
	for range cap(ws.slots) {
		ws.slots <- struct{}{}
	}
	if code, body := readyz(); code != http.StatusServiceUnavailable || !strings.Contains(body, "reviews in flight") {
		t.Errorf("every slot taken: readyz %d %q, want 503", code, body)
	}
	for range cap(ws.slots) {
		<-ws.slots
	}
}
