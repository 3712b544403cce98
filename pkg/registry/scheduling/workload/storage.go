package workload

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/registry/statusrest"
)

// REST serves the workloads resource.
type REST struct {
	*genericregistry.Store
}

var (
	_ rest.ShortNamesProvider = &REST{}
	_ rest.CategoriesProvider = &REST{}
)

// ShortNames lets `kubectl get wl` work.
func (*REST) ShortNames() []string { return []string{"wl"} }

// Categories lets `kubectl get muster` list Workloads.
func (*REST) Categories() []string { return []string{"muster"} }

// NewStorage returns the storage of workloads and workloads/status.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (*REST, *statusrest.REST, error) {
	strategy := NewStrategy(scheme)
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &scheduling.Workload{} },
		NewListFunc:               func() runtime.Object { return &scheduling.WorkloadList{} },
		PredicateFunc:             Matcher,
		DefaultQualifiedResource:  scheduling.Resource("workloads"),
		SingularQualifiedResource: scheduling.Resource("workload"),

		CreateStrategy:      strategy,
		UpdateStrategy:      strategy,
		DeleteStrategy:      strategy,
		ResetFieldsStrategy: strategy,

		TableConvertor: tableConvertor{},
	}
	options := &generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: GetAttrs}
	if err := store.CompleteWithOptions(options); err != nil {
		return nil, nil, fmt.Errorf("completing workloads storage: %w", err)
	}
	return &REST{store}, statusrest.New(store, NewStatusStrategy(strategy)), nil
}
