package visibility

import (
	"context"
	"net/http"
)

// ForwardedHeader marks a request one replica forwarded to the leader. Any
// client may set it; all it does is stop a replica that does not lead from
// forwarding the request again.
const ForwardedHeader = "X-Muster-Forwarded"

type forwardedKey struct{}

// WithForwarded records in each request's context whether it carries
// ForwardedHeader, for the storage that answers it.
func WithForwarded(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(ForwardedHeader) != "" {
			r = r.WithContext(context.WithValue(r.Context(), forwardedKey{}, true))
		}
		h.ServeHTTP(w, r)
	})
}

func forwarded(ctx context.Context) bool {
	v, _ := ctx.Value(forwardedKey{}).(bool)
	return v
}
