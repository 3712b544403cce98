// Package podgroup holds the storage and strategies of the podgroups resource.
package podgroup

import (
	"context"
	"fmt"
	"slices"

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
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/apis/scheduling/validation"
	registryscheduling "github.com/muster-dev/muster/pkg/registry/scheduling"
)

// podGroupStrategy governs writes to the main podgroups resource.
type podGroupStrategy struct {
	registryscheduling.Strategy
	// podCleanup adds the pod-cleanup finalizer at creation.
	podCleanup bool
}

var (
	_ rest.RESTCreateStrategy  = podGroupStrategy{}
	_ rest.RESTUpdateStrategy  = podGroupStrategy{}
	_ rest.RESTDeleteStrategy  = podGroupStrategy{}
	_ rest.ResetFieldsStrategy = podGroupStrategy{}
	_ rest.RESTUpdateStrategy  = podGroupStatusStrategy{}
	_ rest.ResetFieldsStrategy = podGroupStatusStrategy{}
)

// NewStrategy returns the strategy for the main resource. podCleanup puts
// the pod-cleanup finalizer on every new PodGroup; it is for a server whose
// controller runs, since nothing else ever removes it.
func NewStrategy(typer runtime.ObjectTyper, podCleanup bool) podGroupStrategy {
	return podGroupStrategy{registryscheduling.NewStrategy(typer), podCleanup}
}

// PrepareForCreate clears status, starts the generation at 1 and adds the
// pod-cleanup finalizer, so that the controller always gets to release the
// group's pods before the group disappears.
func (s podGroupStrategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	pg := obj.(*scheduling.PodGroup)
	pg.Status = scheduling.PodGroupStatus{}
	pg.Generation = 1
	if s.podCleanup && !slices.Contains(pg.Finalizers, scheduling.PodCleanupFinalizer) {
		pg.Finalizers = append(pg.Finalizers, scheduling.PodCleanupFinalizer)
	}
	pg.Status.Phase = scheduling.DerivePhase(pg)
}

// PrepareForUpdate keeps the stored status and bumps the generation on spec changes only.
func (podGroupStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	pg, oldPG := obj.(*scheduling.PodGroup), old.(*scheduling.PodGroup)
	pg.Status = oldPG.Status
	if !apiequality.Semantic.DeepEqual(pg.Spec, oldPG.Spec) {
		pg.Generation = oldPG.Generation + 1
	}
	// Removing the last group gate moves the phase from Gated to Pending.
	pg.Status.Phase = scheduling.DerivePhase(pg)
}

func (podGroupStrategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidatePodGroup(obj.(*scheduling.PodGroup))
}

func (podGroupStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidatePodGroupUpdate(obj.(*scheduling.PodGroup), old.(*scheduling.PodGroup))
}

// podGroupStatusStrategy governs writes to podgroups/status.
type podGroupStatusStrategy struct {
	podGroupStrategy
}

// NewStatusStrategy returns the strategy for the status subresource.
func NewStatusStrategy(s podGroupStrategy) podGroupStatusStrategy {
	return podGroupStatusStrategy{s}
}

// GetResetFields says that status writes never set spec or the metadata
// that ResetObjectMetaForStatus restores.
func (podGroupStatusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registryscheduling.StatusResetFields()
}

// PrepareForUpdate keeps the stored spec and metadata, and derives the phase.
func (podGroupStatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	pg, oldPG := obj.(*scheduling.PodGroup), old.(*scheduling.PodGroup)
	pg.Spec = oldPG.Spec
	metav1.ResetObjectMetaForStatus(pg, oldPG)
	pg.Status.Phase = scheduling.DerivePhase(pg)
}

func (podGroupStatusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidatePodGroupStatusUpdate(obj.(*scheduling.PodGroup), old.(*scheduling.PodGroup))
}

// GetAttrs returns the labels and the selectable fields of a PodGroup.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	pg, ok := obj.(*scheduling.PodGroup)
	if !ok {
		return nil, nil, fmt.Errorf("not a PodGroup: %T", obj)
	}
	return labels.Set(pg.Labels), selectableFields(pg), nil
}

func selectableFields(pg *scheduling.PodGroup) fields.Set {
	workload := ""
	if pg.Spec.WorkloadRef != nil {
		workload = pg.Spec.WorkloadRef.WorkloadName
	}
	return generic.AddObjectMetaFieldsSet(fields.Set{
		v1alpha1.PodGroupWorkloadNameField: workload,
		v1alpha1.PodGroupPhaseField:        string(pg.Status.Phase),
	}, &pg.ObjectMeta, true)
}

// Matcher selects PodGroups by label and field.
func Matcher(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: GetAttrs}
}
