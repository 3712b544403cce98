// Package apicalls counts the controller's API requests by verb and
// resource, so that the calls spent per pod are measured, not guessed.
package apicalls

import (
	"net/http"
	"strings"

	k8smetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Requests counts API requests by client, verb and resource.
var Requests = k8smetrics.NewCounterVec(&k8smetrics.CounterOpts{
	Subsystem:      "muster",
	Name:           "controller_api_requests_total",
	Help:           "API requests sent by Muster's controller, by client, verb and resource.",
	StabilityLevel: k8smetrics.ALPHA,
}, []string{"client", "verb", "resource"})

func init() {
	legacyregistry.MustRegister(Requests)
}

// Wrap returns a transport wrapper, for rest.Config.Wrap, that counts every
// request under the given client name.
func Wrap(client string) func(http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper{client: client, next: rt}
	}
}

type roundTripper struct {
	client string
	next   http.RoundTripper
}

func (r roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	Requests.WithLabelValues(r.client, Verb(req), Resource(req.URL.Path)).Inc()
	return r.next.RoundTrip(req)
}

// Verb maps an HTTP request to a Kubernetes verb.
func Verb(req *http.Request) string {
	q := req.URL.Query()
	switch req.Method {
	case http.MethodGet:
		if q.Get("watch") == "true" {
			return "watch"
		}
		return "get" // list and get alike: the path tells them apart.
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	}
	return strings.ToLower(req.Method)
}

// Resource returns "resource" or "resource/subresource" of an API path such
// as /api/v1/namespaces/ns/pods/name or
// /apis/group/version/namespaces/ns/podgroups/name/status.
func Resource(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return "other"
	}
	if len(parts) >= 2 && parts[0] == "namespaces" {
		if len(parts) == 2 {
			return "namespaces"
		}
		parts = parts[2:]
	}
	switch len(parts) {
	case 0:
		return "discovery"
	case 1, 2:
		return parts[0]
	default:
		return parts[0] + "/" + parts[2]
	}
}
