package visibility

import (
	"context"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/utils/clock"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/controller/capacityadmission"
	"github.com/muster-dev/muster/pkg/whatif"
)

// Engine is the leader's admission, as far as a what-if and the queue view
// read it.
type Engine interface {
	WhatIf(pg *v1alpha1.PodGroup, pods []*corev1.Pod, need int32, now time.Time) capacityadmission.WhatIf
	Queue() []capacityadmission.Queued
}

// Leader is what the replica that leads offers while its controller runs.
type Leader struct {
	// Engine is nil when admission is not capacity-aware (--admission=count):
	// it has no queue and places nothing.
	Engine Engine
	// Lookup reads the groups and priority classes a review's workload
	// meets.
	Lookup whatif.Lookup
	// Synced reports whether the controller has seen the whole cluster.
	Synced func() bool
}

// Peers reaches the replica that leads.
type Peers interface {
	// Leader returns a client of the leader's API, or an error that says
	// why it cannot be reached (no leader, this replica is the leader but
	// its controller is not running, no trust configured).
	Leader() (Client, error)
}

// Client is the leader's API, as a forwarded request uses it.
type Client interface {
	Review(ctx context.Context, namespace string, spec *v1alpha1.WhatIfReviewSpec) (*v1alpha1.WhatIfReviewStatus, error)
	Queue(ctx context.Context, namespace string) ([]v1alpha1.PendingPodGroup, error)
}

// Service answers WhatIfReviews and reads the queue, from the controller
// this replica runs while it leads, else through the leader.
type Service struct {
	local atomic.Pointer[Leader]
	peers Peers
	authz authorizer.Authorizer
	clock clock.PassiveClock
}

// NewService returns a Service that forwards through peers (nil: never;
// a replica that does not lead then answers 503) and redacts with authz.
func NewService(peers Peers, authz authorizer.Authorizer) *Service {
	return &Service{peers: peers, authz: authz, clock: clock.RealClock{}}
}

// Lead makes l the answer to every request until the returned function is
// called, when the controller that l reads stops.
func (s *Service) Lead(l *Leader) (stop func()) {
	s.local.Store(l)
	return func() { s.local.CompareAndSwap(l, nil) }
}

// Review answers a what-if for namespace, for the caller in ctx.
func (s *Service) Review(ctx context.Context, namespace string, spec *v1alpha1.WhatIfReviewSpec) (*v1alpha1.WhatIfReviewStatus, error) {
	var st *v1alpha1.WhatIfReviewStatus
	start := s.clock.Now()
	if l := s.local.Load(); l != nil {
		var err error
		if st, err = s.answer(l, namespace, spec); err != nil {
			return nil, err
		}
		observeReview("here", start)
	} else {
		c, err := s.leader(ctx)
		if err != nil {
			return nil, err
		}
		if st, err = c.Review(ctx, namespace, spec); err != nil {
			return nil, err
		}
		observeReview("forwarded", start)
	}
	s.redact(ctx, namespace, st)
	return st, nil
}

// Queue lists the gangs that wait in namespace ("": all), in admission
// order.
func (s *Service) Queue(ctx context.Context, namespace string) ([]v1alpha1.PendingPodGroup, error) {
	if l := s.local.Load(); l != nil {
		if err := ready(l); err != nil {
			return nil, err
		}
		return pending(l.Engine.Queue(), namespace), nil
	}
	c, err := s.leader(ctx)
	if err != nil {
		return nil, err
	}
	return c.Queue(ctx, namespace)
}

// answer runs the what-if on the leader's own admission.
func (s *Service) answer(l *Leader, namespace string, spec *v1alpha1.WhatIfReviewSpec) (*v1alpha1.WhatIfReviewStatus, error) {
	if err := ready(l); err != nil {
		return nil, err
	}
	gang, errs := whatif.FromReview(namespace, spec, l.Lookup)
	if len(errs) > 0 {
		return nil, invalid(errs)
	}
	return statusOf(gang, l.Engine.WhatIf(gang.PodGroup, gang.Pods, gang.Need, s.clock.Now())), nil
}

// leader is the client of the leader for a request this replica cannot
// answer itself. A request that was forwarded already is not forwarded
// again: two replicas that each take the other for the leader would
// otherwise pass it back and forth.
func (s *Service) leader(ctx context.Context) (Client, error) {
	if forwarded(ctx) {
		return nil, unavailable("this replica received the request from another that took it for the leader, but does not lead (the leader changed): retry")
	}
	if s.peers == nil {
		return nil, unavailable("this replica does not lead, and forwards to no leader")
	}
	c, err := s.peers.Leader()
	if err != nil {
		return nil, unavailable(err.Error())
	}
	return c, nil
}

// ready says why the leader cannot answer yet, or nil.
func ready(l *Leader) error {
	if l.Engine == nil {
		return apierrors.NewMethodNotSupported(v1alpha1.Resource("whatifreviews"),
			"create: admission is not capacity-aware (--admission=count): it has no queue and places no pod")
	}
	if l.Synced != nil && !l.Synced() {
		return unavailable("the controller has not seen the whole cluster yet: retry")
	}
	return nil
}

func unavailable(msg string) error {
	// Retry-After, as kube-apiserver says when it cannot serve yet.
	err := apierrors.NewServiceUnavailable(msg)
	err.ErrStatus.Details = &metav1.StatusDetails{RetryAfterSeconds: 1}
	return err
}

// invalid is the 422 a create of a WhatIfReview with errs answers.
func invalid(errs field.ErrorList) error {
	return apierrors.NewInvalid(v1alpha1.SchemeGroupVersion.WithKind("WhatIfReview").GroupKind(), "", errs)
}
