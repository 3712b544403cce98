package whatifreview

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// TestLimiter: each caller has a bucket of its own; past it, 429 with a
// Retry-After; the server's own identity (forwarding for callers already
// limited) is not limited; no caller is refused as unauthenticated; qps 0
// limits nothing.
func TestLimiter(t *testing.T) {
	as := func(name string) context.Context {
		return genericapirequest.WithUser(context.Background(), &user.DefaultInfo{Name: name})
	}
	tests := []struct {
		name    string
		qps     float64
		burst   int
		calls   []string
		refused []bool
	}{
		{name: "a burst, then refused", qps: 0.001, burst: 2,
			calls: []string{"alice", "alice", "alice"}, refused: []bool{false, false, true}},
		{name: "callers do not share a bucket", qps: 0.001, burst: 1,
			calls: []string{"alice", "bob", "alice", "bob"}, refused: []bool{false, false, true, true}},
		{name: "the server itself is not limited", qps: 0.001, burst: 1,
			calls: []string{"system:serviceaccount:muster-system:muster-apiserver", "system:serviceaccount:muster-system:muster-apiserver"}, refused: []bool{false, false}},
		{name: "qps 0 limits nothing", qps: 0, burst: 1,
			calls: []string{"alice", "alice", "alice"}, refused: []bool{false, false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewLimiter(tt.qps, tt.burst)
			l.Exempt = func() string { return "system:serviceaccount:muster-system:muster-apiserver" }
			for i, who := range tt.calls {
				err := l.Allow(as(who))
				if (err != nil) != tt.refused[i] {
					t.Fatalf("call %d by %s: %v, want refused %v", i, who, err, tt.refused[i])
				}
				if err == nil {
					continue
				}
				if !apierrors.IsTooManyRequests(err) {
					t.Errorf("call %d refused with %v, want 429", i, err)
				}
				if s, ok := apierrors.SuggestsClientDelay(err); !ok || s < 1 {
					t.Errorf("call %d: Retry-After %d, %v; want at least 1 s", i, s, ok)
				}
			}
		})
	}
	if err := NewLimiter(1, 1).Allow(context.Background()); !apierrors.IsUnauthorized(err) {
		t.Errorf("a caller with no user: %v, want 401", err)
	}
}
