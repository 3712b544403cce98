package podgroup

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
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

// StatusREST serves podgroups/status, which RBAC authorizes separately.
type StatusREST struct {
	store *genericregistry.Store
}

// NewStorage returns the storage of podgroups and podgroups/status.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (*REST, *StatusREST, error) {
	strategy := NewStrategy(scheme)
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

	statusStrategy := NewStatusStrategy(strategy)
	statusStore := *store
	statusStore.UpdateStrategy = statusStrategy
	statusStore.ResetFieldsStrategy = statusStrategy
	return &REST{store}, &StatusREST{store: &statusStore}, nil
}

// New returns an empty PodGroup.
func (r *StatusREST) New() runtime.Object { return &scheduling.PodGroup{} }

// Destroy does nothing: the main store owns the shared storage.
func (r *StatusREST) Destroy() {}

// Get reads the whole PodGroup, for the status subresource.
func (r *StatusREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, options)
}

// Update writes only the status of a PodGroup.
func (r *StatusREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	// Status writes never create the object.
	return r.store.Update(ctx, name, objInfo, createValidation, updateValidation, false, options)
}

// GetResetFields returns the fields a status write resets.
func (r *StatusREST) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.store.GetResetFields()
}

// ConvertToTable prints the same columns as the main resource.
func (r *StatusREST) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return r.store.ConvertToTable(ctx, object, tableOptions)
}
