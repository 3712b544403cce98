package whatif

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/muster-dev/muster/pkg/admission/workloadref"
	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/install"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	podgroupregistry "github.com/muster-dev/muster/pkg/registry/scheduling/podgroup"
)

// scheme holds Muster's types, internal and v1alpha1, with their defaults
// and conversions, as the API server's does.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	install.Install(s)
	return s
}()

// strategy is the PodGroup API's create strategy. Without the
// pod-cleanup finalizer: the finalizers are no part of the answer.
var strategy = podgroupregistry.NewStrategy(scheme, false)

// asStored returns a new PodGroup in the review's namespace as the
// PodGroup API would store it on create: defaulted, converted to the
// internal version, completed from its Workload template by the
// PodGroupWorkloadExists plugin, prepared and validated by the strategy,
// and converted back. The errors are the create's refusals, with the
// group's own field paths.
func (r *reviewer) asStored(pg *v1alpha1.PodGroup) (*v1alpha1.PodGroup, field.ErrorList) {
	pg = pg.DeepCopy()
	pg.Namespace = r.namespace
	scheme.Default(pg)
	internal := &scheduling.PodGroup{}
	if err := scheme.Convert(pg, internal, nil); err != nil {
		return nil, field.ErrorList{field.InternalError(field.NewPath("spec"), fmt.Errorf("converting the PodGroup: %w", err))}
	}
	if errs := r.applyTemplate(internal); len(errs) > 0 {
		return nil, errs
	}
	ctx := context.Background()
	strategy.PrepareForCreate(ctx, internal)
	if errs := strategy.Validate(ctx, internal); len(errs) > 0 {
		return nil, errs
	}
	out := &v1alpha1.PodGroup{}
	if err := scheme.Convert(internal, out, nil); err != nil {
		return nil, field.ErrorList{field.InternalError(field.NewPath("spec"), fmt.Errorf("converting the PodGroup: %w", err))}
	}
	return out, nil
}

// applyTemplate is the PodGroupWorkloadExists plugin's part of the
// create, on the Workload the review's lookup reads.
func (r *reviewer) applyTemplate(pg *scheduling.PodGroup) field.ErrorList {
	ref := pg.Spec.WorkloadRef
	if ref == nil || ref.WorkloadName == "" || ref.TemplateName == "" {
		return nil // validation reports the missing names.
	}
	refPath := field.NewPath("spec", "workloadRef")
	workloads, ok := r.lookup.(WorkloadLookup)
	if !ok {
		return field.ErrorList{field.Forbidden(refPath, fmt.Sprintf(
			"this server cannot read Workloads for a review, so it cannot see what template %q of Workload %q would give the group; give the group's policy in spec.podGroup instead",
			ref.TemplateName, ref.WorkloadName))}
	}
	w, err := workloads.Workload(r.namespace, ref.WorkloadName)
	if err != nil {
		return field.ErrorList{field.InternalError(refPath.Child("workloadName"), fmt.Errorf("reading Workload %s/%s: %w", r.namespace, ref.WorkloadName, err))}
	}
	invalid, err := workloadref.ApplyTemplate(pg, w, r.namespace)
	switch {
	case invalid != nil:
		return field.ErrorList{invalid}
	case err != nil:
		return field.ErrorList{field.InternalError(refPath, err)}
	}
	return nil
}
