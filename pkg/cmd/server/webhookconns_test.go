package server

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	genericapiserver "k8s.io/apiserver/pkg/server"
)

// TestKeepWebhookConnections serves, over TLS and HTTP/2, a chain that asks
// to close every connection, as k8s.io/apiserver's authentication filter
// does for anonymous HTTP/2 callers such as kube-apiserver calling a
// webhook, and counts the TLS connections that n requests open.
func TestKeepWebhookConnections(t *testing.T) {
	closing := func(http.Handler, *genericapiserver.Config) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Connection", "close")
			_, _ = w.Write([]byte("ok"))
		})
	}
	const n = 20
	tests := []struct {
		name      string
		path      string
		wantConns int64
	}{
		{"webhook path keeps its connection", webhookPathPrefix + "pods/validate", 1},
		{"other paths keep the mitigation", "/readyz", n},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewUnstartedServer(keepWebhookConnections(closing)(nil, nil))
			var conns atomic.Int64
			srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					conns.Add(1)
				}
			}
			srv.EnableHTTP2 = true
			srv.StartTLS()
			defer srv.Close()
			client := srv.Client()
			for range n {
				resp, err := client.Get(srv.URL + tt.path)
				if err != nil {
					t.Fatal(err)
				}
				if resp.ProtoMajor != 2 {
					t.Fatalf("served over %s, want HTTP/2", resp.Proto)
				}
				_ = resp.Body.Close()
			}
			if got := conns.Load(); got != tt.wantConns {
				t.Errorf("%d requests to %s opened %d connections, want %d", n, tt.path, got, tt.wantConns)
			}
		})
	}
}
