package framework

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// withCodec returns a copy of cfg that a bare RESTClient can use for raw
// requests such as /readyz, /openapi/v3 and hand-written bodies.
func withCodec(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &schema.GroupVersion{}
	c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	return c
}

// RawClient returns a REST client for requests that the typed clientset
// cannot make: malformed bodies, strict field validation, tables.
func (s *Server) RawClient() (*rest.RESTClient, error) {
	return rest.RESTClientFor(withCodec(s.Config))
}
