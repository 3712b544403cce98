package whatif

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/controller/admission"
)

// A PodGroup with pod templates: a review may give spec.podGroup alone,
// without spec.object, when the group's roles say what their pods are.
// No controller makes such pods, so there is nothing to model but the
// templates themselves: each pod is what capacity-aware admission already
// takes a role's pod to be before it exists (admission.TemplatePod), then
// goes through kube-apiserver's admission as any other pod (admit.go).

// objectEmpty says that spec.object is left out: no JSON and no object.
func objectEmpty(obj *runtime.RawExtension) bool {
	return len(obj.Raw) == 0 && obj.Object == nil
}

// noObject refuses a review that gives no object and no group whose
// roles could stand for it.
func noObject() *field.Error {
	return field.Required(field.NewPath("spec", "object"),
		"required unless spec.podGroup has roles with templates: it is the workload as it would be submitted, "+joinKinds())
}

// fromRoles is the gang of a review that gives spec.podGroup alone: the
// group as the PodGroup API would create it (givenGroup), and the pods
// of its roles made from their templates (rolePods), admitted as
// kube-apiserver would admit them.
func (r *reviewer) fromRoles(given *v1alpha1.PodGroup) (*Gang, field.ErrorList) {
	if given == nil || len(given.Spec.Roles) == 0 && given.Spec.WorkloadRef == nil {
		return nil, field.ErrorList{noObject()}
	}
	path := field.NewPath("spec", "podGroup")
	if given.Name == "" {
		return nil, field.ErrorList{field.Required(path.Child("metadata", "name"),
			"required when spec.object is empty: the gang's pods are named after the group, and carry its name in their label "+scheduling.PodGroupLabel)}
	}
	stored, err := r.lookup.PodGroup(r.namespace, given.Name)
	if err != nil {
		return nil, field.ErrorList{field.InternalError(field.NewPath("spec"), fmt.Errorf("reading PodGroup %s/%s: %w", r.namespace, given.Name, err))}
	}
	pg, errs := r.givenGroup(given.Name, given, stored != nil) // group.go
	if len(errs) > 0 {
		return nil, errs
	}
	if len(pg.Spec.Roles) == 0 {
		// Its Workload template gave it none.
		return nil, field.ErrorList{noObject()}
	}
	w, errs := rolePods(pg, path.Child("spec", "roles"), len(given.Spec.Roles) == 0)
	if len(errs) > 0 {
		return nil, errs
	}
	pods, warnings, errs := r.admitPods(w) // admit.go
	if len(errs) > 0 {
		return nil, errs
	}
	names := make([]string, len(w.pods))
	for i, m := range w.pods {
		names[i] = m.name
	}
	return &Gang{PodGroup: pg, Pods: pods, Names: names, Need: admission.MinCount(pg), Warnings: warnings}, nil
}

// rolePods are the pods of pg's roles, made from their templates, in the
// order of the roles: count pods of each role that is not createdLater,
// named <group>-<role>-<index>, each with one container that requests the
// template's requests, its node selector, node affinity and tolerations,
// and the group's and the role's labels. A createdLater role makes none:
// admission reserves room for its pods from its template itself, as it
// would for the group created now. rolesPath is where the roles are in
// the review; fromWorkload says that they came from the group's Workload
// template, not from the review.
func rolePods(pg *v1alpha1.PodGroup, rolesPath *field.Path, fromWorkload bool) (*workload, field.ErrorList) {
	var errs field.ErrorList
	var n int64
	for i, role := range pg.Spec.Roles {
		if role.CreatedLater {
			continue
		}
		n += int64(role.Count)
		if role.Template == nil {
			rule := "required when spec.object is empty: a review builds the role's pods from it"
			if ref := pg.Spec.WorkloadRef; fromWorkload && ref != nil {
				rule += fmt.Sprintf(" (the role comes from template %q of Workload %q; give spec.podGroup.spec.roles instead)", ref.TemplateName, ref.WorkloadName)
			}
			errs = append(errs, field.Required(rolesPath.Index(i).Child("template"), rule))
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if n > MaxPods {
		// Validation bounds the roles' counts already (MaxRolePods); this
		// keeps the review's own bound where it is said.
		return nil, field.ErrorList{{Type: field.ErrorTypeTooMany, Field: rolesPath.String(), BadValue: n,
			Detail: fmt.Sprintf("the roles would make %d pods; a review may make at most %d (MaxPods), the most pods admission places at once for one gang", n, MaxPods)}}
	}
	var bytes podBytes
	w := &workload{}
	for i := range pg.Spec.Roles {
		role := &pg.Spec.Roles[i]
		if role.CreatedLater {
			continue
		}
		path := rolesPath.Index(i).Child("template")
		pod := rolePod(pg.Name, role)
		if err := bytes.add(&corev1.PodTemplateSpec{ObjectMeta: pod.ObjectMeta, Spec: pod.Spec}, int64(role.Count), path); err != nil {
			return nil, field.ErrorList{err}
		}
		for j := range role.Count {
			p := pod.DeepCopy()
			p.Name = fmt.Sprintf("%s-%s-%d", pg.Name, role.Name, j)
			w.pods = append(w.pods, made{pod: p, name: p.Name, path: path})
		}
	}
	return w, nil
}

// rolePod is a pod of role in group, unnamed: the pod admission takes one
// of the role to be (admission.TemplatePod), with the labels that make it
// one of the group's pods of that role.
func rolePod(group string, role *v1alpha1.PodGroupRole) *corev1.Pod {
	p := admission.TemplatePod(role.Template.DeepCopy())
	p.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	p.Labels = map[string]string{scheduling.PodGroupLabel: group, scheduling.RoleLabel: role.Name}
	return p
}
