package cluster

import (
	"fmt"
	"net"
)

// freePorts asks the kernel for n distinct unused TCP ports on 127.0.0.1.
// All listeners stay open until every port is picked so the kernel cannot
// hand out the same port twice; a process started later can still lose a
// race for one, which startWithRetry handles.
func freePorts(n int) ([]int, error) {
	listeners := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
