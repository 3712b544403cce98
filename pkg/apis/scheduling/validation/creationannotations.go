package validation

import (
	"fmt"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// SpecFromAnnotations reads the creation annotations of one pod into the
// spec of the PodGroup that the controller creates from it: a gang of
// min-count, a workloadRef, and the topology annotations' constraints.
// ok is false when the pod carries none of min-count, group-by, workload
// and template; group-by alone asks for a group that the pod's owner
// sizes, which the caller does. The error says which annotation is
// invalid. It lives here, beside TopologyFromAnnotations, so that the
// controller (pkg/controller/podgroup) and what-if reviews (pkg/whatif)
// read the annotations alike.
func SpecFromAnnotations(ann map[string]string) (spec v1alpha1.PodGroupSpec, ok bool, err error) {
	if v, has := ann[scheduling.MinCountAnnotation]; has {
		n, valid := scheduling.ParseMinCount(v)
		if !valid {
			return spec, false, fmt.Errorf("annotation %s=%q must be a positive 32-bit integer", scheduling.MinCountAnnotation, v)
		}
		spec.SchedulingPolicy.Gang = &v1alpha1.GangSchedulingPolicy{MinCount: n}
		ok = true
	}
	if _, has := ann[scheduling.GroupByAnnotation]; has {
		// Named after its instance: sized by its owner when no
		// annotation sizes it.
		ok = true
	}
	wl, tpl, set, missing := scheduling.WorkloadRefAnnotations(ann)
	if missing != "" {
		return spec, false, fmt.Errorf("annotations %s and %s must be set together", scheduling.WorkloadAnnotation, scheduling.TemplateAnnotation)
	}
	if set {
		// The server copies the template's policy when minCount is not
		// given, and its schedulingConstraints when no annotation gives them.
		spec.WorkloadRef = &v1alpha1.WorkloadReference{WorkloadName: wl, TemplateName: tpl}
		ok = true
	}
	if ok {
		constraints, err := ConstraintsFromAnnotations(ann)
		if err != nil {
			return spec, false, err
		}
		spec.SchedulingConstraints = constraints
	}
	return spec, ok, nil
}

// ConstraintsFromAnnotations reads the topology annotations of the pod a
// group is created from into its spec.schedulingConstraints, nil when the
// pod carries none, by the rules the webhook and muster-pod-labels apply
// (TopologyFromAnnotations). They never make a pod ask for a group by
// themselves: its policy comes from the other annotations.
func ConstraintsFromAnnotations(ann map[string]string) (*v1alpha1.PodGroupSchedulingConstraints, error) {
	c, err := TopologyFromAnnotations(ann)
	if err != nil || c == nil {
		return nil, err
	}
	out := &v1alpha1.PodGroupSchedulingConstraints{}
	if err := v1alpha1.Convert_scheduling_PodGroupSchedulingConstraints_To_v1alpha1_PodGroupSchedulingConstraints(c, out, nil); err != nil {
		return nil, fmt.Errorf("converting the topology annotations' constraints: %w", err)
	}
	return out, nil
}
