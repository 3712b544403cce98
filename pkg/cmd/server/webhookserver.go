package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/klog/v2"

	"github.com/muster-dev/muster/pkg/manifests"
	"github.com/muster-dev/muster/pkg/webhook/pods"
)

// Bounds of the webhook listener. kube-apiserver gives up on a webhook call
// after its timeoutSeconds (10 s in webhooks.yaml) and sends the whole
// review at once, so a caller that takes longer than that to send a request
// is not kube-apiserver, and is cut off.
const (
	// WebhookReadHeaderTimeout bounds the TLS handshake and the request
	// headers of each request.
	WebhookReadHeaderTimeout = 5 * time.Second
	// WebhookReadTimeout bounds reading a whole request, body included (per
	// stream over HTTP/2): a body sent a byte at a time holds its goroutine
	// no longer than this.
	WebhookReadTimeout = 10 * time.Second
	// WebhookWriteTimeout bounds writing the answer, so a caller that never
	// reads cannot hold its connection.
	WebhookWriteTimeout = 15 * time.Second
	// WebhookIdleTimeout closes a kept-alive connection with no request in
	// flight; kube-apiserver opens a new one when it next calls.
	WebhookIdleTimeout = 90 * time.Second
	// WebhookMaxHeaderBytes bounds a request's headers; kube-apiserver's are
	// a few hundred bytes.
	WebhookMaxHeaderBytes = 16 << 10
	// WebhookMaxInFlight bounds the reviews decoded and answered at once.
	// A slot is taken only once a request's body has been read in full, so
	// slow callers, whatever their number, never hold one; it bounds the
	// memory of decoding (each review is at most pods.MaxRequestBytes).
	WebhookMaxInFlight = 64
	// WebhookQueueWait is how long a read review waits for a slot before it
	// is refused with 429.
	WebhookQueueWait = 2 * time.Second
	// WebhookMaxBufferedBytes bounds the request bodies held in memory at
	// once, read or being read, counted as their bytes arrive: a body sent
	// slowly holds only what it sent, so slow callers cannot exhaust it,
	// while callers that send many large bodies at once are refused with
	// 503 rather than run the process, which the controller shares, out of
	// memory. 64 MiB is 21 reviews at pods.MaxRequestBytes, or thousands of
	// the usual pod reviews of a few KiB; the Deployment's limit is 512 MiB.
	WebhookMaxBufferedBytes = 64 << 20
	// WebhookMaxBufferedBytesPerHost bounds the request bodies that callers
	// from one address hold at once, a quarter of WebhookMaxBufferedBytes:
	// callers in one pod cannot hold the whole budget, and kube-apiserver,
	// whose reviews are a few KiB, keeps room for thousands at once.
	WebhookMaxBufferedBytesPerHost = WebhookMaxBufferedBytes / 4
	// WebhookMinBodyRate is the slowest a request body may arrive, after
	// WebhookBodyGrace: a body of n bytes must be read within
	// WebhookBodyGrace + n/WebhookMinBodyRate (and WebhookReadTimeout).
	// kube-apiserver sends a review at once, so a caller that sends all but
	// a byte and stalls holds its bytes for 4 s at the largest review
	// (pods.MaxRequestBytes), not the whole read timeout.
	WebhookMinBodyRate = 1 << 20 // bytes per second
	WebhookBodyGrace   = time.Second
	// WebhookOverShareDelay is how long a caller whose address holds its
	// share of the body budget waits for its 503, the Retry-After it is
	// told: the bytes it sent are given back at once, but a caller that
	// retries at once is paced to one try a second per connection.
	WebhookOverShareDelay = time.Second
	// WebhookMaxConnsPerAddress bounds the connections open at once from
	// one remote address. kube-apiserver calls a webhook over HTTP/2, one
	// connection per kube-apiserver, and every pod has an address of its
	// own; 64 leaves room for a kube-apiserver that speaks HTTP/1.1 (a
	// connection per call in flight, and WebhookMaxInFlight is 64).
	WebhookMaxConnsPerAddress = 64
	// WebhookHeldConnTimeout is how long a connection over its address's
	// bound is held, unread and unanswered, before it is closed: as long as
	// any caller is given for its handshake and headers. A caller that
	// reconnects at once then costs an accept per hold, not a TLS handshake
	// per try.
	WebhookHeldConnTimeout = WebhookReadHeaderTimeout
	// WebhookMaxHeldConns bounds the connections held at once; past it,
	// one over its address's bound is closed as soon as it is accepted.
	WebhookMaxHeldConns = 4096
	// WebhookSaturated is the share of the body budget, held at once, at
	// which /readyz answers 503, as it does when every in-flight slot is
	// taken: the Service sends new calls to the other replicas.
	WebhookSaturated = 0.75
)

// webhookServer serves the pod webhook on a listener of its own, outside
// k8s.io/apiserver's handler chain: kube-apiserver's calls are not queued
// behind anonymous callers in one priority-and-fairness flow, and do not
// wait on the API's authentication or etcd.
type webhookServer struct {
	logger   klog.Logger
	certs    dynamiccertificates.CertKeyContentProvider
	clientCA dynamiccertificates.CAContentProvider
	webhook  http.Handler
	limits   webhookLimits
	slots    chan struct{}
	// buffered counts the body bytes held now, against limits.maxBuffered.
	buffered atomic.Int64
	// byHost counts them by the caller's address, against
	// limits.maxBufferedPerHost.
	hostMu sync.Mutex
	byHost map[string]int64
	// conns bounds the connections from one address, once serving.
	conns atomic.Pointer[perAddressListener]
	// ready is set once the replica serves the API too, so that a new
	// replica does not join the Service before its API does; it never goes
	// back, as the webhook needs no storage.
	ready atomic.Bool

	mu      sync.Mutex
	certPEM []byte
	keyPEM  []byte
	cert    *tls.Certificate
}

// webhookLimits are the bounds above, as values that tests can shorten.
type webhookLimits struct {
	readHeader, read, write, idle, queueWait time.Duration
	maxInFlight                              int
	maxBuffered, maxBufferedPerHost          int64
	// minBodyRate and bodyGrace bound how long a body may take to arrive.
	minBodyRate int64
	bodyGrace   time.Duration
	// overShareDelay paces a caller over its address's share.
	overShareDelay time.Duration
	// maxConnsPerAddress (0 for no bound), heldConnTimeout and maxHeldConns
	// bound the connections from one address.
	maxConnsPerAddress, maxHeldConns int
	heldConnTimeout                  time.Duration
}

var defaultWebhookLimits = webhookLimits{
	readHeader:  WebhookReadHeaderTimeout,
	read:        WebhookReadTimeout,
	write:       WebhookWriteTimeout,
	idle:        WebhookIdleTimeout,
	queueWait:   WebhookQueueWait,
	maxInFlight: WebhookMaxInFlight,
	maxBuffered: WebhookMaxBufferedBytes,

	maxBufferedPerHost: WebhookMaxBufferedBytesPerHost,
	minBodyRate:        WebhookMinBodyRate,
	bodyGrace:          WebhookBodyGrace,
	overShareDelay:     WebhookOverShareDelay,
	maxConnsPerAddress: WebhookMaxConnsPerAddress,
	heldConnTimeout:    WebhookHeldConnTimeout,
	maxHeldConns:       WebhookMaxHeldConns,
}

func newWebhookServer(logger klog.Logger, certs dynamiccertificates.CertKeyContentProvider, clientCA dynamiccertificates.CAContentProvider, webhook http.Handler, limits webhookLimits) *webhookServer {
	return &webhookServer{
		logger:   logger,
		certs:    certs,
		clientCA: clientCA,
		webhook:  webhook,
		limits:   limits,
		slots:    make(chan struct{}, limits.maxInFlight),
		byHost:   map[string]int64{},
	}
}

// saturated says why the listener takes no more work now, or "".
func (s *webhookServer) saturated() string {
	if n := s.buffered.Load(); float64(n) >= WebhookSaturated*float64(s.limits.maxBuffered) {
		return fmt.Sprintf("saturated: %d bytes of request bodies held, of %d", n, s.limits.maxBuffered)
	}
	if len(s.slots) == cap(s.slots) {
		return fmt.Sprintf("saturated: all %d reviews in flight", cap(s.slots))
	}
	return ""
}

// handler routes the webhook paths and the listener's own health checks.
func (s *webhookServer) handler() http.Handler {
	mux := http.NewServeMux()
	hook := s.authenticate(s.bounded(s.webhook))
	mux.Handle(manifests.MutatePath, hook)
	mux.Handle(manifests.ValidatePath, hook)
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !s.ready.Load() {
			http.Error(w, "not ready: the API is not served yet", http.StatusServiceUnavailable)
			return
		}
		if why := s.saturated(); why != "" {
			http.Error(w, "not ready: "+why, http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	mux.HandleFunc("/livez", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	return mux
}

// httpServer builds the server with every bound above.
func (s *webhookServer) httpServer() *http.Server {
	tlsConfig := &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: s.certificate,
	}
	if s.clientCA != nil {
		// Asked for, not required, at the TLS layer: the kubelet's probes
		// of /readyz present none. authenticate checks it on the webhook
		// paths, against the CA file as it is now.
		tlsConfig.ClientAuth = tls.RequestClientCert
	}
	return &http.Server{
		Handler:           s.handler(),
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: s.limits.readHeader,
		ReadTimeout:       s.limits.read,
		WriteTimeout:      s.limits.write,
		IdleTimeout:       s.limits.idle,
		MaxHeaderBytes:    WebhookMaxHeaderBytes,
		// A refused handshake is the caller's problem, and an attacker's
		// many would flood the log at the default level.
		ErrorLog: log.New(verboseWriter{s.logger.V(4)}, "", 0),
	}
}

// serve serves l until ctx ends, then shuts down gracefully.
func (s *webhookServer) serve(ctx context.Context, l net.Listener) error {
	if s.limits.maxConnsPerAddress > 0 {
		bounded := newPerAddressListener(l, s.limits.maxConnsPerAddress, s.limits.heldConnTimeout, s.limits.maxHeldConns)
		s.conns.Store(bounded)
		l = bounded
	}
	srv := s.httpServer()
	done := make(chan error, 1)
	go func() { done <- srv.ServeTLS(l, "", "") }()
	s.logger.Info("Serving the pod webhook", "address", l.Addr().String(), "clientCertificates", s.clientCA != nil)
	select {
	case err := <-done:
		return fmt.Errorf("serving the pod webhook: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), s.limits.write)
	defer cancel()
	_ = srv.Shutdown(shutdown)
	return nil
}

// certificate returns the API's serving certificate as it is now: the
// generic server reloads it from its files, and the webhook follows.
func (s *webhookServer) certificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	certPEM, keyPEM := s.certs.CurrentCertKeyContent()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cert != nil && bytes.Equal(certPEM, s.certPEM) && bytes.Equal(keyPEM, s.keyPEM) {
		return s.cert, nil
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("loading the serving certificate: %w", err)
	}
	s.certPEM, s.keyPEM, s.cert = certPEM, keyPEM, &cert
	return s.cert, nil
}

// authenticate refuses, before reading a byte of the body, a caller without
// a client certificate signed by the client CA, when one is configured.
func (s *webhookServer) authenticate(next http.Handler) http.Handler {
	if s.clientCA == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.verifyClient(r.TLS); err != nil {
			s.logger.V(4).Info("Refused a webhook caller", "remote", r.RemoteAddr, "err", err)
			pods.WriteStatus(w, http.StatusUnauthorized, "Unauthorized: "+err.Error())
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *webhookServer) verifyClient(state *tls.ConnectionState) error {
	if state == nil || len(state.PeerCertificates) == 0 {
		return errors.New("a client certificate is required")
	}
	opts, ok := s.clientCA.VerifyOptions()
	if !ok {
		return errors.New("no client CA is loaded")
	}
	opts.Intermediates = x509.NewCertPool()
	for _, c := range state.PeerCertificates[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := state.PeerCertificates[0].Verify(opts); err != nil {
		return fmt.Errorf("verifying the client certificate: %w", err)
	}
	return nil
}

// bounded reads the whole body first, within the listener's read deadline
// and pods.MaxRequestBytes, and only then takes one of WebhookMaxInFlight
// slots to decode and answer it.
func (s *webhookServer) bounded(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > pods.MaxRequestBytes {
			pods.WriteStatus(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is larger than %d bytes", pods.MaxRequestBytes))
			return
		}
		if r.Method == http.MethodPost {
			// The body must arrive at WebhookMinBodyRate at least.
			size := r.ContentLength
			if size < 0 {
				size = pods.MaxRequestBytes
			}
			allowed := min(s.limits.bodyGrace+time.Duration(size*int64(time.Second)/s.limits.minBodyRate), s.limits.read)
			by := time.Now().Add(allowed)
			_ = http.NewResponseController(w).SetReadDeadline(by) // the server's ReadTimeout stays if unsupported
			budget := &budgetReader{r: http.MaxBytesReader(w, r.Body, pods.MaxRequestBytes), s: s, host: hostOf(r.RemoteAddr)}
			defer budget.release()
			body, err := io.ReadAll(budget)
			if err != nil {
				var tooLarge *http.MaxBytesError
				switch {
				case errors.As(err, &tooLarge):
					pods.WriteStatus(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is larger than %d bytes", pods.MaxRequestBytes))
				case errors.Is(err, errHostOverBudget):
					// Its bytes are given back before it is paced.
					budget.release()
					pace := time.NewTimer(s.limits.overShareDelay)
					select {
					case <-pace.C:
					case <-r.Context().Done():
					}
					pace.Stop()
					fallthrough
				case errors.Is(err, errOverBudget):
					w.Header().Set("Retry-After", "1")
					pods.WriteStatus(w, http.StatusServiceUnavailable, err.Error())
				case errors.Is(err, os.ErrDeadlineExceeded):
					// A caller too slow, or a process too loaded to read
					// it in time: the user whose create this was reads why.
					pods.WriteStatus(w, http.StatusBadRequest, fmt.Sprintf("reading request body: %d bytes did not arrive within %s, "+
						"the webhook's minimum body rate of %d bytes/s after %s: %v", size, allowed, s.limits.minBodyRate, s.limits.bodyGrace, err))
				default:
					pods.WriteStatus(w, http.StatusBadRequest, fmt.Sprintf("reading request body: %v", err))
				}
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		wait := time.NewTimer(s.limits.queueWait)
		defer wait.Stop()
		select {
		case s.slots <- struct{}{}:
		case <-wait.C:
			w.Header().Set("Retry-After", "1")
			pods.WriteStatus(w, http.StatusTooManyRequests, "too many webhook requests in flight")
			return
		case <-r.Context().Done():
			return
		}
		defer func() { <-s.slots }()
		next.ServeHTTP(w, r)
	})
}

// errOverBudget refuses a body once WebhookMaxBufferedBytes are held, and
// errHostOverBudget once its caller's address holds
// WebhookMaxBufferedBytesPerHost.
var (
	errOverBudget     = fmt.Errorf("the webhook holds %d bytes of request bodies, its most; retry", WebhookMaxBufferedBytes)
	errHostOverBudget = fmt.Errorf("callers from this address hold %d bytes of request bodies, their most; retry", WebhookMaxBufferedBytesPerHost)
)

// budgetReader counts the bytes it reads against the server's buffered
// bytes and its host's, failing once either would pass its limit; release
// gives them back.
type budgetReader struct {
	r    io.Reader
	s    *webhookServer
	host string
	held int64
}

func (b *budgetReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if n > 0 {
		if err := b.s.take(b.host, int64(n)); err != nil {
			return 0, err
		}
		b.held += int64(n)
	}
	return n, err
}

func (b *budgetReader) release() { b.s.give(b.host, b.held); b.held = 0 }

// take counts n more bytes held for host, or refuses them.
func (s *webhookServer) take(host string, n int64) error {
	s.hostMu.Lock()
	defer s.hostMu.Unlock()
	if s.byHost[host]+n > s.limits.maxBufferedPerHost {
		return errHostOverBudget
	}
	if s.buffered.Add(n) > s.limits.maxBuffered {
		s.buffered.Add(-n)
		return errOverBudget
	}
	s.byHost[host] += n
	return nil
}

// give gives back n bytes held for host.
func (s *webhookServer) give(host string, n int64) {
	if n == 0 {
		return
	}
	s.hostMu.Lock()
	defer s.hostMu.Unlock()
	s.buffered.Add(-n)
	if s.byHost[host] -= n; s.byHost[host] <= 0 {
		delete(s.byHost, host)
	}
}

// verboseWriter logs the net/http server's own messages at a verbosity.
type verboseWriter struct{ logger klog.Logger }

func (w verboseWriter) Write(p []byte) (int, error) {
	w.logger.Info("Webhook listener", "message", string(bytes.TrimSpace(p)))
	return len(p), nil
}
