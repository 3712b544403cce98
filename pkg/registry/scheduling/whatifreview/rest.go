// Package whatifreview serves WhatIfReview: create-only, never stored,
// like SubjectAccessReview. A create answers what admission would decide
// for the workload in its spec (pkg/visibility).
package whatifreview

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// Answerer answers a review's spec for a namespace and the caller in ctx.
type Answerer interface {
	Review(ctx context.Context, namespace string, spec *v1alpha1.WhatIfReviewSpec) (*v1alpha1.WhatIfReviewStatus, error)
}

// REST is the storage of whatifreviews: Create only.
type REST struct {
	scheme  *runtime.Scheme
	answer  Answerer
	limiter *Limiter
}

// NewREST returns the storage; scheme converts between the internal and
// v1alpha1 types.
func NewREST(scheme *runtime.Scheme, answer Answerer, limiter *Limiter) *REST {
	return &REST{scheme: scheme, answer: answer, limiter: limiter}
}

var (
	_ rest.Creater              = &REST{}
	_ rest.Scoper               = &REST{}
	_ rest.SingularNameProvider = &REST{}
)

func (r *REST) New() runtime.Object     { return &scheduling.WhatIfReview{} }
func (r *REST) Destroy()                {}
func (r *REST) NamespaceScoped() bool   { return true }
func (r *REST) GetSingularName() string { return "whatifreview" }

// Create answers the review. Its namespace is the request's; a review that
// names another is refused, as a LocalSubjectAccessReview is.
func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	review, ok := obj.(*scheduling.WhatIfReview)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a WhatIfReview: %T", obj))
	}
	namespace, _ := genericapirequest.NamespaceFrom(ctx)
	if review.Namespace != "" && review.Namespace != namespace {
		return nil, apierrors.NewInvalid(scheduling.Kind("WhatIfReview"), review.Name, field.ErrorList{
			field.Invalid(field.NewPath("metadata", "namespace"), review.Namespace, "must be the namespace of the request, "+namespace),
		})
	}
	if err := r.limiter.Allow(ctx); err != nil {
		return nil, err
	}
	if createValidation != nil {
		if err := createValidation(ctx, obj); err != nil {
			return nil, err
		}
	}
	var spec v1alpha1.WhatIfReviewSpec
	if err := r.scheme.Convert(&review.Spec, &spec, nil); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("reading spec: %v", err))
	}
	st, err := r.answer.Review(ctx, namespace, &spec)
	if err != nil {
		return nil, err
	}
	out := review.DeepCopy()
	out.Namespace = namespace
	if err := r.scheme.Convert(st, &out.Status, nil); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return out, nil
}
