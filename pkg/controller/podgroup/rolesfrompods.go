package podgroup

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	schedulingvalidation "github.com/muster-dev/muster/pkg/apis/scheduling/validation"
)

// podRoles is what one pod says of its group's roles.
type podRoles struct {
	pod   *corev1.Pod
	roles int32  // RolesAnnotation
	role  string // RoleLabel
	count int32  // RoleCountAnnotation
}

// groupFromRoles is the annotation path for gangs with roles (KEP-976):
// pods that carry RolesAnnotation build the group once a pod of every role
// has been seen. handled is false when no live pod carries the annotation,
// so that the other annotations decide. Pods whose annotations are invalid,
// or disagree with the others' (the number of roles, a role's count, more
// roles than announced), are told by an event, and no group is created from
// them: a group created from half the truth would admit the wrong gang.
func (c *Controller) groupFromRoles(namespace, name string, pods []*corev1.Pod) (pg *v1alpha1.PodGroup, from *corev1.Pod, handled bool) {
	if pg, from, handled := c.groupFromRolesTemplate(namespace, name, pods); handled {
		return pg, from, true
	}
	var said []podRoles
	for _, p := range pods {
		if _, has := p.Annotations[scheduling.RolesAnnotation]; !has || p.DeletionTimestamp != nil {
			continue
		}
		r, err := readPodRoles(p)
		if err != nil {
			c.warnOnce(p.UID, scheduling.EventInvalidAnnotation, func() {
				c.recorder.Event(p, corev1.EventTypeWarning, scheduling.EventInvalidAnnotation, err.Error())
			})
			return nil, nil, true
		}
		said = append(said, r)
	}
	if len(said) == 0 {
		return nil, nil, false
	}
	sort.Slice(said, func(i, j int) bool {
		a, b := said[i].pod, said[j].pod
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
	first := said[0]
	counts := map[string]int32{}
	disagree := func(r podRoles, why string) {
		c.warnOnce(r.pod.UID, scheduling.EventRolesMismatch, func() {
			c.recorder.Eventf(r.pod, corev1.EventTypeWarning, scheduling.EventRolesMismatch,
				"role annotations disagree with pod %s of PodGroup %s: %s; no PodGroup is created until all pods agree", first.pod.Name, name, why)
		})
	}
	agree := true
	for _, r := range said {
		switch have, seen := counts[r.role]; {
		case r.roles != first.roles:
			disagree(r, fmt.Sprintf("%s is %d, not %d", scheduling.RolesAnnotation, r.roles, first.roles))
			agree = false
		case seen && have != r.count:
			disagree(r, fmt.Sprintf("role %s has %s %d here and %d on an older pod", r.role, scheduling.RoleCountAnnotation, r.count, have))
			agree = false
		case !seen:
			counts[r.role] = r.count
		}
	}
	if agree && int32(len(counts)) > first.roles {
		for _, r := range said {
			disagree(r, fmt.Sprintf("pods name %d roles (%s), more than %s=%d", len(counts), strings.Join(slices.Sorted(maps.Keys(counts)), ","), scheduling.RolesAnnotation, first.roles))
		}
		agree = false
	}
	if !agree || int32(len(counts)) < first.roles {
		return nil, nil, true // disagreeing, or waiting for a pod of every role.
	}
	spec := v1alpha1.PodGroupSpec{}
	var sum int32
	for _, role := range slices.Sorted(maps.Keys(counts)) {
		spec.Roles = append(spec.Roles, v1alpha1.PodGroupRole{Name: role, Count: counts[role]})
		sum += counts[role]
	}
	spec.SchedulingPolicy.Gang = &v1alpha1.GangSchedulingPolicy{MinCount: sum}
	return &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Annotations: map[string]string{scheduling.CreatedFromPodAnnotation: first.pod.Name}},
		Spec:       spec,
	}, first.pod, true
}

// readPodRoles reads one pod's role label and annotations, as the webhook
// checks them on create.
func readPodRoles(p *corev1.Pod) (podRoles, error) {
	r := podRoles{pod: p, role: roleOf(p)}
	v := p.Annotations[scheduling.RolesAnnotation]
	n, ok := scheduling.ParseRoles(v)
	if !ok {
		return r, fmt.Errorf("annotation %s=%q must be an integer from 1 to %d", scheduling.RolesAnnotation, v, scheduling.MaxRoles)
	}
	r.roles = n
	if msgs := validation.IsDNS1123Label(r.role); len(msgs) > 0 {
		return r, fmt.Errorf("label %s=%q must name the pod's role, a DNS label, when %s is set: %s", scheduling.RoleLabel, r.role, scheduling.RolesAnnotation, strings.Join(msgs, "; "))
	}
	if r.count, ok = scheduling.RoleCount(p.Annotations); !ok {
		return r, fmt.Errorf("annotation %s=%q must be a positive 32-bit integer", scheduling.RoleCountAnnotation, p.Annotations[scheduling.RoleCountAnnotation])
	}
	return r, nil
}

// groupFromRolesTemplate is the annotation path of a driver that creates
// its workers (KEP-976 story 4): the oldest live pod that carries
// RolesTemplateAnnotation decides the group alone, its own role and the
// roles it lists, which it creates later. Pods of the group that disagree
// are told once the group exists (checkRoles). handled is false when no
// live pod carries the annotation.
func (c *Controller) groupFromRolesTemplate(namespace, name string, pods []*corev1.Pod) (pg *v1alpha1.PodGroup, from *corev1.Pod, handled bool) {
	for _, p := range pods {
		if _, has := p.Annotations[scheduling.RolesTemplateAnnotation]; !has || p.DeletionTimestamp != nil {
			continue
		}
		if from == nil || p.CreationTimestamp.Before(&from.CreationTimestamp) ||
			(p.CreationTimestamp.Equal(&from.CreationTimestamp) && p.Name < from.Name) {
			from = p
		}
	}
	if from == nil {
		return nil, nil, false
	}
	roles, err := rolesFromTemplate(from)
	if err != nil {
		c.warnOnce(from.UID, scheduling.EventInvalidAnnotation, func() {
			c.recorder.Event(from, corev1.EventTypeWarning, scheduling.EventInvalidAnnotation, err.Error())
		})
		return nil, nil, true
	}
	var sum int32
	for _, r := range roles {
		sum += r.Count
	}
	return &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Annotations: map[string]string{scheduling.CreatedFromPodAnnotation: from.Name}},
		Spec: v1alpha1.PodGroupSpec{
			SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: sum}},
			Roles:            roles,
		},
	}, from, true
}

// rolesFromTemplate reads a driver's roles: its own, with its role count,
// and those its roles-template lists, checked as the webhook checks them.
func rolesFromTemplate(p *corev1.Pod) ([]v1alpha1.PodGroupRole, error) {
	role := roleOf(p)
	if msgs := validation.IsDNS1123Label(role); len(msgs) > 0 {
		return nil, fmt.Errorf("label %s=%q must name the pod's role, a DNS label, when %s is set: %s", scheduling.RoleLabel, role, scheduling.RolesTemplateAnnotation, strings.Join(msgs, "; "))
	}
	count, ok := scheduling.RoleCount(p.Annotations)
	if !ok {
		return nil, fmt.Errorf("annotation %s=%q must be a positive 32-bit integer", scheduling.RoleCountAnnotation, p.Annotations[scheduling.RoleCountAnnotation])
	}
	path := field.NewPath("metadata", "annotations").Key(scheduling.RolesTemplateAnnotation)
	roles, errs := schedulingvalidation.RolesFromTemplate(p.Annotations[scheduling.RolesTemplateAnnotation], role, count, path)
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	if v, has := p.Annotations[scheduling.RolesAnnotation]; has {
		if n, ok := scheduling.ParseRoles(v); !ok || int(n) != len(roles) {
			return nil, fmt.Errorf("annotation %s=%q, but %s names %d roles with the pod's own", scheduling.RolesAnnotation, v, scheduling.RolesTemplateAnnotation, len(roles))
		}
	}
	return roles, nil
}
