// Package pendingpodgroup serves PendingPodGroup: the admission queue,
// read-only and never stored, one object per waiting gang, listed in
// admission order (pkg/visibility).
package pendingpodgroup

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// Reader reads the queue of namespace ("": all) in admission order.
type Reader interface {
	Queue(ctx context.Context, namespace string) ([]v1alpha1.PendingPodGroup, error)
}

// REST is the storage of pendingpodgroups: get and list.
type REST struct {
	scheme *runtime.Scheme
	queue  Reader
	tableConvertor
}

// NewREST returns the storage; scheme converts from v1alpha1.
func NewREST(scheme *runtime.Scheme, queue Reader) *REST {
	return &REST{scheme: scheme, queue: queue}
}

var (
	_ rest.Getter               = &REST{}
	_ rest.Lister               = &REST{}
	_ rest.Scoper               = &REST{}
	_ rest.SingularNameProvider = &REST{}
)

func (r *REST) New() runtime.Object     { return &scheduling.PendingPodGroup{} }
func (r *REST) NewList() runtime.Object { return &scheduling.PendingPodGroupList{} }
func (r *REST) Destroy()                {}
func (r *REST) NamespaceScoped() bool   { return true }
func (r *REST) GetSingularName() string { return "pendingpodgroup" }

// List lists the queue of the request's namespace, or of all. Label and
// field selectors select on metadata, as for any list; there is no paging
// (the queue is read whole, under one lock) and no watch.
func (r *REST) List(ctx context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	namespace, _ := genericapirequest.NamespaceFrom(ctx)
	items, err := r.queue.Queue(ctx, namespace)
	if err != nil {
		return nil, err
	}
	out := &scheduling.PendingPodGroupList{}
	for i := range items {
		if !matches(&items[i], opts) {
			continue
		}
		var it scheduling.PendingPodGroup
		if err := r.scheme.Convert(&items[i], &it, nil); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		out.Items = append(out.Items, it)
	}
	return out, nil
}

// Get returns one gang of the queue; a gang that does not wait is not
// found.
func (r *REST) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	namespace, _ := genericapirequest.NamespaceFrom(ctx)
	items, err := r.queue.Queue(ctx, namespace)
	if err != nil {
		return nil, err
	}
	for i := range items {
		if items[i].Name == name {
			var it scheduling.PendingPodGroup
			if err := r.scheme.Convert(&items[i], &it, nil); err != nil {
				return nil, apierrors.NewInternalError(err)
			}
			return &it, nil
		}
	}
	return nil, apierrors.NewNotFound(v1alpha1.Resource("pendingpodgroups"), name)
}

// matches applies a list's selectors: labels (a pending gang has none of
// its own) and the fields metadata.name and metadata.namespace.
func matches(p *v1alpha1.PendingPodGroup, opts *metainternalversion.ListOptions) bool {
	if opts == nil {
		return true
	}
	if opts.LabelSelector != nil && !opts.LabelSelector.Empty() && !opts.LabelSelector.Matches(labels.Set(p.Labels)) {
		return false
	}
	if opts.FieldSelector != nil && !opts.FieldSelector.Empty() {
		return opts.FieldSelector.Matches(fields.Set{"metadata.name": p.Name, "metadata.namespace": p.Namespace})
	}
	return true
}
