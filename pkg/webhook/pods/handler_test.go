package pods

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/podtest"
	"github.com/muster-dev/muster/pkg/manifests"
)

const testUID = types.UID("0f7c1a52-6f3e-4d1c-9a57-2b7d8c1e4f00")

// reviewRequest returns a v1 AdmissionReview for a pod, as kube-apiserver sends it.
func reviewRequest(t testing.TB, op admissionv1.Operation, obj, old *corev1.Pod, mods ...func(*admissionv1.AdmissionRequest)) []byte {
	t.Helper()
	req := &admissionv1.AdmissionRequest{
		UID:       testUID,
		Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Resource:  podResource,
		Namespace: "ns",
		Operation: op,
	}
	if obj != nil {
		req.Object = runtime.RawExtension{Raw: mustJSON(t, obj)}
	}
	if old != nil {
		req.OldObject = runtime.RawExtension{Raw: mustJSON(t, old)}
	}
	for _, m := range mods {
		m(req)
	}
	return mustJSON(t, &admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  req,
	})
}

func post(h http.Handler, path, contentType string, body io.Reader) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, path, body)
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// response decodes a 200 answer and checks that it is a v1 review that echoes testUID.
func response(t *testing.T, w *httptest.ResponseRecorder) *admissionv1.AdmissionResponse {
	t.Helper()
	if w.Code != http.StatusOK {
		t.Fatalf("status %d, want 200: %s", w.Code, w.Body)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(w.Body.Bytes(), &review); err != nil {
		t.Fatalf("decoding response: %v", err)
	}
	if review.APIVersion != "admission.k8s.io/v1" || review.Kind != "AdmissionReview" {
		t.Errorf("response is a %s %s", review.APIVersion, review.Kind)
	}
	if review.Response == nil {
		t.Fatal("response has no response")
	}
	if review.Response.UID != testUID {
		t.Errorf("response UID %q, want the request's %q", review.Response.UID, testUID)
	}
	return review.Response
}

func TestHandlerRejectsBadRequests(t *testing.T) {
	h := NewHandler(klog.Background())
	good := reviewRequest(t, admissionv1.Create, podtest.Pod(podtest.InGroup("train")), nil)
	v1beta1 := bytes.Replace(good, []byte(`"admission.k8s.io/v1"`), []byte(`"admission.k8s.io/v1beta1"`), 1)
	tests := []struct {
		name        string
		method      string
		path        string
		contentType string
		body        io.Reader
		wantCode    int
		wantMessage string
	}{
		{"an unknown path is not found", "", "/webhooks/pods/other", "application/json", bytes.NewReader(good), http.StatusNotFound, ""},
		{"only POST is allowed", http.MethodGet, manifests.MutatePath, "application/json", nil, http.StatusMethodNotAllowed, ""},
		{"a body that is not JSON is a bad request", "", manifests.MutatePath, "application/json", strings.NewReader("{not json"), http.StatusBadRequest, "decoding AdmissionReview"},
		{"an empty body is a bad request", "", manifests.ValidatePath, "application/json", strings.NewReader(""), http.StatusBadRequest, ""},
		{"a v1beta1 review is a bad request", "", manifests.MutatePath, "application/json", bytes.NewReader(v1beta1), http.StatusBadRequest, "unsupported AdmissionReview version"},
		{"a review without apiVersion and kind is a bad request", "", manifests.MutatePath, "application/json", strings.NewReader(`{"request":{"uid":"x"}}`), http.StatusBadRequest, ""},
		{"another kind is a bad request", "", manifests.ValidatePath, "application/json", bytes.NewReader(mustJSON(t, podtest.Pod(podtest.InGroup("train")))), http.StatusBadRequest, "expected a admission.k8s.io/v1 AdmissionReview"},
		{"a review without a request is a bad request", "", manifests.ValidatePath, "application/json", strings.NewReader(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`), http.StatusBadRequest, "no request"},
		{"a missing content type is unsupported", "", manifests.MutatePath, "", bytes.NewReader(good), http.StatusUnsupportedMediaType, ""},
		{"a YAML content type is unsupported", "", manifests.MutatePath, "application/yaml", bytes.NewReader(good), http.StatusUnsupportedMediaType, ""},
		{"a huge body is too large", "", manifests.ValidatePath, "application/json", bytes.NewReader(make([]byte, MaxRequestBytes+1)), http.StatusRequestEntityTooLarge, ""},
		{"a huge body of unknown length is too large", "", manifests.ValidatePath, "application/json", io.MultiReader(strings.NewReader(" "), bytes.NewReader(make([]byte, MaxRequestBytes))), http.StatusRequestEntityTooLarge, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := tt.method
			if method == "" {
				method = http.MethodPost
			}
			r := httptest.NewRequest(method, tt.path, tt.body)
			if _, known := tt.body.(io.Seeker); !known && tt.body != nil {
				r.ContentLength = -1
			}
			if tt.contentType != "" {
				r.Header.Set("Content-Type", tt.contentType)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.wantCode {
				t.Errorf("status %d, want %d: %s", w.Code, tt.wantCode, w.Body)
			}
			if !strings.Contains(w.Body.String(), tt.wantMessage) {
				t.Errorf("body %q does not contain %q", w.Body, tt.wantMessage)
			}
		})
	}
}

func TestHandlerMutate(t *testing.T) {
	h := NewHandler(klog.Background())
	t.Run("a pod of a group is patched", func(t *testing.T) {
		in := podtest.Pod(podtest.InGroup("train"))
		resp := response(t, post(h, manifests.MutatePath, "application/json; charset=utf-8", bytes.NewReader(reviewRequest(t, admissionv1.Create, in, nil))))
		if !resp.Allowed {
			t.Fatalf("not allowed: %+v", resp.Result)
		}
		if resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
			t.Fatalf("patch type %v, want JSONPatch", resp.PatchType)
		}
		got := preparedOf(applyPatch(t, in, resp.Patch))
		if got.Labels[scheduling.ManagedLabel] != "true" || len(got.Finalizers) != 1 || len(got.Gates) != 1 {
			t.Errorf("patched pod %+v is not prepared", got)
		}
	})
	tests := []struct {
		name        string
		review      []byte
		wantWarning bool
	}{
		{"a pod without the label is allowed unchanged", reviewRequest(t, admissionv1.Create, podtest.Pod(), nil), false},
		{"a pod bound to a node is allowed unchanged with a warning", reviewRequest(t, admissionv1.Create, podtest.Pod(podtest.InGroup("train"), podtest.OnNode("n")), nil), true},
		{"an update is not mutated", reviewRequest(t, admissionv1.Update, podtest.Pod(podtest.InGroup("train")), podtest.Pod(podtest.InGroup("train"))), false},
		{"a subresource is not mutated", reviewRequest(t, admissionv1.Create, podtest.Pod(podtest.InGroup("train")), nil, func(r *admissionv1.AdmissionRequest) { r.SubResource = "binding" }), false},
		{"a pod without apiVersion and kind is still decoded", reviewRequest(t, admissionv1.Create, nil, nil, func(r *admissionv1.AdmissionRequest) {
			r.Object.Raw = []byte(`{"metadata":{"name":"p"}}`)
		}), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := response(t, post(h, manifests.MutatePath, "application/json", bytes.NewReader(tt.review)))
			if !resp.Allowed || resp.Patch != nil || resp.PatchType != nil {
				t.Errorf("want allowed with no patch, got %+v", resp)
			}
			if (len(resp.Warnings) > 0) != tt.wantWarning {
				t.Errorf("warnings %q, want some: %v", resp.Warnings, tt.wantWarning)
			}
		})
	}
}

func TestHandlerValidate(t *testing.T) {
	h := NewHandler(klog.Background())
	tests := []struct {
		name        string
		path        string
		review      []byte
		wantAllowed bool
		wantCode    int32
		wantMessage string
		wantCause   string
	}{
		{
			name:        "a valid pod is allowed",
			path:        manifests.ValidatePath,
			review:      reviewRequest(t, admissionv1.Create, podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.MinCountAnnotation, "8")), nil),
			wantAllowed: true,
		},
		{
			name:        "an invalid min-count is denied as invalid, naming the field",
			path:        manifests.ValidatePath,
			review:      reviewRequest(t, admissionv1.Create, podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.MinCountAnnotation, "0")), nil),
			wantCode:    http.StatusUnprocessableEntity,
			wantMessage: `Pod "worker-0" is invalid: metadata.annotations[scheduling.muster.dev/min-count]: Invalid value: "0": must be a positive integer`,
			wantCause:   minCountField,
		},
		{
			name:        "changing the group label is denied, naming the field",
			path:        manifests.ValidatePath,
			review:      reviewRequest(t, admissionv1.Update, podtest.Pod(podtest.InGroup("other")), podtest.Pod(podtest.InGroup("train"))),
			wantCode:    http.StatusUnprocessableEntity,
			wantMessage: `metadata.labels[scheduling.muster.dev/pod-group]: Invalid value: "other": field is immutable`,
			wantCause:   groupField,
		},
		{
			name:        "a pod with only a generateName is named by it",
			path:        manifests.ValidatePath,
			review:      reviewRequest(t, admissionv1.Create, podtest.Pod(podtest.InGroup("Bad"), func(p *corev1.Pod) { p.Name, p.GenerateName = "", "worker-" }), nil),
			wantCode:    http.StatusUnprocessableEntity,
			wantMessage: `Pod "worker-" is invalid: metadata.labels[scheduling.muster.dev/pod-group]`,
			wantCause:   groupField,
		},
		{
			name:        "a delete is allowed",
			path:        manifests.ValidatePath,
			review:      reviewRequest(t, admissionv1.Delete, nil, podtest.Pod(podtest.InGroup("Bad"))),
			wantAllowed: true,
		},
		{
			name:        "another resource is allowed",
			path:        manifests.ValidatePath,
			review:      reviewRequest(t, admissionv1.Create, podtest.Pod(podtest.InGroup("Bad")), nil, func(r *admissionv1.AdmissionRequest) { r.Resource.Resource = "configmaps" }),
			wantAllowed: true,
		},
		{
			name:        "an update without the old object is a bad request in the review",
			path:        manifests.ValidatePath,
			review:      reviewRequest(t, admissionv1.Update, podtest.Pod(podtest.InGroup("train")), nil),
			wantCode:    http.StatusBadRequest,
			wantMessage: "request.oldObject is missing",
		},
		{
			name: "an object that is not a pod is a bad request in the review",
			path: manifests.MutatePath,
			review: reviewRequest(t, admissionv1.Create, nil, nil, func(r *admissionv1.AdmissionRequest) {
				r.Object.Raw = []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`)
			}),
			wantCode:    http.StatusBadRequest,
			wantMessage: "expected a v1 Pod",
		},
		{
			name: "an undecodable pod is a bad request in the review",
			path: manifests.ValidatePath,
			review: reviewRequest(t, admissionv1.Create, nil, nil, func(r *admissionv1.AdmissionRequest) {
				r.Object.Raw = []byte(`{"kind":"Pod","apiVersion":"v1","spec":{"containers":"no"}}`)
			}),
			wantCode:    http.StatusBadRequest,
			wantMessage: "decoding request.object",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := response(t, post(h, tt.path, "application/json", bytes.NewReader(tt.review)))
			if resp.Allowed != tt.wantAllowed {
				t.Fatalf("allowed = %v, want %v: %+v", resp.Allowed, tt.wantAllowed, resp.Result)
			}
			if tt.wantAllowed {
				if resp.Result != nil && resp.Result.Code != 0 {
					t.Errorf("allowed with a failure result %+v", resp.Result)
				}
				return
			}
			if resp.Result == nil {
				t.Fatal("denied without a result")
			}
			if resp.Result.Code != tt.wantCode {
				t.Errorf("code %d, want %d", resp.Result.Code, tt.wantCode)
			}
			if !strings.Contains(resp.Result.Message, tt.wantMessage) {
				t.Errorf("message %q does not contain %q", resp.Result.Message, tt.wantMessage)
			}
			if tt.wantCause != "" {
				if d := resp.Result.Details; d == nil || d.Kind != "Pod" || len(d.Causes) == 0 || d.Causes[0].Field != tt.wantCause {
					t.Errorf("details %+v, want a Pod cause on %s", d, tt.wantCause)
				}
				if resp.Result.Reason != metav1.StatusReasonInvalid {
					t.Errorf("reason %q, want Invalid", resp.Result.Reason)
				}
			}
		})
	}
}
