package visibility

import (
	"context"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/klog/v2"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// redact blanks, in a what-if's answer, the names of the victims in
// namespaces other than the review's where the caller may not get pods: a
// tenant learns that its gang would preempt a gang of some priority and
// size, not whose. The authorizer is the cluster's (a SubjectAccessReview
// per namespace, cached as the delegated authorizer caches). The queue's
// names are already only the review namespace's (positionOf).
func (s *Service) redact(ctx context.Context, namespace string, st *v1alpha1.WhatIfReviewStatus) {
	caller, _ := genericapirequest.UserFrom(ctx)
	seen := map[string]bool{namespace: true}
	for i := range st.Preemptions {
		p := &st.Preemptions[i]
		if p.Namespace == "" {
			continue
		}
		may, asked := seen[p.Namespace]
		if !asked {
			may = s.mayGetPods(ctx, caller, p.Namespace)
			seen[p.Namespace] = may
		}
		if !may {
			p.Namespace, p.PodGroup = "", ""
		}
	}
}

// mayGetPods reports whether user may get pods in namespace. No user, no
// authorizer, or an error: no.
func (s *Service) mayGetPods(ctx context.Context, who user.Info, namespace string) bool {
	if who == nil || s.authz == nil {
		return false
	}
	d, _, err := s.authz.Authorize(ctx, authorizer.AttributesRecord{
		User: who, Verb: "get", Namespace: namespace, Resource: "pods", ResourceRequest: true,
	})
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Cannot tell whether the caller may read a victim's pods; its name is left out", "namespace", namespace, "err", err)
	}
	return d == authorizer.DecisionAllow
}
