package cluster

import (
	"io"
	"net"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// serviceProxy stands in for a Service in front of Muster's replicas, as
// kube-proxy would: it forwards each TCP connection to the next replica
// that is ready, in turn. TLS passes through it untouched, so clients still
// verify Muster's certificate. A replica that dies takes its connections
// with it, and clients reconnect to another.
type serviceProxy struct {
	listener net.Listener

	mu       sync.Mutex
	backends []string
	ready    []bool
	next     int
}

// newServiceProxy listens on a free loopback port and forwards to backends
// (host:port), none of them ready yet.
func newServiceProxy(backends []string) (*serviceProxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &serviceProxy{listener: l, backends: backends, ready: make([]bool, len(backends))}
	go p.serve()
	return p, nil
}

// port is the port the proxy listens on.
func (p *serviceProxy) port() int {
	return p.listener.Addr().(*net.TCPAddr).Port
}

// setReady marks backend i as ready (it gets new connections) or not, as
// an endpoint's readiness would.
func (p *serviceProxy) setReady(i int, ready bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ready[i] = ready
}

// setBackend replaces backend i's address, as a new pod's endpoint
// replaces an old one's in a rolling update: new connections go to addr,
// those already open stay with the old address until either side ends.
func (p *serviceProxy) setBackend(i int, addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.backends[i] = addr
}

// pick returns the ready backends in the order to try them, starting at the
// next one in turn.
func (p *serviceProxy) pick() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var order []string
	for k := range p.backends {
		i := (p.next + k) % len(p.backends)
		if p.ready[i] {
			order = append(order, p.backends[i])
		}
	}
	p.next = (p.next + 1) % len(p.backends)
	return order
}

func (p *serviceProxy) serve() {
	for {
		conn, err := p.listener.Accept()
		if err != nil {
			return
		}
		go p.forward(conn)
	}
}

// forward connects conn to the first ready backend that answers and copies
// both ways until either side closes.
func (p *serviceProxy) forward(conn net.Conn) {
	defer conn.Close()
	var backend net.Conn
	for _, addr := range p.pick() {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			backend = c
			break
		}
	}
	if backend == nil {
		klog.V(2).InfoS("No Muster replica is ready; dropping a connection")
		return
	}
	defer backend.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(backend, conn); done <- struct{}{} }()
	go func() { _, _ = io.Copy(conn, backend); done <- struct{}{} }()
	// When either side ends, end both, so that a dead replica's clients
	// notice at once.
	<-done
}

// close stops accepting connections. Connections in flight end when their
// replica stops.
func (p *serviceProxy) close() {
	_ = p.listener.Close()
}
