package validation

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// validateRoles checks spec.roles of a PodGroup or of a Workload template
// against its scheduling policy: at most MaxRoles uniquely named roles of at
// least one pod each, and a gang whose minCount is the sum of their counts,
// so that "complete" means the same whichever field one reads.
func validateRoles(roles []scheduling.PodGroupRole, policy *scheduling.PodGroupSchedulingPolicy, rolesPath, policyPath *field.Path) field.ErrorList {
	if len(roles) == 0 {
		return nil
	}
	var allErrs field.ErrorList
	if n := len(roles); n > scheduling.MaxRoles {
		allErrs = append(allErrs, field.TooMany(rolesPath, n, scheduling.MaxRoles))
	}
	names := sets.New[string]()
	var sum int64
	existing := 0
	for i := range roles {
		r := &roles[i]
		p := rolesPath.Index(i)
		allErrs = append(allErrs, ValidateName(r.Name, p.Child("name"), apivalidation.NameIsDNSLabel, nameRequired)...)
		if names.Has(r.Name) {
			allErrs = append(allErrs, field.Duplicate(p.Child("name"), r.Name))
		}
		names.Insert(r.Name)
		if r.Count < 1 {
			allErrs = append(allErrs, field.Invalid(p.Child("count"), r.Count, "must be greater than or equal to 1"))
		}
		sum += int64(r.Count)
		if r.Template != nil {
			allErrs = append(allErrs, validateRoleTemplate(r.Template, p.Child("template"))...)
		}
		allErrs = append(allErrs, ValidateSchedulingConstraints(r.SchedulingConstraints, p.Child("schedulingConstraints"))...)
		if !r.CreatedLater {
			existing++
		} else if r.Template == nil {
			allErrs = append(allErrs, field.Required(p.Child("template"), "required when createdLater is true: capacity for pods that do not exist yet is reserved from it"))
		}
		if t := r.ReservationTimeoutSeconds; t != nil {
			tp := p.Child("reservationTimeoutSeconds")
			switch {
			case !r.CreatedLater:
				allErrs = append(allErrs, field.Forbidden(tp, "may only be set when createdLater is true: only pods that do not exist yet have capacity reserved"))
			case *t < 1:
				allErrs = append(allErrs, field.Invalid(tp, *t, "must be greater than or equal to 1"))
			}
		}
	}
	if existing == 0 {
		allErrs = append(allErrs, field.Invalid(rolesPath, "createdLater", "at least one role must not be createdLater: some pod of the group must exist to create the others"))
	}
	switch {
	case policy.Gang == nil:
		allErrs = append(allErrs, field.Invalid(policyPath, "basic", fmt.Sprintf("must be gang when %s is set", rolesPath)))
	case int64(policy.Gang.MinCount) != sum:
		allErrs = append(allErrs, field.Invalid(policyPath.Child("gang", "minCount"), policy.Gang.MinCount,
			fmt.Sprintf("must equal the sum of %s[*].count (%d) when %s is set", rolesPath, sum, rolesPath)))
	}
	return allErrs
}

// validateRoleBounds checks the bounds one tenant's roles may ask of the
// controller: at most MaxRolePods pods in all (so in any one role), and a
// reservation timeout of at most MaxReservationTimeoutSeconds. old holds the
// roles before an update, nil on create: a value above its bound that is
// not new (stored before the bound existed) stays valid, so that such a
// group can still be updated, lowered and deleted; the controller refuses
// to admit it.
func validateRoleBounds(roles, old []scheduling.PodGroupRole, rolesPath *field.Path) field.ErrorList {
	oldByName := make(map[string]*scheduling.PodGroupRole, len(old))
	var oldSum int64
	for i := range old {
		oldByName[old[i].Name] = &old[i]
		oldSum += int64(old[i].Count)
	}
	var allErrs field.ErrorList
	var sum int64
	over := false
	for i := range roles {
		r, o := &roles[i], oldByName[roles[i].Name]
		p := rolesPath.Index(i)
		sum += int64(r.Count)
		if r.Count > scheduling.MaxRolePods && (o == nil || r.Count > o.Count) {
			over = true
			allErrs = append(allErrs, field.Invalid(p.Child("count"), r.Count,
				fmt.Sprintf("must be at most %d: a gang never has more pods placed at once", scheduling.MaxRolePods)))
		}
		if t := r.ReservationTimeoutSeconds; t != nil && *t > scheduling.MaxReservationTimeoutSeconds &&
			(o == nil || o.ReservationTimeoutSeconds == nil || *t != *o.ReservationTimeoutSeconds) {
			allErrs = append(allErrs, field.Invalid(p.Child("reservationTimeoutSeconds"), *t,
				fmt.Sprintf("must be at most %d (one hour): capacity is not held longer for pods that do not exist", scheduling.MaxReservationTimeoutSeconds)))
		}
	}
	if !over && sum > scheduling.MaxRolePods && (old == nil || sum > oldSum) {
		allErrs = append(allErrs, field.Invalid(rolesPath, sum,
			fmt.Sprintf("the roles' counts must add up to at most %d: a gang never has more pods placed at once", scheduling.MaxRolePods)))
	}
	if n, largest := roleTemplateBytes(roles); n > scheduling.MaxRoleTemplateBytes {
		if oldN, _ := roleTemplateBytes(old); old == nil || n > oldN {
			allErrs = append(allErrs, field.Invalid(rolesPath.Index(largest).Child("template"), fmt.Sprintf("<%d bytes of templates in all>", n),
				fmt.Sprintf("the roles' templates must take at most %d bytes together, as JSON: the controller keeps every group's templates in memory", scheduling.MaxRoleTemplateBytes)))
		}
	}
	return allErrs
}

// roleTemplateBytes is how many bytes roles' templates take as JSON, all
// together, and the index of the largest.
func roleTemplateBytes(roles []scheduling.PodGroupRole) (total, largest int) {
	most := -1
	for i := range roles {
		if roles[i].Template == nil {
			continue
		}
		b, err := json.Marshal(roles[i].Template)
		if err != nil {
			continue // no value of these types fails to marshal
		}
		total += len(b)
		if len(b) > most {
			most, largest = len(b), i
		}
	}
	return total, largest
}

// validateRoleTemplate checks the fields capacity-aware admission reads as
// the pod validation of kube-apiserver would check them on a pod.
func validateRoleTemplate(t *scheduling.PodGroupRoleTemplate, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	reqPath := fldPath.Child("requests")
	for name, q := range t.Requests {
		p := reqPath.Key(string(name))
		for _, msg := range utilvalidation.IsQualifiedName(string(name)) {
			allErrs = append(allErrs, field.Invalid(p, name, msg))
		}
		if q.Sign() < 0 {
			allErrs = append(allErrs, field.Invalid(p, q.String(), "must be greater than or equal to 0"))
		}
	}
	allErrs = append(allErrs, metav1validation.ValidateLabels(t.NodeSelector, fldPath.Child("nodeSelector"))...)
	if a := t.NodeAffinity; a != nil && a.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		reqd := fldPath.Child("nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
		if _, err := nodeaffinity.NewNodeSelector(a.RequiredDuringSchedulingIgnoredDuringExecution, field.WithPath(reqd)); err != nil {
			allErrs = append(allErrs, field.Invalid(reqd, "", err.Error()))
		}
	}
	tolPath := fldPath.Child("tolerations")
	for i, tol := range t.Tolerations {
		p := tolPath.Index(i)
		if tol.Key != "" {
			for _, msg := range utilvalidation.IsQualifiedName(tol.Key) {
				allErrs = append(allErrs, field.Invalid(p.Child("key"), tol.Key, msg))
			}
		}
		switch tol.Operator {
		case "", corev1.TolerationOpEqual:
		case corev1.TolerationOpExists:
			if tol.Value != "" {
				allErrs = append(allErrs, field.Invalid(p.Child("value"), tol.Value, "must be empty when operator is Exists"))
			}
		default:
			allErrs = append(allErrs, field.NotSupported(p.Child("operator"), tol.Operator, []corev1.TolerationOperator{corev1.TolerationOpEqual, corev1.TolerationOpExists}))
		}
		switch tol.Effect {
		case "", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			allErrs = append(allErrs, field.NotSupported(p.Child("effect"), tol.Effect, []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}))
		}
	}
	return allErrs
}

// validateRolesUpdate keeps roles as they were created but for their
// counts, which may change as gang.minCount may (validateRoles keeps the
// two in agreement). A role's schedulingConstraints are said to be
// immutable on their own, as the group's are.
func validateRolesUpdate(roles, old []scheduling.PodGroupRole, fldPath *field.Path) field.ErrorList {
	if len(roles) != len(old) {
		return field.ErrorList{field.Forbidden(fldPath, fmt.Sprintf("roles cannot be added or removed after creation (had %d, now %d); only their counts may change", len(old), len(roles)))}
	}
	var allErrs field.ErrorList
	for i := range roles {
		r, o := roles[i], old[i]
		allErrs = append(allErrs, validateConstraintsUnchanged(r.SchedulingConstraints, o.SchedulingConstraints, fldPath.Index(i).Child("schedulingConstraints"))...)
		r.Count, o.Count = 0, 0
		r.SchedulingConstraints, o.SchedulingConstraints = nil, nil
		if !apiequality.Semantic.DeepEqual(r, o) {
			allErrs = append(allErrs, field.Forbidden(fldPath.Index(i), "only count may change after creation"))
		}
	}
	return allErrs
}

// validateRoleStatuses checks status.roles: each names a role of the spec
// once, with counts that are not negative.
func validateRoleStatuses(statuses []scheduling.PodGroupRoleStatus, roles []scheduling.PodGroupRole, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	specNames := sets.New[string]()
	for _, r := range roles {
		specNames.Insert(r.Name)
	}
	seen := sets.New[string]()
	for i, s := range statuses {
		p := fldPath.Index(i)
		switch {
		case !specNames.Has(s.Name):
			allErrs = append(allErrs, field.NotFound(p.Child("name"), s.Name))
		case seen.Has(s.Name):
			allErrs = append(allErrs, field.Duplicate(p.Child("name"), s.Name))
		}
		seen.Insert(s.Name)
		for _, c := range []struct {
			name  string
			value int32
		}{{"active", s.Active}, {"succeeded", s.Succeeded}, {"failed", s.Failed}} {
			allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(c.value), p.Child(c.name))...)
		}
		if u := s.UncountedTerminatedPods; u != nil {
			allErrs = append(allErrs, validateUncounted(u, p.Child("uncountedTerminatedPods"))...)
		}
		allErrs = append(allErrs, validateTopologyDomain(s.TopologyDomain, p.Child("topologyDomain"))...)
	}
	return allErrs
}

// validateRoleStatusTransition keeps each role's finished counts from going
// down, as the group's totals do not: each finished pod is counted once.
func validateRoleStatusTransition(statuses, old []scheduling.PodGroupRoleStatus, fldPath *field.Path) field.ErrorList {
	oldByName := make(map[string]scheduling.PodGroupRoleStatus, len(old))
	for _, o := range old {
		oldByName[o.Name] = o
	}
	var allErrs field.ErrorList
	for i, s := range statuses {
		o := oldByName[s.Name]
		delete(oldByName, s.Name)
		if s.Succeeded < o.Succeeded {
			allErrs = append(allErrs, field.Invalid(fldPath.Index(i).Child("succeeded"), s.Succeeded, fmt.Sprintf("must not decrease (was %d): each finished pod is counted exactly once", o.Succeeded)))
		}
		if s.Failed < o.Failed {
			allErrs = append(allErrs, field.Invalid(fldPath.Index(i).Child("failed"), s.Failed, fmt.Sprintf("must not decrease (was %d): each finished pod is counted exactly once", o.Failed)))
		}
	}
	for name, o := range oldByName {
		if o.Succeeded > 0 || o.Failed > 0 {
			allErrs = append(allErrs, field.Forbidden(fldPath, fmt.Sprintf("role %q cannot be removed: it has counted finished pods", name)))
		}
	}
	return allErrs
}

// validateReservations checks status.reservations: each names a
// createdLater role of the spec and a node, once per role and node, for at
// least one pod, and no more pods in all than the role's count.
func validateReservations(rs []scheduling.RoleReservation, roles []scheduling.PodGroupRole, fldPath *field.Path) field.ErrorList {
	if len(rs) == 0 {
		return nil
	}
	var allErrs field.ErrorList
	if len(rs) > scheduling.MaxPlacements {
		allErrs = append(allErrs, field.TooMany(fldPath, len(rs), scheduling.MaxPlacements))
	}
	later := map[string]int32{}
	for _, r := range roles {
		if r.CreatedLater {
			later[r.Name] = r.Count
		}
	}
	type key struct{ role, node string }
	seen := sets.New[key]()
	total := map[string]int64{}
	for i, r := range rs {
		p := fldPath.Index(i)
		if _, ok := later[r.Role]; !ok {
			allErrs = append(allErrs, field.NotFound(p.Child("role"), r.Role))
		}
		for _, msg := range apivalidation.NameIsDNSSubdomain(r.Node, false) {
			allErrs = append(allErrs, field.Invalid(p.Child("node"), r.Node, msg))
		}
		if k := (key{r.Role, r.Node}); seen.Has(k) {
			allErrs = append(allErrs, field.Duplicate(p, fmt.Sprintf("role %s on node %s", r.Role, r.Node)))
		} else {
			seen.Insert(k)
		}
		if r.Count < 1 {
			allErrs = append(allErrs, field.Invalid(p.Child("count"), r.Count, "must be greater than or equal to 1"))
		}
		total[r.Role] += int64(r.Count)
	}
	for i, r := range rs {
		if want, ok := later[r.Role]; ok && total[r.Role] > int64(want) {
			allErrs = append(allErrs, field.Invalid(fldPath.Index(i).Child("count"), r.Count,
				fmt.Sprintf("reservations of role %s add up to %d, more than its count %d", r.Role, total[r.Role], want)))
			total[r.Role] = 0 // said once per role.
		}
	}
	return allErrs
}
