package podgroup

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/registry/statusrest"
)

// REST serves the podgroups resource.
type REST struct {
	*genericregistry.Store
}

var (
	_ rest.ShortNamesProvider = &REST{}
	_ rest.CategoriesProvider = &REST{}
)

// ShortNames lets `kubectl get pg` work.
func (*REST) ShortNames() []string { return []string{"pg"} }

// Categories lets `kubectl get muster` list PodGroups.
func (*REST) Categories() []string { return []string{"muster"} }

// NewStorage returns the storage of podgroups and podgroups/status.
// podCleanup says whether new groups get the pod-cleanup finalizer: only
// when a controller runs to remove it (see NewStrategy).
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter, podCleanup bool) (*REST, *statusrest.REST, error) {
	strategy := NewStrategy(scheme, podCleanup)
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &scheduling.PodGroup{} },
		NewListFunc:               func() runtime.Object { return &scheduling.PodGroupList{} },
		PredicateFunc:             Matcher,
		DefaultQualifiedResource:  scheduling.Resource("podgroups"),
		SingularQualifiedResource: scheduling.Resource("podgroup"),

		CreateStrategy:      strategy,
		UpdateStrategy:      strategy,
		DeleteStrategy:      strategy,
		ResetFieldsStrategy: strategy,

		TableConvertor: tableConvertor{},
	}
	options := &generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: GetAttrs}
	if err := store.CompleteWithOptions(options); err != nil {
		return nil, nil, fmt.Errorf("completing podgroups storage: %w", err)
	}
	return &REST{store}, statusrest.New(store, NewStatusStrategy(strategy)), nil
}
