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
	if tlsConfig == nil {
		tlsConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // an attacker does not verify
	}
	// HTTP/1.1: one request per connection, so n connections are n
	// requests in flight.
	tlsConfig = tlsConfig.Clone()
	tlsConfig.NextProtos = []string{"http/1.1"}
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
				slowRequest(ctx, addr, tlsConfig, &stats, once)
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
func slowRequest(ctx context.Context, addr string, tlsConfig *tls.Config, stats *SlowStats, started func()) {
	dialer := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: tlsConfig}
	conn, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		atomic.AddInt64(&stats.DialErrors, 1)
		started()
		return
	}
	atomic.AddInt64(&stats.Connections, 1)
	defer conn.Close()
	stopOnCancel := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stopOnCancel()

	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n",
		manifests.MutatePath, addr, slowBodyBytes)
	_, err = conn.Write([]byte(head))
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
