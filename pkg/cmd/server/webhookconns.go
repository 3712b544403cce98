package server

import (
	"net/http"
	"strings"

	"k8s.io/apiserver/pkg/endpoints/responsewriter"
	genericapiserver "k8s.io/apiserver/pkg/server"
)

// keepWebhookConnections wraps the generic handler chain so that answers on
// the pod webhook's paths never ask to close the connection.
//
// kube-apiserver calls webhooks without credentials, as the anonymous user,
// and over HTTP/2 where it reaches the webhook by a loopback URL (as on the
// local cluster). Since the UnauthenticatedHTTP2DOSMitigation feature (on by
// default from Kubernetes 1.29) k8s.io/apiserver's authentication filter sets
// "Connection: close" on every anonymous HTTP/2 request, which Go's HTTP/2
// server turns into a GOAWAY: each webhook call then paid a new TLS
// handshake. The webhook paths are open to anonymous callers by design
// (AlwaysAllowPaths), and take at most MaxRequestBytes, so keeping their
// connections costs nothing the mitigation protects; every other path keeps
// it.
func keepWebhookConnections(build func(http.Handler, *genericapiserver.Config) http.Handler) func(http.Handler, *genericapiserver.Config) http.Handler {
	return func(apiHandler http.Handler, c *genericapiserver.Config) http.Handler {
		chain := build(apiHandler, c)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, webhookPathPrefix) {
				w = responsewriter.WrapForHTTP1Or2(&keepAliveWriter{ResponseWriter: w})
			}
			chain.ServeHTTP(w, r)
		})
	}
}

// keepAliveWriter drops a "Connection: close" header before the response
// headers are written.
type keepAliveWriter struct {
	http.ResponseWriter
	wroteHeader bool
}

var _ responsewriter.UserProvidedDecorator = &keepAliveWriter{}

func (w *keepAliveWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *keepAliveWriter) WriteHeader(code int) {
	if !w.wroteHeader {
		w.wroteHeader = true
		w.ResponseWriter.Header().Del("Connection")
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *keepAliveWriter) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}
