package apicalls

import (
	"net/http"
	"net/url"
	"testing"
)

func TestResource(t *testing.T) {
	tests := []struct{ path, want string }{
		{"/api/v1/namespaces/default/pods/a", "pods"},
		{"/api/v1/namespaces/default/pods", "pods"},
		{"/api/v1/pods", "pods"},
		{"/api/v1/namespaces/default", "namespaces"},
		{"/api/v1/namespaces", "namespaces"},
		{"/api/v1/namespaces/default/events", "events"},
		{"/apis/scheduling.muster.dev/v1alpha1/namespaces/default/podgroups/g/status", "podgroups/status"},
		{"/apis/coordination.k8s.io/v1/namespaces/muster-system/leases/muster-controller", "leases"},
		{"/apis/scheduling.muster.dev/v1alpha1", "discovery"},
		{"/healthz", "other"},
	}
	for _, tc := range tests {
		if got := Resource(tc.path); got != tc.want {
			t.Errorf("Resource(%q) = %q, want %q", tc.path, got, tc.want)
		}
	}
}

func TestVerb(t *testing.T) {
	tests := []struct {
		method, rawQuery, want string
	}{
		{http.MethodGet, "", "get"},
		{http.MethodGet, "watch=true", "watch"},
		{http.MethodPost, "", "create"},
		{http.MethodPut, "", "update"},
		{http.MethodPatch, "", "patch"},
		{http.MethodDelete, "", "delete"},
	}
	for _, tc := range tests {
		req := &http.Request{Method: tc.method, URL: &url.URL{Path: "/api/v1/pods", RawQuery: tc.rawQuery}}
		if got := Verb(req); got != tc.want {
			t.Errorf("Verb(%s ?%s) = %q, want %q", tc.method, tc.rawQuery, got, tc.want)
		}
	}
}
