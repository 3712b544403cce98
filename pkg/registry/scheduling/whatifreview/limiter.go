package whatifreview

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// Limiter bounds the reviews each caller may ask for: a what-if runs an
// admission cycle, milliseconds of the leader's CPU, so one caller must
// not be able to take the leader's time from admission itself. The bucket
// is per user name, refilled at QPS up to Burst; a caller past it gets 429
// with Retry-After, as kube-apiserver's own limits answer.
//
// Exempt names the one caller not limited: this server's own identity,
// which forwards to the leader the reviews its callers asked it for, each
// already limited by the replica that received it.
type Limiter struct {
	qps   rate.Limit
	burst int
	// Exempt returns the server's own user name, "" while unknown.
	Exempt func() string

	mu    sync.Mutex
	users map[string]*userBucket
	swept time.Time
}

type userBucket struct {
	lim  *rate.Limiter
	used time.Time
}

// NewLimiter returns a Limiter of qps reviews a second per caller, burst at
// once. qps 0 limits nothing.
func NewLimiter(qps float64, burst int) *Limiter {
	return &Limiter{qps: rate.Limit(qps), burst: burst, users: map[string]*userBucket{}}
}

// idleBucket is how long a caller's bucket stays after its last review:
// by then it is full again, and forgetting it changes nothing.
const idleBucket = time.Minute

// Allow takes one review from the caller's bucket, or says when to retry.
func (l *Limiter) Allow(ctx context.Context) error {
	if l == nil || l.qps <= 0 {
		return nil
	}
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return apierrors.NewUnauthorized("a what-if needs an authenticated caller")
	}
	name := u.GetName()
	if l.Exempt != nil && name != "" && name == l.Exempt() {
		return nil
	}
	now := time.Now()
	l.mu.Lock()
	if now.Sub(l.swept) > idleBucket {
		for n, b := range l.users {
			if now.Sub(b.used) > idleBucket {
				delete(l.users, n)
			}
		}
		l.swept = now
	}
	b, ok := l.users[name]
	if !ok {
		b = &userBucket{lim: rate.NewLimiter(l.qps, l.burst)}
		l.users[name] = b
	}
	b.used = now
	r := b.lim.ReserveN(now, 1)
	delay := r.DelayFrom(now)
	if delay > 0 {
		r.CancelAt(now)
	}
	l.mu.Unlock()
	if delay > 0 {
		secs := int(delay/time.Second) + 1
		return apierrors.NewTooManyRequests("too many what-if reviews from "+name+": at most a few a second per caller", secs)
	}
	return nil
}
