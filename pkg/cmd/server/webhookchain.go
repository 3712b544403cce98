package server

import (
	"net/http"

	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/muster-dev/muster/pkg/webhook/pods"
)

// withWebhookPaths serves the pod webhook's paths ahead of the API's handler
// chain, which build makes, and every other path through it.
//
// kube-apiserver calls an admission webhook without credentials. Inside the
// API's chain such a call is authenticated as anonymous, and for anonymous
// HTTP/2 requests the chain sets "Connection: close" (the
// UnauthenticatedHTTP2DOSMitigation of CVE-2023-44487): every call ends its
// connection with a GOAWAY. kube-apiserver then pays a TLS handshake per
// call, and the calls in flight on the closing connection are retried with
// a backoff of 1, 2, 4 and 8 seconds, past the webhook's 10s timeout under
// load. The webhook needs none of the chain: it trusts no caller, serves
// no stored object, and bounds its request body itself.
func withWebhookPaths(build func(http.Handler, *genericapiserver.Config) http.Handler, webhook http.Handler) func(http.Handler, *genericapiserver.Config) http.Handler {
	return func(apiHandler http.Handler, c *genericapiserver.Config) http.Handler {
		chain := build(apiHandler, c)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case pods.MutatePath, pods.ValidatePath:
				webhook.ServeHTTP(w, r)
			default:
				chain.ServeHTTP(w, r)
			}
		})
	}
}
