// Package workloadref is the PodGroupWorkloadExists admission plugin: a
// PodGroup that names a Workload template gets its policy, priority and
// schedulingConstraints from that template, and a PodGroup that names a
// Workload or template that does not exist is rejected.
package workloadref

import (
	"context"
	"fmt"
	"io"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/generated/clientset/versioned"
)

// PluginName is the name of the plugin in --enable-admission-plugins.
const PluginName = "PodGroupWorkloadExists"

// WorkloadGetter reads one Workload. The server passes its loopback
// clientset, so a Workload created a moment ago is always seen.
type WorkloadGetter interface {
	GetWorkload(ctx context.Context, namespace, name string) (*v1alpha1.Workload, error)
}

// WantsWorkloadGetter is implemented by plugins that need a WorkloadGetter.
type WantsWorkloadGetter interface {
	SetWorkloadGetter(WorkloadGetter)
	admission.InitializationValidator
}

// Register adds the plugin to a plugin registry.
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(io.Reader) (admission.Interface, error) {
		return New(), nil
	})
}

// Plugin defaults and checks the workloadRef of PodGroups on create.
type Plugin struct {
	*admission.Handler
	workloads WorkloadGetter
}

var (
	_ admission.MutationInterface = &Plugin{}
	_ WantsWorkloadGetter         = &Plugin{}
)

// New returns a plugin that handles PodGroup creation.
func New() *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Create)}
}

// SetWorkloadGetter injects the Workload reader.
func (p *Plugin) SetWorkloadGetter(g WorkloadGetter) { p.workloads = g }

// ValidateInitialization fails when no WorkloadGetter was injected.
func (p *Plugin) ValidateInitialization() error {
	if p.workloads == nil {
		return fmt.Errorf("%s needs a Workload getter", PluginName)
	}
	return nil
}

// Admit copies the template's policy (and its roles, whole), priority and
// schedulingConstraints into a PodGroup that left them empty, and rejects
// a reference to a missing Workload or template. It runs before
// validation, so what it copies is validated like any other input.
func (p *Plugin) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != scheduling.Resource("podgroups") || a.GetSubresource() != "" {
		return nil
	}
	pg, ok := a.GetObject().(*scheduling.PodGroup)
	if !ok || pg.Spec.WorkloadRef == nil {
		return nil
	}
	ref := pg.Spec.WorkloadRef
	if ref.WorkloadName == "" || ref.TemplateName == "" {
		return nil // validation reports the missing names.
	}

	w, err := p.workloads.GetWorkload(ctx, a.GetNamespace(), ref.WorkloadName)
	if apierrors.IsNotFound(err) {
		w, err = nil, nil
	}
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("looking up Workload %s/%s: %w", a.GetNamespace(), ref.WorkloadName, err))
	}
	invalid, err := ApplyTemplate(pg, w, a.GetNamespace())
	if invalid != nil {
		return apierrors.NewInvalid(scheduling.Kind("PodGroup"), pg.Name, field.ErrorList{invalid})
	}
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	return nil
}

// ApplyTemplate is what Admit does to a new PodGroup in namespace once it
// has read w, the Workload its workloadRef names (nil when there is none):
// it copies the template's policy, roles, priority and constraints where
// pg left them empty. invalid names the field of spec.workloadRef that
// names nothing; err is a template that cannot be copied. A pg without a
// complete workloadRef is left alone, for validation to report. What-if
// reviews (pkg/whatif) call it to see a group as it would be stored.
func ApplyTemplate(pg *scheduling.PodGroup, w *v1alpha1.Workload, namespace string) (invalid *field.Error, err error) {
	ref := pg.Spec.WorkloadRef
	if ref == nil || ref.WorkloadName == "" || ref.TemplateName == "" {
		return nil, nil
	}
	refPath := field.NewPath("spec", "workloadRef")
	if w == nil {
		return field.Invalid(refPath.Child("workloadName"), ref.WorkloadName,
			fmt.Sprintf("no Workload named %q exists in namespace %q", ref.WorkloadName, namespace)), nil
	}
	tpl := findTemplate(w, ref.TemplateName)
	if tpl == nil {
		return field.Invalid(refPath.Child("templateName"), ref.TemplateName,
			fmt.Sprintf("Workload %q has no podGroupTemplate named %q", ref.WorkloadName, ref.TemplateName)), nil
	}

	policy := &pg.Spec.SchedulingPolicy
	if policy.Basic == nil && policy.Gang == nil {
		if tpl.SchedulingPolicy.Basic != nil {
			policy.Basic = &scheduling.BasicSchedulingPolicy{}
		}
		if g := tpl.SchedulingPolicy.Gang; g != nil {
			policy.Gang = &scheduling.GangSchedulingPolicy{MinCount: g.MinCount}
		}
		// The roles come with the policy they must agree with, and only then.
		if len(pg.Spec.Roles) == 0 && len(tpl.Roles) > 0 {
			pg.Spec.Roles = make([]scheduling.PodGroupRole, len(tpl.Roles))
			for i := range tpl.Roles {
				if err := v1alpha1.Convert_v1alpha1_PodGroupRole_To_scheduling_PodGroupRole(&tpl.Roles[i], &pg.Spec.Roles[i], nil); err != nil {
					return nil, fmt.Errorf("copying role %q of Workload %s/%s: %w", tpl.Roles[i].Name, namespace, ref.WorkloadName, err)
				}
			}
		}
	}
	if pg.Spec.Priority == nil && tpl.Priority != nil {
		prio := *tpl.Priority
		pg.Spec.Priority = &prio
	}
	// Constraints with nothing set are none: the template's fill them.
	if !scheduling.HasSchedulingConstraints(pg.Spec.SchedulingConstraints) && tpl.SchedulingConstraints != nil {
		c := &scheduling.PodGroupSchedulingConstraints{}
		if err := v1alpha1.Convert_v1alpha1_PodGroupSchedulingConstraints_To_scheduling_PodGroupSchedulingConstraints(tpl.SchedulingConstraints, c, nil); err != nil {
			return nil, fmt.Errorf("copying the schedulingConstraints of Workload %s/%s: %w", namespace, ref.WorkloadName, err)
		}
		pg.Spec.SchedulingConstraints = c
	}
	return nil, nil
}

func findTemplate(w *v1alpha1.Workload, name string) *v1alpha1.PodGroupTemplate {
	for i := range w.Spec.PodGroupTemplates {
		if w.Spec.PodGroupTemplates[i].Name == name {
			return &w.Spec.PodGroupTemplates[i]
		}
	}
	return nil
}

// NewClientGetter reads Workloads through a clientset.
func NewClientGetter(c versioned.Interface) WorkloadGetter {
	return clientGetter{c}
}

type clientGetter struct{ c versioned.Interface }

func (g clientGetter) GetWorkload(ctx context.Context, namespace, name string) (*v1alpha1.Workload, error) {
	return g.c.SchedulingV1alpha1().Workloads(namespace).Get(ctx, name, metav1.GetOptions{})
}
