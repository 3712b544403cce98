package pods

import (
	"encoding/json"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WriteStatus refuses an HTTP request before any review is answered, as
// kube-apiserver answers its own errors: a metav1.Status of code and
// message, as JSON. kube-apiserver's webhook client decodes it, and the
// user whose pod create failed reads the message ("failed calling webhook
// ...: request body is larger than ..."); a plain-text body reaches them
// only as "the server rejected our request for an unknown reason".
func WriteStatus(w http.ResponseWriter, code int, message string) {
	st := metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Message:  message,
		Reason:   statusReasons[code],
		Code:     int32(code),
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(st)
}

// statusReasons are the reasons kube-apiserver gives the codes the
// webhook answers with.
var statusReasons = map[int]metav1.StatusReason{
	http.StatusBadRequest:            metav1.StatusReasonBadRequest,
	http.StatusUnauthorized:          metav1.StatusReasonUnauthorized,
	http.StatusMethodNotAllowed:      metav1.StatusReasonMethodNotAllowed,
	http.StatusRequestEntityTooLarge: metav1.StatusReasonRequestEntityTooLarge,
	http.StatusUnsupportedMediaType:  metav1.StatusReasonUnsupportedMediaType,
	http.StatusTooManyRequests:       metav1.StatusReasonTooManyRequests,
	http.StatusInternalServerError:   metav1.StatusReasonInternalError,
	http.StatusServiceUnavailable:    metav1.StatusReasonServiceUnavailable,
}
