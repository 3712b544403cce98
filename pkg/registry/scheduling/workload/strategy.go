// Package workload holds the storage and strategies of the workloads resource.
package workload

import (
	"context"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/validation"
	registryscheduling "github.com/muster-dev/muster/pkg/registry/scheduling"
)

// workloadStrategy governs writes to the main workloads resource.
type workloadStrategy struct {
	registryscheduling.Strategy
}

var (
	_ rest.RESTCreateStrategy  = workloadStrategy{}
	_ rest.RESTUpdateStrategy  = workloadStrategy{}
	_ rest.RESTDeleteStrategy  = workloadStrategy{}
	_ rest.ResetFieldsStrategy = workloadStrategy{}
	_ rest.RESTUpdateStrategy  = workloadStatusStrategy{}
	_ rest.ResetFieldsStrategy = workloadStatusStrategy{}
)

// NewStrategy returns the strategy for the main resource.
func NewStrategy(typer runtime.ObjectTyper) workloadStrategy {
	return workloadStrategy{registryscheduling.NewStrategy(typer)}
}

// PrepareForCreate clears status and starts the generation at 1.
func (workloadStrategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	w := obj.(*scheduling.Workload)
	w.Status = scheduling.WorkloadStatus{}
	w.Generation = 1
}

// PrepareForUpdate keeps the stored status and bumps the generation on spec changes only.
func (workloadStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	w, oldW := obj.(*scheduling.Workload), old.(*scheduling.Workload)
	w.Status = oldW.Status
	if !apiequality.Semantic.DeepEqual(w.Spec, oldW.Spec) {
		w.Generation = oldW.Generation + 1
	}
}

func (workloadStrategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateWorkload(obj.(*scheduling.Workload))
}

func (workloadStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateWorkloadUpdate(obj.(*scheduling.Workload), old.(*scheduling.Workload))
}

// workloadStatusStrategy governs writes to workloads/status.
type workloadStatusStrategy struct {
	workloadStrategy
}

// NewStatusStrategy returns the strategy for the status subresource.
func NewStatusStrategy(s workloadStrategy) workloadStatusStrategy {
	return workloadStatusStrategy{s}
}

// GetResetFields says that status writes never set spec or the metadata
// that ResetObjectMetaForStatus restores.
func (workloadStatusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registryscheduling.StatusResetFields()
}

// PrepareForUpdate keeps the stored spec and metadata.
func (workloadStatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	w, oldW := obj.(*scheduling.Workload), old.(*scheduling.Workload)
	w.Spec = oldW.Spec
	metav1.ResetObjectMetaForStatus(w, oldW)
}

func (workloadStatusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateWorkloadStatusUpdate(obj.(*scheduling.Workload), old.(*scheduling.Workload))
}

// GetAttrs returns the labels and the selectable fields of a Workload.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	w, ok := obj.(*scheduling.Workload)
	if !ok {
		return nil, nil, fmt.Errorf("not a Workload: %T", obj)
	}
	return labels.Set(w.Labels), generic.ObjectMetaFieldsSet(&w.ObjectMeta, true), nil
}

// Matcher selects Workloads by label and field.
func Matcher(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: GetAttrs}
}
