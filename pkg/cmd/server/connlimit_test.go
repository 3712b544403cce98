package server

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/muster-dev/muster/pkg/manifests"
	"github.com/muster-dev/muster/test/abuse/attack"
)

// attackerAddress is where the attacker's connections come from.
const attackerAddress = attack.Source

// dialFrom opens a TCP connection to addr from source.
func dialFrom(t *testing.T, source, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(source)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestPerAddressListener: connections from one address past the bound are
// held unanswered and closed after the hold, while another address's are
// accepted at once; closing an accepted one makes room for the next.
func TestPerAddressListener(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const hold = 300 * time.Millisecond
	l := newPerAddressListener(inner, 2, hold, 10)
	defer l.Close()
	accepted := make(chan net.Conn, 10)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	next := func(what string) net.Conn {
		t.Helper()
		select {
		case c := <-accepted:
			return c
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: not accepted", what)
			return nil
		}
	}
	addr := inner.Addr().String()
	var within []net.Conn
	for range 2 {
		dialFrom(t, attackerAddress, addr)
		within = append(within, next("within the bound"))
	}
	over := make([]net.Conn, 3)
	for i := range over {
		over[i] = dialFrom(t, attackerAddress, addr)
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return l.heldNow() == 3, nil
	}); err != nil {
		t.Fatalf("%d connections held, want the 3 over the bound", l.heldNow())
	}
	select {
	case c := <-accepted:
		t.Fatalf("a connection from %s past its bound was accepted", c.RemoteAddr())
	default:
	}
	dialFrom(t, "127.0.0.1", addr)
	other := next("another address's connection")
	if got := hostOf(other.RemoteAddr().String()); got != "127.0.0.1" {
		t.Fatalf("accepted a connection from %s, want 127.0.0.1's", got)
	}
	for i, c := range over {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("held connection %d: read %v, want EOF once the hold ends", i, err)
		}
	}
	if n := l.heldNow(); n != 0 {
		t.Errorf("%d connections still held after the hold", n)
	}
	// Closing one accepted connection of the attacker's address makes room
	// for its next.
	_ = within[0].Close()
	dialFrom(t, attackerAddress, addr)
	if got := hostOf(next("once one was closed").RemoteAddr().String()); got != attackerAddress {
		t.Errorf("accepted a connection from %s, want %s's", got, attackerAddress)
	}
}

// TestWebhookConnectionsPerAddress: slow clients from one address, more
// than its bound, hold only that many connections; the rest are held
// unanswered and closed, while a caller from another address is served.
func TestWebhookConnectionsPerAddress(t *testing.T) {
	limits := defaultWebhookLimits
	limits.maxConnsPerAddress, limits.heldConnTimeout = 8, 200*time.Millisecond
	addr, roots, ws := startWebhookServerWith(t, nil, limits, true)
	stop := attack.SlowWebhookClientsFrom(context.Background(), attackerAddress, addr, 40, nil)
	defer stop()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	for i := range 5 {
		code, body, err := post(client, addr, manifests.MutatePath, `{"n":1}`)
		if err != nil || code != http.StatusOK || body != `{"n":1}` {
			t.Fatalf("request %d beside 40 slow clients from %s: %d %q %v", i, attackerAddress, code, body, err)
		}
	}
	conns := ws.conns.Load()
	conns.mu.Lock()
	open := conns.open[attackerAddress]
	conns.mu.Unlock()
	if open > limits.maxConnsPerAddress {
		t.Errorf("%d connections open from %s, more than its bound %d", open, attackerAddress, limits.maxConnsPerAddress)
	}
	stats := stop()
	if stats.DialErrors == 0 {
		t.Errorf("none of the 40 slow clients' connections was refused (%d made), with a bound of %d", stats.Connections, limits.maxConnsPerAddress)
	}
}
