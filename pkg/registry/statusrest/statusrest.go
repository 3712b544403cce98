// Package statusrest serves the status subresource of a resource stored by
// a generic registry Store: reads return the whole object, writes go through
// the status strategy, so RBAC can authorize <resource>/status on its own.
package statusrest

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// REST is the storage of a status subresource.
type REST struct {
	store *genericregistry.Store
}

var (
	_ rest.Patcher             = &REST{}
	_ rest.ResetFieldsStrategy = &REST{}
	_ rest.TableConvertor      = &REST{}
)

// New returns status storage over a copy of the main store whose update
// strategy is the status strategy.
func New(main *genericregistry.Store, strategy interface {
	rest.RESTUpdateStrategy
	rest.ResetFieldsStrategy
}) *REST {
	store := *main
	store.UpdateStrategy = strategy
	store.ResetFieldsStrategy = strategy
	return &REST{store: &store}
}

// New returns an empty object of the resource.
func (r *REST) New() runtime.Object { return r.store.New() }

// Destroy does nothing: the main store owns the shared storage.
func (r *REST) Destroy() {}

// Get reads the whole object.
func (r *REST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, options)
}

// Update writes only the status. Status writes never create the object.
func (r *REST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return r.store.Update(ctx, name, objInfo, createValidation, updateValidation, false, options)
}

// GetResetFields returns the fields a status write resets.
func (r *REST) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.store.GetResetFields()
}

// ConvertToTable prints the same columns as the main resource.
func (r *REST) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return r.store.ConvertToTable(ctx, object, tableOptions)
}
