package apiserver

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/endpoints/handlers"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

const (
	protobuf = "application/vnd.kubernetes.protobuf"
	// clientGo is what client-go sends for a protobuf-preferring config,
	// as kube-controller-manager's.
	clientGo = "application/vnd.kubernetes.protobuf,application/json"
	// metadataList and metadataWatch are what k8s.io/client-go/metadata
	// sends to list and to watch.
	metadataList  = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
	metadataWatch = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
	kubectlTable  = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
)

// TestOfferedMediaTypes runs the filter in front of the negotiation that
// the generic handlers do, with a RequestScope as the installer builds it,
// and checks which media type each request is answered in.
func TestOfferedMediaTypes(t *testing.T) {
	serializer := genericapiserver.NewDefaultAPIGroupInfo(scheduling.GroupName, Scheme, metav1.ParameterCodec, Codecs).NegotiatedSerializer
	scope := &handlers.RequestScope{
		Serializer:       serializer,
		TableConvertor:   rest.NewDefaultTableConvertor(scheduling.Resource("podgroups")),
		MetaGroupVersion: metav1.SchemeGroupVersion,
	}
	// negotiated answers in the media type the handlers would pick, and
	// the transformation asked for; a failed negotiation answers as they do.
	negotiated := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		info, _ := request.RequestInfoFrom(req.Context())
		options, serializerInfo, err := negotiation.NegotiateOutputMediaType(req, serializer, scope)
		if err == nil && info.Verb == "watch" {
			serializerInfo, err = negotiation.NegotiateOutputMediaTypeStream(req, serializer, scope)
		}
		if err != nil {
			responsewriters.ErrorNegotiated(err, serializer, scheduling.SchemeGroupVersion, w, req)
			return
		}
		if options.Convert != nil {
			w.Header().Set("X-As", options.Convert.Kind)
		}
		w.Header().Set("Content-Type", serializerInfo.MediaType)
		w.WriteHeader(http.StatusOK)
	})
	handler := withCustomResourceContentTypes(negotiated, scheduling.GroupName, serializer)

	podgroups := &request.RequestInfo{IsResourceRequest: true, APIGroup: scheduling.GroupName, APIVersion: "v1alpha1", Resource: "podgroups", Namespace: "default"}
	with := func(verb string) *request.RequestInfo {
		info := *podgroups
		info.Verb = verb
		return &info
	}
	discovery := &request.RequestInfo{Path: "/apis/scheduling.muster.dev/v1alpha1", Verb: "get"}
	otherGroup := &request.RequestInfo{IsResourceRequest: true, APIGroup: "example.com", APIVersion: "v1", Resource: "things", Verb: "list"}

	tests := []struct {
		name        string
		info        *request.RequestInfo
		accept      string
		contentType string
		wantCode    int
		wantType    string // Content-Type of the answer
		wantAs      string // transformation served
	}{
		{"a protobuf-preferring list is answered in JSON", with("list"), clientGo, "", 200, "application/json", ""},
		{"a protobuf-preferring get is answered in JSON", with("get"), clientGo, "", 200, "application/json", ""},
		{"a protobuf-preferring deletecollection is answered in JSON", with("deletecollection"), clientGo, "", 200, "application/json", ""},
		{"a protobuf-preferring watch streams JSON", with("watch"), clientGo, "", 200, "application/json", ""},
		{"a protobuf watch stream falls back to a JSON stream", with("watch"), "application/vnd.kubernetes.protobuf;stream=watch, application/json", "", 200, "application/json", ""},
		{"protobuf then anything is answered in JSON", with("list"), "application/vnd.kubernetes.protobuf, */*", "", 200, "application/json", ""},
		{"protobuf with a higher q than JSON is still answered in JSON", with("list"), "application/vnd.kubernetes.protobuf;q=1, application/json;q=0.5", "", 200, "application/json", ""},
		{"protobuf then YAML is answered in YAML", with("list"), "application/vnd.kubernetes.protobuf, application/yaml", "", 200, "application/yaml", ""},
		{"protobuf alone is not acceptable", with("list"), protobuf, "", 406, protobuf, ""},
		{"a protobuf watch stream alone is not acceptable", with("watch"), "application/vnd.kubernetes.protobuf;stream=watch", "", 406, protobuf, ""},
		{"protobuf alone is not acceptable for a deletecollection", with("deletecollection"), protobuf, "", 406, protobuf, ""},
		{"no Accept is answered in JSON", with("list"), "", "", 200, "application/json", ""},
		{"anything is answered in JSON", with("list"), "*/*", "", 200, "application/json", ""},
		{"the metadata list is served in protobuf", with("list"), metadataList, "", 200, protobuf, "PartialObjectMetadataList"},
		{"the metadata watch is served in protobuf", with("watch"), metadataWatch, "", 200, protobuf, "PartialObjectMetadata"},
		{"a metadata list written with spaces is served in protobuf", with("list"), "application/vnd.kubernetes.protobuf; as=PartialObjectMetadataList; g=meta.k8s.io; v=v1", "", 200, protobuf, "PartialObjectMetadataList"},
		{"kubectl's Table is served in JSON", with("list"), kubectlTable, "", 200, "application/json", "Table"},
		{"a Table in protobuf is not acceptable, as for any resource", with("list"), "application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1", "", 406, "application/json", ""},
		{"a create from JSON is accepted", with("create"), "application/json", "application/json", 200, "application/json", ""},
		{"a create from protobuf is an unsupported media type", with("create"), "application/json", protobuf, 415, "application/json", ""},
		{"an update from protobuf is an unsupported media type, said in protobuf", with("update"), clientGo, protobuf, 415, protobuf, ""},
		{"a delete with protobuf DeleteOptions is let through", with("delete"), clientGo, protobuf, 200, "application/json", ""},
		{"discovery keeps protobuf", discovery, clientGo, "", 200, protobuf, ""},
		{"another group keeps protobuf", otherGroup, clientGo, "", 200, protobuf, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/apis/scheduling.muster.dev/v1alpha1/namespaces/default/podgroups", nil)
			if tc.accept != "" {
				req.Header.Set("Accept", tc.accept)
			}
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			req = req.WithContext(request.WithRequestInfo(req.Context(), tc.info))
			rec := httptest.NewRecorder()
			handler.ServeHTTP(rec, req)

			if rec.Code != tc.wantCode {
				t.Errorf("code = %d, want %d (%s)", rec.Code, tc.wantCode, rec.Body)
			}
			if got := rec.Header().Get("Content-Type"); got != tc.wantType {
				t.Errorf("Content-Type = %q, want %q", got, tc.wantType)
			}
			if got := rec.Header().Get("X-As"); got != tc.wantAs {
				t.Errorf("served as %q, want %q", got, tc.wantAs)
			}
			if req.Header.Get("Accept") != tc.accept {
				t.Errorf("the caller's request was changed: Accept %q", req.Header.Get("Accept"))
			}
		})
	}
}

// TestRefusalsNameTheMediaTypesServed checks that a 406 or 415 of the filter
// lists what the client may use instead, and never protobuf.
func TestRefusalsNameTheMediaTypesServed(t *testing.T) {
	serializer := genericapiserver.NewDefaultAPIGroupInfo(scheduling.GroupName, Scheme, metav1.ParameterCodec, Codecs).NegotiatedSerializer
	reached := false
	handler := withCustomResourceContentTypes(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true }), scheduling.GroupName, serializer)
	info := &request.RequestInfo{IsResourceRequest: true, APIGroup: scheduling.GroupName, APIVersion: "v1alpha1", Resource: "podgroups"}
	tests := []struct {
		name        string
		verb        string
		contentType string
		wantCode    int
		wantMessage string
	}{
		{"406 names the media types served", "deletecollection", "", 406, "only the following media types are accepted: application/json, application/yaml"},
		{"415 names the media types read", "create", protobuf, 415, "accepted media types include: application/json, application/yaml"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reached = false
			req := httptest.NewRequest(http.MethodPost, "/apis/scheduling.muster.dev/v1alpha1/podgroups", nil)
			// JSON as well as protobuf for the 415, so the Status is readable here.
			accept := "application/vnd.kubernetes.protobuf"
			if tc.contentType != "" {
				accept = "application/json"
				req.Header.Set("Content-Type", tc.contentType)
			}
			req.Header.Set("Accept", accept)
			i := *info
			i.Verb = tc.verb
			req = req.WithContext(request.WithRequestInfo(req.Context(), &i))
			rec := httptest.NewRecorder()
			handler.ServeHTTP(rec, req)
			if reached {
				t.Errorf("the request reached the handler")
			}
			if rec.Code != tc.wantCode {
				t.Fatalf("code = %d, want %d", rec.Code, tc.wantCode)
			}
			var message string
			if tc.contentType == "" {
				message = rec.Body.String() // a protobuf Status: the message is a plain string in it
			} else {
				var status metav1.Status
				if err := json.Unmarshal(rec.Body.Bytes(), &status); err != nil {
					t.Fatalf("decoding Status: %v", err)
				}
				message = status.Message
			}
			if !strings.Contains(message, tc.wantMessage) {
				t.Errorf("message %q does not say %q", message, tc.wantMessage)
			}
			if strings.Contains(message, protobuf) {
				t.Errorf("message %q offers protobuf", message)
			}
		})
	}
}

// TestWithoutProtobufObjects checks how Accept headers are rewritten.
func TestWithoutProtobufObjects(t *testing.T) {
	tests := []struct {
		header      string
		want        string
		wantDropped bool
	}{
		{clientGo, "application/json", true},
		{"application/vnd.kubernetes.protobuf, */*", " */*", true},
		{"application/vnd.kubernetes.protobuf;stream=watch, application/json", " application/json", true},
		{protobuf, "", true},
		{"application/vnd.kubernetes.protobuf, ", "", true},
		{"application/json", "application/json", false},
		{"", "", false},
		{metadataList, metadataList, false},
		{"application/vnd.kubernetes.protobuf;g=meta.k8s.io", "application/vnd.kubernetes.protobuf;g=meta.k8s.io", false},
		{"application/vnd.kubernetes.protobuf;as", "", true},
		{"application / vnd.kubernetes.protobuf", "", true},
		{"application/vnd.kubernetes.protobuf+json", "application/vnd.kubernetes.protobuf+json", false},
	}
	for _, tc := range tests {
		t.Run(tc.header, func(t *testing.T) {
			got, dropped := withoutProtobufObjects(tc.header)
			if got != tc.want || dropped != tc.wantDropped {
				t.Errorf("got %q, %v; want %q, %v", got, dropped, tc.want, tc.wantDropped)
			}
		})
	}
}
