package server

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"testing"

	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/muster-dev/muster/pkg/webhook/pods"
)

// TestWebhookPathsKeepTheirConnection serves a chain that, like the API's
// for anonymous HTTP/2 callers, ends every connection after one request,
// and checks that calls to the webhook's paths skip it and share one
// connection while other paths still go through it.
func TestWebhookPathsKeepTheirConnection(t *testing.T) {
	closing := func(http.Handler, *genericapiserver.Config) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Connection", "close")
			w.WriteHeader(http.StatusForbidden)
		})
	}
	webhook := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	srv := httptest.NewUnstartedServer(withWebhookPaths(closing, webhook)(nil, nil))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	client := srv.Client()
	client.Transport.(*http.Transport).TLSClientConfig.NextProtos = []string{"h2"}
	client.Transport.(*http.Transport).ForceAttemptHTTP2 = true

	tests := []struct {
		path      string
		wantCode  int
		wantConns int
	}{
		{pods.MutatePath, http.StatusOK, 1},
		{pods.ValidatePath, http.StatusOK, 1},
		{"/apis/scheduling.muster.dev/v1alpha1/podgroups", http.StatusForbidden, 5},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			client.CloseIdleConnections()
			conns := 0
			trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
				if !i.Reused {
					conns++
				}
			}}
			for range 5 {
				req, err := http.NewRequestWithContext(httptrace.WithClientTrace(t.Context(), trace), http.MethodPost, srv.URL+tt.path, bytes.NewReader(nil))
				if err != nil {
					t.Fatal(err)
				}
				resp, err := client.Do(req)
				if err != nil {
					t.Fatalf("POST %s: %v", tt.path, err)
				}
				resp.Body.Close()
				if resp.ProtoMajor != 2 {
					t.Fatalf("POST %s went over HTTP/%d, want HTTP/2", tt.path, resp.ProtoMajor)
				}
				if resp.StatusCode != tt.wantCode {
					t.Errorf("POST %s = %d, want %d", tt.path, resp.StatusCode, tt.wantCode)
				}
			}
			if conns != tt.wantConns {
				t.Errorf("5 calls to %s opened %d connections, want %d", tt.path, conns, tt.wantConns)
			}
		})
	}
}
