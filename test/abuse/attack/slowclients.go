// Package attack holds what a hostile tenant does to Muster, as reusable
// helpers for the hostile-tenant suite (test/abuse), e2e and unit tests.
package attack

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/muster-dev/muster/pkg/manifests"
)

// Source is the loopback address the tests' attacks come from: a pod of
// the attacker's has an address of its own, not kube-apiserver's
// (127.0.0.1 in the tests' clusters), and the webhook bounds what each
// address may hold.
const Source = "127.0.0.2"

// SecondSource is the address of a second pod of the attacker's, for an
// attack that must not share Source's bounds.
const SecondSource = "127.0.0.3"

// slowBodyBytes is the Content-Length a slow client announces: a body of
// this size takes minutes at one byte per slowByteEvery.
const slowBodyBytes = 1 << 20

// slowByteEvery is how often a slow client sends one more byte of its body.
const slowByteEvery = 200 * time.Millisecond

// SlowStats counts what the slow clients did so far.
type SlowStats struct {
	// Connections counts TLS connections made (each reconnects when the
	// server cuts it off).
	Connections int64
	// Cut counts connections the server closed before the client stopped.
	Cut int64
	// DialErrors counts failed dials and handshakes.
	DialErrors int64
}

// SlowWebhookClients opens n TLS connections to addr (host:port), each
// sending POST manifests.MutatePath with a large Content-Length and then its body
// a byte at a time, as a slowloris would; a connection the server cuts off
// is opened again after slowByteEvery (without that pause, n clients that
// are refused at once only measure TLS handshakes per second). It returns once every client has sent its first
// request's headers (or failed to connect). tlsConfig may carry a client certificate or none; nil
// means no verification and no certificate, as an anonymous attacker. stop
// ends every connection and returns what they did.
func SlowWebhookClients(ctx context.Context, addr string, n int, tlsConfig *tls.Config) (stop func() SlowStats) {
	return SlowWebhookClientsFrom(ctx, "", addr, n, tlsConfig)
}

// SlowWebhookClientsFrom is SlowWebhookClients from the source address
// (an address of this host; "" for the system's choice), as a pod of the
// attacker's calls from its own address and not kube-apiserver's.
func SlowWebhookClientsFrom(ctx context.Context, source, addr string, n int, tlsConfig *tls.Config) (stop func() SlowStats) {
	dialer := attackerDialer(source, tlsConfig)
	ctx, cancel := context.WithCancel(ctx)
	var stats SlowStats
	var wg, started sync.WaitGroup
	for range n {
		wg.Add(1)
		started.Add(1)
		go func() {
			defer wg.Done()
			once := sync.OnceFunc(started.Done)
			defer once()
			for ctx.Err() == nil {
				slowRequest(ctx, dialer, addr, &stats, once)
				select {
				case <-ctx.Done():
				case <-time.After(slowByteEvery):
				}
			}
		}()
	}
	started.Wait()
	return func() SlowStats {
		cancel()
		wg.Wait()
		return SlowStats{
			Connections: atomic.LoadInt64(&stats.Connections),
			Cut:         atomic.LoadInt64(&stats.Cut),
			DialErrors:  atomic.LoadInt64(&stats.DialErrors),
		}
	}
}

// slowRequest makes one slow request until the server cuts it off or ctx
// ends; it calls started once the headers are sent or the dial failed.
func slowRequest(ctx context.Context, dialer *tls.Dialer, addr string, stats *SlowStats, started func()) {
	conn, head, closeConn, err := dialReview(ctx, dialer, addr, slowBodyBytes)
	if err != nil {
		atomic.AddInt64(&stats.DialErrors, 1)
		started()
		return
	}
	atomic.AddInt64(&stats.Connections, 1)
	defer closeConn()
	_, err = conn.Write(head)
	started()
	if err != nil {
		if ctx.Err() == nil {
			atomic.AddInt64(&stats.Cut, 1)
		}
		return
	}
	tick := time.NewTicker(slowByteEvery)
	defer tick.Stop()
	for range slowBodyBytes {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if _, err := conn.Write([]byte("{")); err != nil {
			if ctx.Err() == nil {
				atomic.AddInt64(&stats.Cut, 1)
			}
			return
		}
	}
}

// attackerDialer dials TLS from source ("" for any address) with
// tlsConfig, or, when nil, as an anonymous attacker that verifies nothing.
// It speaks HTTP/1.1: one request per connection, so n connections are n
// requests in flight.
func attackerDialer(source string, tlsConfig *tls.Config) *tls.Dialer {
	if tlsConfig == nil {
		tlsConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // an attacker does not verify
	}
	tlsConfig = tlsConfig.Clone()
	tlsConfig.NextProtos = []string{"http/1.1"}
	nd := &net.Dialer{Timeout: 5 * time.Second}
	if source != "" {
		nd.LocalAddr = &net.TCPAddr{IP: net.ParseIP(source)}
	}
	return &tls.Dialer{NetDialer: nd, Config: tlsConfig}
}

// dialReview dials addr and returns the connection, the head of a POST of
// a review body of size bytes to manifests.MutatePath, and what closes the
// connection, which ctx's end does too.
func dialReview(ctx context.Context, dialer *tls.Dialer, addr string, size int) (net.Conn, []byte, func(), error) {
	conn, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, nil, err
	}
	stopOnCancel := context.AfterFunc(ctx, func() { _ = conn.Close() })
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n",
		manifests.MutatePath, addr, size)
	return conn, []byte(head), func() { stopOnCancel(); _ = conn.Close() }, nil
}
