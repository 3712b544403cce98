package whatif

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/controller/admission"
)

// MaxPods is the most pods one review may make. Admission never places
// more pods of a gang at once than a group's status can record
// (scheduling.MaxPlacements, which bounds gang.minCount too), so a larger
// workload asks a question no gang can be answered on, and would cost the
// server one pod object each to find out.
const MaxPods = scheduling.MaxPlacements

// MaxPodBytes bounds the pods one review makes, as JSON together: a Job or
// JobSet makes many pods from one template, and each is a copy, so a body
// that the API server accepts could otherwise become gigabytes (MaxPods
// copies of a template of a megabyte). 64 MiB holds MaxPods pods of a
// 13 KiB template, several times what real workloads carry.
const MaxPodBytes = 64 << 20

// Lookup reads what the translation needs from the cluster.
type Lookup interface {
	// PodGroup returns the stored group namespace/name, or nil, nil when there is none.
	PodGroup(namespace, name string) (*v1alpha1.PodGroup, error)
	// PriorityClasses returns the cluster's PriorityClasses (scheduling.k8s.io/v1).
	PriorityClasses() ([]*schedulingv1.PriorityClass, error)
}

// WorkloadLookup is a Lookup that can also read Workloads. A group whose
// spec.workloadRef names a Workload template takes its policy, roles,
// priority and constraints from the template when it is created (the
// PodGroupWorkloadExists plugin); a review needs the Workload to see
// that, and refuses such a group when its Lookup cannot read one.
type WorkloadLookup interface {
	Lookup
	// Workload returns the stored Workload namespace/name, or nil, nil
	// when there is none.
	Workload(namespace, name string) (*v1alpha1.Workload, error)
}

// Gang is what admission would see.
type Gang struct {
	// PodGroup is the group: namespace and name set, spec as it would be
	// stored (defaulted, its Workload template applied). When the pods
	// would join a stored group it is a new object of that group's name,
	// labels, annotations and spec, without its status.
	PodGroup *v1alpha1.PodGroup
	// Pods are in the workload's order, as kube-apiserver would admit
	// them: defaulted, priority resolved, through Muster's webhooks. A pod
	// whose name would be generated carries its Names entry as its name.
	Pods []*corev1.Pod
	// Names are the name of each pod as its controller would name it, or
	// "<prefix><index>" when generated: "<job>-<index>" for a Job's pods,
	// "<generateName><index>" for a Pod of a List that has only a
	// generateName, "<group>-<role>-<index>" for a pod made from a role's
	// template.
	Names []string
	// Need is how many of Pods must be placed at once: the group's
	// gang.minCount, or 1 for a basic group, as the controller asks of
	// admission (admission.MinCount). It may exceed len(Pods): the gang
	// then waits for pods that the workload does not make.
	Need int32
	// SizedBy is what sized the group when the controller would size it
	// from the object (a pod grouped by instance, without min-count), as
	// the group's sized-by annotation would say ("Job train"); "" otherwise.
	SizedBy string
	// Warnings are the mutating webhook's warnings for the pods, each
	// once: a pod bound at creation is not held by the gate.
	Warnings []string
}

// FromReview returns the gang that a WhatIfReview's spec would form in
// namespace, the review's: spec.object's pods as kube-apiserver would
// admit them, the group they would form, and how many must be placed at
// once. Each refusal is a field.Error whose path starts at spec
// (spec.object.spec.template.metadata.labels[...], spec.object.items[2],
// spec.podGroup.spec...), with the rule it breaks; a failure to read the
// cluster through lookup is a field.ErrorTypeInternal error, to be
// answered as the server's fault. It never changes spec.
//
// When spec.object is empty (no JSON, no object), spec.podGroup is a
// PodGroup with pod templates: the gang's pods are made from its roles'
// templates, count pods of each role that is not createdLater, and go
// through kube-apiserver's admission as the others do (roles.go). Every
// such role must have a template, and the group must have roles.
//
// A Job or JobSet that has only a generateName is given a stand-in name:
// its generateName followed by "00000", five characters in place of the
// random ones kube-apiserver would append (it never generates a 0), so
// that its pods and its instance's group can be named.
func FromReview(namespace string, spec *v1alpha1.WhatIfReviewSpec, lookup Lookup) (*Gang, field.ErrorList) {
	specPath := field.NewPath("spec")
	switch {
	case spec == nil:
		return nil, field.ErrorList{field.Required(specPath, "must name the workload to ask about")}
	case namespace == "":
		return nil, field.ErrorList{field.Required(field.NewPath("metadata", "namespace"), "a review is asked in the namespace its workload would be submitted to")}
	case lookup == nil:
		return nil, field.ErrorList{field.InternalError(specPath, fmt.Errorf("no lookup of the cluster"))}
	}
	r := &reviewer{namespace: namespace, lookup: lookup, priorities: priorities{lookup: lookup}}
	if objectEmpty(&spec.Object) {
		return r.fromRoles(spec.PodGroup) // roles.go
	}
	w, errs := decodeObject(namespace, &spec.Object, specPath.Child("object")) // object.go
	if len(errs) > 0 {
		return nil, errs
	}
	pods, warnings, errs := r.admitPods(w) // admit.go
	if len(errs) > 0 {
		return nil, errs
	}
	name, errs := groupOf(w, pods) // admit.go
	if len(errs) > 0 {
		return nil, errs
	}
	pg, sizedBy, errs := r.group(name, spec.PodGroup, w, pods) // group.go
	if len(errs) > 0 {
		return nil, errs
	}
	names := make([]string, len(w.pods))
	for i, m := range w.pods {
		names[i] = m.name
	}
	return &Gang{PodGroup: pg, Pods: pods, Names: names, Need: admission.MinCount(pg), SizedBy: sizedBy, Warnings: warnings}, nil
}

// reviewer answers one review.
type reviewer struct {
	namespace  string
	lookup     Lookup
	priorities priorities
}
