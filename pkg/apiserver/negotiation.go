package apiserver

import (
	"mime"
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/request"
	genericapiserver "k8s.io/apiserver/pkg/server"
)

// servedLikeCustomResources wraps the generic handler chain so that Muster's
// resources negotiate content types as kube-apiserver does for a custom
// resource (see withCustomResourceContentTypes).
func servedLikeCustomResources(build func(http.Handler, *genericapiserver.Config) http.Handler, group string, serializer runtime.NegotiatedSerializer) func(http.Handler, *genericapiserver.Config) http.Handler {
	return func(apiHandler http.Handler, c *genericapiserver.Config) http.Handler {
		return build(withCustomResourceContentTypes(apiHandler, group, serializer), c)
	}
}

// withCustomResourceContentTypes serves the resources of group in JSON, YAML
// (and CBOR, where its feature gate is on), never in protobuf, while the
// meta.k8s.io views of them (PartialObjectMetadata, PartialObjectMetadataList)
// are still offered in protobuf.
//
// Muster's types have no generated protobuf. The group's serializer must
// still list protobuf: the handlers negotiate every request against that
// list, transformations included, and a metadata WATCH (the garbage
// collector's informer) streams in the format chosen there. So without this
// filter a client that prefers protobuf (kube-controller-manager's clients,
// Accept "application/vnd.kubernetes.protobuf,application/json") was offered
// protobuf for a PodGroupList and got 406 when it could not be encoded: a
// namespace never finished deleting (issue 19).
//
// apiextensions-apiserver solves this with RequestScope.StandardSerializers,
// which the generic installer gives no way to set. This filter has the same
// effect from outside: it drops from Accept every protobuf clause that asks
// for the object itself (no as=, g= or v=, which name a meta.k8s.io view),
// so negotiation goes on to the client's next choice, as it would for a
// custom resource. When nothing is left it answers 406 before the request
// touches storage, as a custom resource does. A request body in protobuf,
// which could never be decoded, gets 415 (apiextensions-apiserver 0.37
// panics on one). One difference remains: an error for a request whose
// Accept was rewritten is a JSON Status where a custom resource's would be
// protobuf; client-go reads either.
//
// Only resource requests of group are touched: discovery, OpenAPI and
// health checks, whose objects have protobuf, keep it.
func withCustomResourceContentTypes(handler http.Handler, group string, serializer runtime.NegotiatedSerializer) http.Handler {
	var standard []string
	for _, info := range serializer.SupportedMediaTypes() {
		if info.MediaType != runtime.ContentTypeProtobuf {
			standard = append(standard, info.MediaType)
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		info, ok := request.RequestInfoFrom(req.Context())
		if !ok || !info.IsResourceRequest || info.APIGroup != group {
			handler.ServeHTTP(w, req)
			return
		}
		gv := schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}
		// DELETE bodies are DeleteOptions, which protobuf decodes, and PATCH
		// checks its own content types.
		if (info.Verb == "create" || info.Verb == "update") && isProtobuf(req.Header.Get("Content-Type")) {
			responsewriters.ErrorNegotiated(negotiation.NewUnsupportedMediaTypeError(standard), serializer, gv, w, req)
			return
		}
		accept, dropped := withoutProtobufObjects(req.Header.Get("Accept"))
		if !dropped {
			handler.ServeHTTP(w, req)
			return
		}
		if accept == "" {
			// The error is negotiated against the client's own header: a
			// Status has protobuf, so a protobuf-only client can read it.
			responsewriters.ErrorNegotiated(negotiation.NewNotAcceptableError(standard), serializer, gv, w, req)
			return
		}
		req = req.Clone(req.Context())
		req.Header.Set("Accept", accept)
		handler.ServeHTTP(w, req)
	})
}

// isProtobuf says whether a Content-Type is protobuf, read as the handlers
// read it.
func isProtobuf(contentType string) bool {
	mediaType, _, err := mime.ParseMediaType(contentType)
	return err == nil && mediaType == runtime.ContentTypeProtobuf
}

// withoutProtobufObjects returns an Accept header without its clauses that
// ask for an object in protobuf, and whether it dropped any. The other
// clauses are kept as written, in their order.
func withoutProtobufObjects(header string) (string, bool) {
	var kept []string
	dropped := false
	for _, clause := range strings.Split(header, ",") {
		switch {
		case asksForProtobufObject(clause):
			dropped = true
		case strings.Trim(clause, " ") != "":
			kept = append(kept, clause)
		}
	}
	if !dropped {
		return header, false
	}
	return strings.Join(kept, ","), true
}

// asksForProtobufObject says whether one clause of an Accept header is
// protobuf with no transformation. It splits the clause the way
// github.com/munnerz/goautoneg does for the handlers' negotiation (media
// range, then ";"-separated key=value parameters, trimming spaces), so that
// it agrees with them on every clause they would match.
func asksForProtobufObject(clause string) bool {
	mediaRange, params, _ := strings.Cut(clause, ";")
	typ, subtype, _ := strings.Cut(mediaRange, "/")
	if strings.Trim(typ, " ") != "application" || strings.Trim(subtype, " ") != "vnd.kubernetes.protobuf" {
		return false
	}
	for _, param := range strings.Split(params, ";") {
		key, value, ok := strings.Cut(param, "=")
		if !ok || strings.Contains(value, "=") {
			continue // ignored by the negotiation too
		}
		switch strings.Trim(key, " ") {
		case "as", "g", "v":
			// Any of these makes it a request for a transformation,
			// which the handlers judge themselves.
			return false
		}
	}
	return true
}
