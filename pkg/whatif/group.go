package whatif

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	schedulingvalidation "github.com/muster-dev/muster/pkg/apis/scheduling/validation"
	"github.com/muster-dev/muster/pkg/controller/instance"
)

// group returns the group the admitted pods would form under name, as
// it would be stored, and what sized it when the controller would size it
// from the object. In order:
//
//   - given, spec.podGroup, is created beside the pods, as the PodGroup
//     API would create it (store.go); a stored group of its name makes
//     the create conflict;
//   - a stored group of that name is the one the pods join, with its spec;
//   - else the controller creates one from the pods' annotations, as
//     syncMissingGroup does (createdGroup).
func (r *reviewer) group(name string, given *v1alpha1.PodGroup, w *workload, admitted []*corev1.Pod) (*v1alpha1.PodGroup, string, field.ErrorList) {
	stored, err := r.lookup.PodGroup(r.namespace, name)
	if err != nil {
		return nil, "", field.ErrorList{field.InternalError(field.NewPath("spec"), fmt.Errorf("reading PodGroup %s/%s: %w", r.namespace, name, err))}
	}
	switch {
	case given != nil:
		pg, errs := r.givenGroup(name, given, stored != nil)
		return pg, "", errs
	case stored != nil:
		return &v1alpha1.PodGroup{
			ObjectMeta: metav1.ObjectMeta{Name: stored.Name, Namespace: r.namespace, Labels: maps.Clone(stored.Labels), Annotations: maps.Clone(stored.Annotations)},
			Spec:       *stored.Spec.DeepCopy(),
		}, "", nil
	}
	return r.createdGroup(name, w, admitted)
}

// givenGroup is spec.podGroup, which must be the pods' group, in the
// review's namespace, and not stored already, as the API would store it.
func (r *reviewer) givenGroup(name string, given *v1alpha1.PodGroup, exists bool) (*v1alpha1.PodGroup, field.ErrorList) {
	path := field.NewPath("spec", "podGroup")
	namePath := path.Child("metadata", "name")
	var errs field.ErrorList
	rule := fmt.Sprintf("must be %q, the group the pods name by their label %s", name, scheduling.PodGroupLabel)
	switch given.Name {
	case name:
	case "":
		errs = append(errs, field.Required(namePath, rule))
	default:
		errs = append(errs, field.Invalid(namePath, given.Name, rule))
	}
	errs = append(errs, checkNamespace(r.namespace, given.Namespace, path)...)
	if len(errs) > 0 {
		return nil, errs
	}
	if exists {
		return nil, field.ErrorList{field.Invalid(namePath, name, fmt.Sprintf(
			"PodGroup %s/%s already exists, so its create would conflict; to ask about pods joining it, give them as spec.object and leave spec.podGroup out", r.namespace, name))}
	}
	pg, errs := r.asStored(given) // store.go
	if len(errs) > 0 {
		return nil, under(path, errs)
	}
	return pg, nil
}

// createdGroup is the group the controller would create for pods whose
// group does not exist (syncMissingGroup, groupFromAnnotations,
// fromInstance): from the creation annotations of the first pod that has
// valid ones, in the order the controller takes them (all are created
// now, so by name); a pod grouped by its instance without a min-count is
// sized by the owner that says how many pods the instance runs, found by
// the controller's own walk on the objects the review makes. It is then
// created through the PodGroup API (store.go), and refused as the create
// would be, at the annotations it came from.
func (r *reviewer) createdGroup(name string, w *workload, admitted []*corev1.Pod) (*v1alpha1.PodGroup, string, field.ErrorList) {
	// The controller builds a gang with roles from the role annotations of
	// all its pods (groupFromRoles), which is not modelled.
	for i, p := range admitted {
		for _, key := range []string{scheduling.RolesTemplateAnnotation, scheduling.RolesAnnotation} {
			if _, has := p.Annotations[key]; has {
				return nil, "", field.ErrorList{field.Forbidden(annotationPath(w.pods[i].path, key), fmt.Sprintf(
					"a review does not yet model the PodGroup %s that the controller builds from role annotations; give it as spec.podGroup, with its spec.roles", name))}
			}
		}
	}
	order := make([]int, len(admitted))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(w.pods[a].name, w.pods[b].name) })
	from := -1
	var spec v1alpha1.PodGroupSpec
	for _, i := range order {
		s, ok, err := schedulingvalidation.SpecFromAnnotations(admitted[i].Annotations)
		if err != nil || !ok {
			continue // the controller tells the pod, and takes the next.
		}
		from, spec = i, s
		break
	}
	if from < 0 {
		return nil, "", field.ErrorList{field.Required(annotationPath(w.pods[0].path, scheduling.MinCountAnnotation), fmt.Sprintf(
			"no PodGroup %s exists, and no pod carries the annotations the controller creates one from, so the pods would wait for it for ever; set %s (or %s, or %s and %s), or give spec.podGroup",
			name, scheduling.MinCountAnnotation, scheduling.GroupByAnnotation, scheduling.WorkloadAnnotation, scheduling.TemplateAnnotation))}
	}
	p, path := admitted[from], w.pods[from].path
	pg := &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.namespace,
			Annotations: map[string]string{scheduling.CreatedFromPodAnnotation: p.Name}},
		Spec: spec,
	}
	sizedBy := ""
	if _, byInstance := p.Annotations[scheduling.GroupByAnnotation]; byInstance && spec.SchedulingPolicy.Gang == nil && spec.WorkloadRef == nil {
		// owners never fail a read: what is not there is not found.
		in, _ := instance.Walk(context.Background(), w.owners, r.namespace, metav1.GetControllerOfNoCopy(p))
		if in.Size == 0 {
			why := "no owner of this pod says how many pods its instance runs"
			if w.owners == nil {
				why += " (a review does not read the owners of the pods it is given)"
			}
			return nil, "", field.ErrorList{field.Required(annotationPath(path, scheduling.MinCountAnnotation), fmt.Sprintf(
				"cannot create PodGroup %s: %s; set the annotation %s", name, why, scheduling.MinCountAnnotation))}
		}
		pg.Spec.SchedulingPolicy.Gang = &v1alpha1.GangSchedulingPolicy{MinCount: in.Size}
		pg.Annotations[scheduling.SizedByAnnotation] = in.SizedBy
		sizedBy = in.SizedBy
	}
	stored, errs := r.asStored(pg) // store.go
	if len(errs) > 0 {
		annotations := path.Child("metadata", "annotations")
		for _, e := range errs {
			if e.Type == field.ErrorTypeInternal {
				// The cluster could not be read: the server's fault.
				return nil, "", field.ErrorList{field.InternalError(annotations, fmt.Errorf("creating PodGroup %s: %s", name, e.Detail))}
			}
		}
		return nil, "", field.ErrorList{field.Invalid(annotations, field.OmitValueType{}, fmt.Sprintf(
			"the controller would create PodGroup %s from these annotations, and the API would refuse it: %v", name, errs.ToAggregate()))}
	}
	return stored, sizedBy, nil
}

// annotationPath is the path of the annotation key of a pod made from path.
func annotationPath(path *field.Path, key string) *field.Path {
	return path.Child("metadata", "annotations").Key(key)
}
