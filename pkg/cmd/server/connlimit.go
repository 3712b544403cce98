package server

import (
	"net"
	"sync"
	"time"
)

// perAddressListener admits at most max open connections from one remote
// address. A connection over that is neither read nor answered: it is held
// for hold and then closed, so that a caller that reconnects at once costs
// the webhook an accept per hold, not a TLS handshake per try. At most
// maxHeld are held at once; past that, one is closed as soon as accepted.
//
// kube-apiserver calls a webhook over HTTP/2, one connection per
// kube-apiserver, so the bound is met only by callers that open many
// connections from one address: a pod, since every pod has its own.
type perAddressListener struct {
	net.Listener
	max     int
	hold    time.Duration
	maxHeld int

	mu     sync.Mutex
	open   map[string]int
	held   map[net.Conn]*time.Timer
	closed bool
}

func newPerAddressListener(l net.Listener, max int, hold time.Duration, maxHeld int) *perAddressListener {
	return &perAddressListener{Listener: l, max: max, hold: hold, maxHeld: maxHeld, open: map[string]int{}, held: map[net.Conn]*time.Timer{}}
}

// Accept returns the next connection whose address is within its bound,
// holding or closing those that are not.
func (l *perAddressListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		addr := hostOf(c.RemoteAddr().String())
		l.mu.Lock()
		if l.open[addr] < l.max {
			l.open[addr]++
			l.mu.Unlock()
			return &countedConn{Conn: c, done: sync.OnceFunc(func() { l.release(addr) })}, nil
		}
		if l.closed || len(l.held) >= l.maxHeld {
			l.mu.Unlock()
			_ = c.Close()
			continue
		}
		l.held[c] = time.AfterFunc(l.hold, func() { l.drop(c) })
		l.mu.Unlock()
	}
}

// Close stops accepting and closes every held connection.
func (l *perAddressListener) Close() error {
	err := l.Listener.Close()
	l.mu.Lock()
	l.closed = true
	held := l.held
	l.held = map[net.Conn]*time.Timer{}
	l.mu.Unlock()
	for c, t := range held {
		t.Stop()
		_ = c.Close()
	}
	return err
}

// heldNow is how many connections are held unanswered.
func (l *perAddressListener) heldNow() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.held)
}

func (l *perAddressListener) drop(c net.Conn) {
	l.mu.Lock()
	_, ok := l.held[c]
	delete(l.held, c)
	l.mu.Unlock()
	if ok {
		_ = c.Close()
	}
}

func (l *perAddressListener) release(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[addr]--; l.open[addr] <= 0 {
		delete(l.open, addr)
	}
}

// countedConn gives its address's place back once, when closed.
type countedConn struct {
	net.Conn
	done func()
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.done()
	return err
}

// hostOf is a remote address without its port: what the listener and the
// body budget count by.
func hostOf(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return host
}
