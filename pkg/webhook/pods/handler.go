// Package pods is Muster's pod admission webhook. The mutating half puts a new
// pod of a gang behind the admission gate and the tracking finalizer; the
// validating half checks Muster's labels and annotations on create and update.
// muster-apiserver serves both on a listener of its own (--webhook-port).
package pods

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"

	"github.com/muster-dev/muster/pkg/manifests"
)

// MaxRequestBytes bounds a request body. kube-apiserver caps an object at
// about 1.5 MiB in etcd, and an UPDATE review carries two of them.
const MaxRequestBytes = 3 << 20

var (
	reviewGVK   = admissionv1.SchemeGroupVersion.WithKind("AdmissionReview")
	podGVK      = corev1.SchemeGroupVersion.WithKind("Pod")
	podResource = metav1.GroupVersionResource{Version: "v1", Resource: "pods"}
)

// Handler serves manifests.MutatePath and manifests.ValidatePath, where the
// webhook configurations send kube-apiserver.
type Handler struct {
	logger  klog.Logger
	decoder runtime.Decoder
}

var _ http.Handler = &Handler{}

// NewHandler returns a Handler that logs to logger.
func NewHandler(logger klog.Logger) *Handler {
	scheme := runtime.NewScheme()
	// Registering a built-in type's group in a fresh scheme cannot fail.
	utilruntime.Must(admissionv1.AddToScheme(scheme))
	utilruntime.Must(corev1.AddToScheme(scheme))
	return &Handler{
		logger:  logger.WithName("pod-webhook"),
		decoder: serializer.NewCodecFactory(scheme).UniversalDeserializer(),
	}
}

// ServeHTTP answers one AdmissionReview. Malformed requests get an HTTP error;
// a well-formed review always gets a review back with the request's UID, even
// when the pod in it cannot be decoded.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var admit func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse
	switch r.URL.Path {
	case manifests.MutatePath:
		admit = h.mutate
	case manifests.ValidatePath:
		admit = h.validate
	default:
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		WriteStatus(w, http.StatusMethodNotAllowed, "only POST is allowed")
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		WriteStatus(w, http.StatusUnsupportedMediaType, "Content-Type must be application/json")
		return
	}
	if r.ContentLength > MaxRequestBytes {
		WriteStatus(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is larger than %d bytes", MaxRequestBytes))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			WriteStatus(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is larger than %d bytes", MaxRequestBytes))
			return
		}
		WriteStatus(w, http.StatusBadRequest, fmt.Sprintf("reading request body: %v", err))
		return
	}

	req, err := h.decodeReview(body)
	if err != nil {
		h.logger.V(2).Info("Rejected a malformed admission review", "path", r.URL.Path, "err", err)
		WriteStatus(w, http.StatusBadRequest, err.Error())
		return
	}
	resp := admit(req)
	resp.UID = req.UID
	out, err := json.Marshal(&admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: reviewGVK.GroupVersion().String(), Kind: reviewGVK.Kind},
		Response: resp,
	})
	if err != nil {
		WriteStatus(w, http.StatusInternalServerError, fmt.Sprintf("encoding admission review: %v", err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// decodeReview returns the request of an admission.k8s.io/v1 AdmissionReview.
// The webhook configurations ask for v1 only, so any other version is a
// misconfiguration to report, not to guess at.
func (h *Handler) decodeReview(body []byte) (*admissionv1.AdmissionRequest, error) {
	obj, gvk, err := h.decoder.Decode(body, nil, nil)
	if err != nil {
		if gvk != nil && gvk.Kind == reviewGVK.Kind && gvk.GroupVersion() != reviewGVK.GroupVersion() {
			return nil, fmt.Errorf("unsupported AdmissionReview version %q: this webhook accepts %s only", gvk.GroupVersion(), reviewGVK.GroupVersion())
		}
		return nil, fmt.Errorf("decoding AdmissionReview: %w", err)
	}
	review, ok := obj.(*admissionv1.AdmissionReview)
	if !ok {
		return nil, fmt.Errorf("expected a %s %s, got %s", reviewGVK.GroupVersion(), reviewGVK.Kind, gvk)
	}
	if review.Request == nil {
		return nil, errors.New("AdmissionReview has no request")
	}
	return review.Request, nil
}

// mutate answers the mutating webhook.
func (h *Handler) mutate(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	if req.Operation != admissionv1.Create || !isPod(req) {
		return allowed()
	}
	pod, err := h.decodePod(req.Object, "object")
	if err != nil {
		return badRequest(err)
	}
	logger := h.logger.WithValues("namespace", req.Namespace, "pod", podName(pod), "uid", req.UID)
	patch, warnings, errs, err := mutationPatch(pod) // prepare.go
	if err != nil {
		return errored(err)
	}
	if len(errs) > 0 {
		return h.deny(req, pod, errs)
	}
	resp := allowed()
	resp.Warnings = warnings
	if len(warnings) > 0 {
		logger.V(2).Info("Admitted a pod without a gate", "warnings", warnings)
	}
	if patch == nil {
		return resp
	}
	pt := admissionv1.PatchTypeJSONPatch
	resp.Patch, resp.PatchType = patch, &pt
	logger.V(4).Info("Prepared a pod for gang admission", "patch", string(patch))
	return resp
}

// validate answers the validating webhook.
func (h *Handler) validate(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	if !isPod(req) {
		return allowed()
	}
	var pod *corev1.Pod
	var errs field.ErrorList
	switch req.Operation {
	case admissionv1.Create:
		p, err := h.decodePod(req.Object, "object")
		if err != nil {
			return badRequest(err)
		}
		pod, errs = p, validateCreate(p)
	case admissionv1.Update:
		p, err := h.decodePod(req.Object, "object")
		if err != nil {
			return badRequest(err)
		}
		old, err := h.decodePod(req.OldObject, "oldObject")
		if err != nil {
			return badRequest(err)
		}
		pod, errs = p, validateUpdate(p, old)
	default:
		return allowed()
	}
	if len(errs) == 0 {
		return allowed()
	}
	return h.deny(req, pod, errs)
}

// deny refuses the request with a 422 Invalid status that names each field
// and rule in errs, as kube-apiserver's own validation does.
func (h *Handler) deny(req *admissionv1.AdmissionRequest, pod *corev1.Pod, errs field.ErrorList) *admissionv1.AdmissionResponse {
	status := apierrors.NewInvalid(schema.GroupKind{Kind: podGVK.Kind}, podName(pod), errs).Status()
	h.logger.V(2).Info("Denied a pod", "namespace", req.Namespace, "pod", podName(pod), "uid", req.UID, "operation", req.Operation, "reason", status.Message)
	return &admissionv1.AdmissionResponse{Allowed: false, Result: &status}
}

// decodePod decodes the pod in a review; which names the field for errors.
func (h *Handler) decodePod(raw runtime.RawExtension, which string) (*corev1.Pod, error) {
	if len(raw.Raw) == 0 {
		return nil, fmt.Errorf("request.%s is missing", which)
	}
	obj, gvk, err := h.decoder.Decode(raw.Raw, &podGVK, nil)
	if err != nil {
		return nil, fmt.Errorf("decoding request.%s: %w", which, err)
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, fmt.Errorf("request.%s: expected a v1 Pod, got %s", which, gvk)
	}
	return pod, nil
}

// isPod reports whether the request is for a pod itself. The configurations
// register pods only; anything else is let through untouched rather than
// judged by rules written for pods.
func isPod(req *admissionv1.AdmissionRequest) bool {
	return req.Resource == podResource && req.SubResource == ""
}

// podName names a pod in messages; a pod being created may only have a
// generateName.
func podName(pod *corev1.Pod) string {
	if pod.Name != "" {
		return pod.Name
	}
	return pod.GenerateName
}

func allowed() *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: true}
}

func badRequest(err error) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Result: &metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest, Message: err.Error(),
	}}
}

func errored(err error) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Result: &metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Reason: metav1.StatusReasonInternalError, Message: err.Error(),
	}}
}
