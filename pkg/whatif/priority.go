package whatif

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	schedulingapiv1 "k8s.io/kubernetes/pkg/apis/scheduling/v1"
)

// priorities resolves pods' priority as kube-apiserver's Priority
// admission plugin does on create (plugin/pkg/admission/priority): a
// named PriorityClass gives its value and preemption policy, and no name
// the cluster's global default class's, the one of lowest value if
// several claim it, or else 0 and PreemptLowerPriority. The system
// classes (system-cluster-critical, system-node-critical), which
// kube-apiserver creates at bootstrap, resolve even when the lookup does
// not list them. The classes are read once per review, when a pod first
// needs them.
type priorities struct {
	lookup Lookup
	loaded bool
	err    error
	byName map[string]*schedulingv1.PriorityClass
	// global is the global default class, nil when none.
	global *schedulingv1.PriorityClass
}

// load reads the classes.
func (p *priorities) load() error {
	if p.loaded {
		return p.err
	}
	p.loaded = true
	classes, err := p.lookup.PriorityClasses()
	if err != nil {
		p.err = fmt.Errorf("listing PriorityClasses: %w", err)
		return p.err
	}
	p.byName = map[string]*schedulingv1.PriorityClass{}
	for _, c := range schedulingapiv1.SystemPriorityClasses() {
		p.byName[c.Name] = c
	}
	for _, c := range classes {
		if c == nil {
			continue
		}
		p.byName[c.Name] = c
		if c.GlobalDefault && (p.global == nil || c.Value < p.global.Value) {
			p.global = c
		}
	}
	return nil
}

// admit sets pod's priority class name, priority and preemption policy
// as the plugin does, or refuses the pod as it does: a class that does not
// exist, or a priority or policy in the pod that is not the class's.
// specPath is where the pod's spec is in the review.
func (p *priorities) admit(pod *corev1.Pod, specPath *field.Path) field.ErrorList {
	namePath := specPath.Child("priorityClassName")
	if err := p.load(); err != nil {
		return field.ErrorList{field.InternalError(namePath, err)}
	}
	name, value, policy := "", int32(0), corev1.PreemptLowerPriority
	class := p.global
	if pod.Spec.PriorityClassName != "" {
		var ok bool
		if class, ok = p.byName[pod.Spec.PriorityClassName]; !ok {
			return field.ErrorList{{Type: field.ErrorTypeNotFound, Field: namePath.String(), BadValue: pod.Spec.PriorityClassName,
				Detail: fmt.Sprintf("no PriorityClass with name %s was found, so kube-apiserver would refuse the pod", pod.Spec.PriorityClassName)}}
		}
	}
	if class != nil {
		name, value = class.Name, class.Value
		// A stored class always has one: the API defaults it to this.
		if class.PreemptionPolicy != nil {
			policy = *class.PreemptionPolicy
		}
	}
	var errs field.ErrorList
	if pod.Spec.Priority != nil && *pod.Spec.Priority != value {
		errs = append(errs, field.Forbidden(specPath.Child("priority"), fmt.Sprintf(
			"the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name", *pod.Spec.Priority, value)))
	}
	if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy != policy {
		errs = append(errs, field.Forbidden(specPath.Child("preemptionPolicy"), fmt.Sprintf(
			"the string value of PreemptionPolicy (%s) must not be provided in pod spec; priority admission controller computed %s from the given PriorityClass name", *pod.Spec.PreemptionPolicy, policy)))
	}
	if len(errs) > 0 {
		return errs
	}
	pod.Spec.PriorityClassName = name
	pod.Spec.Priority = &value
	pod.Spec.PreemptionPolicy = &policy
	return nil
}
