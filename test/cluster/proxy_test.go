package cluster

import (
	"bufio"
	"net"
	"strconv"
	"testing"
	"time"
)

// TestServiceProxyRoutesToReadyReplicas checks that the proxy standing in
// for Muster's Service sends each connection to a ready backend only, in
// turn, and drops it when none is ready.
func TestServiceProxyRoutesToReadyReplicas(t *testing.T) {
	// Each backend greets with its name.
	var addrs []string
	for _, name := range []string{"a", "b"} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				_, _ = c.Write([]byte(name + "\n"))
				_ = c.Close()
			}
		}()
		addrs = append(addrs, l.Addr().String())
	}
	p, err := newServiceProxy(addrs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.close)

	tests := []struct {
		name  string
		ready []bool
		want  []string // greetings of successive connections; "" is dropped
	}{
		{"none ready", []bool{false, false}, []string{"", ""}},
		{"only a", []bool{true, false}, []string{"a", "a", "a"}},
		{"only b", []bool{false, true}, []string{"b", "b"}},
		{"both, in turn", []bool{true, true}, []string{"a", "b", "a", "b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for i, r := range tc.ready {
				p.setReady(i, r)
			}
			p.mu.Lock()
			p.next = 0
			p.mu.Unlock()
			for i, want := range tc.want {
				if got := greeting(t, p.port()); got != want {
					t.Errorf("connection %d reached %q, want %q", i, got, want)
				}
			}
		})
	}
}

// greeting connects to the proxy and reads one line, "" if it is closed
// first.
func greeting(t *testing.T, port int) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return ""
	}
	return line[:len(line)-1]
}
