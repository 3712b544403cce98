package validation

import (
	"fmt"
	"slices"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// ValidatePodGroup checks a PodGroup on create, after defaulting.
func ValidatePodGroup(pg *scheduling.PodGroup) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&pg.ObjectMeta, true, ValidatePodGroupName, field.NewPath("metadata"))
	allErrs = append(allErrs, validatePodGroupSpec(&pg.Spec, field.NewPath("spec"))...)
	allErrs = append(allErrs, validateMinCountBound(&pg.Spec.SchedulingPolicy, nil, pg.Spec.Roles, field.NewPath("spec", "schedulingPolicy"))...)
	return append(allErrs, validateRoleBounds(pg.Spec.Roles, nil, field.NewPath("spec", "roles"))...)
}

// generatedSuffixLength is what generateName appends to a prefix.
const generatedSuffixLength = 5

// ValidatePodGroupName accepts a DNS subdomain that a pod's group label can
// hold: a label value is at most 63 characters, so a longer group could
// never have a pod.
func ValidatePodGroupName(name string, prefix bool) []string {
	if msgs := apivalidation.NameIsDNSSubdomain(name, prefix); len(msgs) > 0 {
		return msgs
	}
	limit := utilvalidation.LabelValueMaxLength
	if prefix {
		limit -= generatedSuffixLength
	}
	if len(name) > limit {
		return []string{fmt.Sprintf("must be no more than %d characters, so that the pod label %s can name it", limit, scheduling.PodGroupLabel)}
	}
	return nil
}

// ValidatePodGroupUpdate checks a PodGroup update: workloadRef and
// schedulingConstraints are immutable, gates can only be removed, and only
// gang.minCount may change in the policy.
func ValidatePodGroupUpdate(pg, old *scheduling.PodGroup) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&pg.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	specPath := field.NewPath("spec")
	allErrs = append(allErrs, validatePodGroupSpec(&pg.Spec, specPath)...)
	allErrs = append(allErrs, apivalidation.ValidateImmutableField(pg.Spec.WorkloadRef, old.Spec.WorkloadRef, specPath.Child("workloadRef"))...)
	allErrs = append(allErrs, validateConstraintsUnchanged(pg.Spec.SchedulingConstraints, old.Spec.SchedulingConstraints, specPath.Child("schedulingConstraints"))...)
	allErrs = append(allErrs, validatePolicyKindUnchanged(&pg.Spec.SchedulingPolicy, &old.Spec.SchedulingPolicy, specPath.Child("schedulingPolicy"))...)
	allErrs = append(allErrs, validateGatesOnlyRemoved(pg.Spec.SchedulingGates, old.Spec.SchedulingGates, specPath.Child("schedulingGates"))...)
	allErrs = append(allErrs, validateRolesUpdate(pg.Spec.Roles, old.Spec.Roles, specPath.Child("roles"))...)
	allErrs = append(allErrs, validateRoleBounds(pg.Spec.Roles, old.Spec.Roles, specPath.Child("roles"))...)
	allErrs = append(allErrs, validateMinCountBound(&pg.Spec.SchedulingPolicy, &old.Spec.SchedulingPolicy, pg.Spec.Roles, specPath.Child("schedulingPolicy"))...)
	return allErrs
}

// validatePolicyKindUnchanged forbids switching between basic and gang: a
// running group cannot change what admitting it means, only how many it needs.
func validatePolicyKindUnchanged(p, old *scheduling.PodGroupSchedulingPolicy, fldPath *field.Path) field.ErrorList {
	if (p.Gang == nil) != (old.Gang == nil) || (p.Basic == nil) != (old.Basic == nil) {
		return field.ErrorList{field.Forbidden(fldPath, "cannot switch between basic and gang after creation; only gang.minCount may change")}
	}
	return nil
}

// validateGatesOnlyRemoved applies the rule of Pod scheduling gates (KEP-3521):
// after creation a gate can be removed, in any order, but none can be added,
// renamed or re-added.
func validateGatesOnlyRemoved(gates, old []scheduling.PodGroupSchedulingGate, fldPath *field.Path) field.ErrorList {
	oldNames := sets.New[string]()
	for _, g := range old {
		oldNames.Insert(g.Name)
	}
	var allErrs field.ErrorList
	for i, g := range gates {
		if !oldNames.Has(g.Name) {
			allErrs = append(allErrs, field.Forbidden(fldPath.Index(i), fmt.Sprintf("gate %q cannot be added: scheduling gates can only be removed after creation", g.Name)))
		}
	}
	return allErrs
}

func validatePodGroupSpec(spec *scheduling.PodGroupSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if ref := spec.WorkloadRef; ref != nil {
		refPath := fldPath.Child("workloadRef")
		allErrs = append(allErrs, ValidateName(ref.WorkloadName, refPath.Child("workloadName"), apivalidation.NameIsDNSSubdomain, nameRequired)...)
		allErrs = append(allErrs, ValidateName(ref.TemplateName, refPath.Child("templateName"), apivalidation.NameIsDNSLabel, nameRequired)...)
	}
	allErrs = append(allErrs, validateSchedulingPolicy(&spec.SchedulingPolicy, fldPath.Child("schedulingPolicy"))...)
	allErrs = append(allErrs, validateRoles(spec.Roles, &spec.SchedulingPolicy, fldPath.Child("roles"), fldPath.Child("schedulingPolicy"))...)
	allErrs = append(allErrs, ValidateSchedulingConstraints(spec.SchedulingConstraints, fldPath.Child("schedulingConstraints"))...)

	gatesPath := fldPath.Child("schedulingGates")
	if n := len(spec.SchedulingGates); n > scheduling.MaxGroupGates {
		allErrs = append(allErrs, field.TooMany(gatesPath, n, scheduling.MaxGroupGates))
	}
	names := sets.New[string]()
	for i, g := range spec.SchedulingGates {
		p := gatesPath.Index(i).Child("name")
		if g.Name == "" {
			allErrs = append(allErrs, field.Required(p, "gate name is required"))
			continue
		}
		for _, msg := range utilvalidation.IsQualifiedName(g.Name) {
			allErrs = append(allErrs, field.Invalid(p, g.Name, msg))
		}
		if names.Has(g.Name) {
			allErrs = append(allErrs, field.Duplicate(p, g.Name))
		}
		names.Insert(g.Name)
	}
	return allErrs
}

// ValidatePodGroupStatusUpdate checks a write to podgroups/status.
func ValidatePodGroupStatusUpdate(pg, old *scheduling.PodGroup) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&pg.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	statusPath := field.NewPath("status")
	allErrs = append(allErrs, validatePodGroupStatus(&pg.Status, statusPath)...)
	allErrs = append(allErrs, validateStatusAgainstSpec(pg, statusPath)...)
	allErrs = append(allErrs, validateRoleStatuses(pg.Status.Roles, pg.Spec.Roles, statusPath.Child("roles"))...)
	allErrs = append(allErrs, validateReservations(pg.Status.Reservations, pg.Spec.Roles, statusPath.Child("reservations"))...)
	allErrs = append(allErrs, validatePodGroupStatusTransition(&pg.Status, &old.Status, statusPath)...)
	allErrs = append(allErrs, validateRoleStatusTransition(pg.Status.Roles, old.Status.Roles, statusPath.Child("roles"))...)
	return allErrs
}

func validatePodGroupStatus(s *scheduling.PodGroupStatus, fldPath *field.Path) field.ErrorList {
	allErrs := metav1validation.ValidateConditions(s.Conditions, fldPath.Child("conditions"))
	type counter struct {
		name  string
		value int32
	}
	// Gated, active, scheduled and ready count existing pods, so none can
	// exceed pods; a ready pod is a bound one. Succeeded and failed are
	// cumulative and include deleted pods, so they are not bounded by pods.
	ofExistingPods := []counter{{"gated", s.Gated}, {"active", s.Active}, {"scheduled", s.Scheduled}, {"ready", s.Ready}}
	cumulative := []counter{{"succeeded", s.Succeeded}, {"failed", s.Failed}, {"preempted", s.Preempted}}
	for _, c := range slices.Concat([]counter{{"pods", s.Pods}}, ofExistingPods, cumulative) {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(c.value), fldPath.Child(c.name))...)
	}
	for _, c := range ofExistingPods {
		if c.value > s.Pods {
			allErrs = append(allErrs, field.Invalid(fldPath.Child(c.name), c.value, fmt.Sprintf("must be less than or equal to status.pods (%d)", s.Pods)))
		}
	}
	if s.Ready > s.Scheduled {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("ready"), s.Ready, fmt.Sprintf("must be less than or equal to status.scheduled (%d)", s.Scheduled)))
	}
	// Summed in int64 so that two large counters cannot wrap around.
	if int64(s.Gated)+int64(s.Scheduled) > int64(s.Pods) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("gated"), s.Gated, fmt.Sprintf("gated plus scheduled must be less than or equal to status.pods (%d): a gated pod cannot be bound", s.Pods)))
	}
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(s.ObservedGeneration, fldPath.Child("observedGeneration"))...)
	if u := s.UncountedTerminatedPods; u != nil {
		allErrs = append(allErrs, validateUncounted(u, fldPath.Child("uncountedTerminatedPods"))...)
	}
	if s.Preempted > 0 && s.Preempted > s.Failed {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("preempted"), s.Preempted, fmt.Sprintf("must be less than or equal to status.failed (%d): a preempted pod is a failed one", s.Failed)))
	}
	allErrs = append(allErrs, validatePlacements(s.Placements, fldPath.Child("placements"))...)
	allErrs = append(allErrs, validateTopologyDomain(s.TopologyDomain, fldPath.Child("topologyDomain"))...)
	if p := s.Preemption; p != nil {
		allErrs = append(allErrs, validatePreemption(p, fldPath.Child("preemption"))...)
	}
	if s.CompletionTime != nil && s.StartTime != nil && s.CompletionTime.Before(s.StartTime) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("completionTime"), s.CompletionTime, "must not be before status.startTime"))
	}
	return allErrs
}

// validateStatusAgainstSpec keeps the conditions true to the spec: a group
// with gates is never admitted, and a finished group says how it ended.
func validateStatusAgainstSpec(pg *scheduling.PodGroup, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	condPath := fldPath.Child("conditions")
	if n := len(pg.Spec.SchedulingGates); n > 0 && meta.IsStatusConditionTrue(pg.Status.Conditions, scheduling.ConditionAdmitted) {
		allErrs = append(allErrs, field.Forbidden(condPath, fmt.Sprintf("condition Admitted cannot be True while spec.schedulingGates holds %d gate(s)", n)))
	}
	if c := meta.FindStatusCondition(pg.Status.Conditions, scheduling.ConditionFinished); c != nil && c.Status == metav1.ConditionTrue &&
		c.Reason != scheduling.ReasonSucceeded && c.Reason != scheduling.ReasonFailed {
		allErrs = append(allErrs, field.NotSupported(condPath, c.Reason, []string{scheduling.ReasonSucceeded, scheduling.ReasonFailed}))
	}
	return allErrs
}

func validateUncounted(u *scheduling.UncountedTerminatedPods, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[types.UID]()
	for _, list := range []struct {
		name string
		uids []types.UID
	}{{"succeeded", u.Succeeded}, {"failed", u.Failed}} {
		p := fldPath.Child(list.name)
		if len(list.uids) > scheduling.MaxUncountedTerminatedPods {
			allErrs = append(allErrs, field.TooMany(p, len(list.uids), scheduling.MaxUncountedTerminatedPods))
		}
		for i, uid := range list.uids {
			switch {
			case uid == "":
				allErrs = append(allErrs, field.Required(p.Index(i), "UID must not be empty"))
			case seen.Has(uid):
				allErrs = append(allErrs, field.Duplicate(p.Index(i), uid))
			}
			seen.Insert(uid)
		}
	}
	p := fldPath.Child("preempted")
	if len(u.Preempted) > scheduling.MaxUncountedTerminatedPods {
		allErrs = append(allErrs, field.TooMany(p, len(u.Preempted), scheduling.MaxUncountedTerminatedPods))
	}
	failed := sets.New(u.Failed...)
	preempted := sets.New[types.UID]()
	for i, uid := range u.Preempted {
		switch {
		case preempted.Has(uid):
			allErrs = append(allErrs, field.Duplicate(p.Index(i), uid))
		case !failed.Has(uid):
			allErrs = append(allErrs, field.Invalid(p.Index(i), uid, "must also be in uncountedTerminatedPods.failed: a preempted pod is a failed one"))
		}
		preempted.Insert(uid)
	}
	return allErrs
}

// validatePreemption checks that a preemption names each victim once, by
// kind and either valid names and UID or a ref (a victim in another
// namespace), and names at most MaxPreemptionVictims.
func validatePreemption(p *scheduling.PodGroupPreemption, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	vp := fldPath.Child("victims")
	if len(p.Victims) == 0 {
		allErrs = append(allErrs, field.Required(vp, "a preemption names at least one victim"))
	}
	if len(p.Victims) > scheduling.MaxPreemptionVictims {
		allErrs = append(allErrs, field.TooMany(vp, len(p.Victims), scheduling.MaxPreemptionVictims))
	}
	seen := sets.New[types.UID]()
	seenRefs := sets.New[string]()
	for i, v := range p.Victims {
		idx := vp.Index(i)
		if v.Kind != scheduling.VictimKindPodGroup && v.Kind != scheduling.VictimKindPod {
			allErrs = append(allErrs, field.NotSupported(idx.Child("kind"), v.Kind, []string{scheduling.VictimKindPodGroup, scheduling.VictimKindPod}))
		}
		if v.Ref != "" {
			allErrs = append(allErrs, validateVictimRef(v, seenRefs, idx)...)
		} else {
			for _, msg := range apivalidation.ValidateNamespaceName(v.Namespace, false) {
				allErrs = append(allErrs, field.Invalid(idx.Child("namespace"), v.Namespace, msg))
			}
			for _, msg := range apivalidation.NameIsDNSSubdomain(v.Name, false) {
				allErrs = append(allErrs, field.Invalid(idx.Child("name"), v.Name, msg))
			}
			allErrs = append(allErrs, validateUniqueUID(v.UID, seen, idx.Child("uid"), "the victim's UID is required, or a ref for a victim in another namespace")...)
		}
		if v.Priority >= p.Priority {
			allErrs = append(allErrs, field.Invalid(idx.Child("priority"), v.Priority, fmt.Sprintf("must be lower than preemption.priority (%d): a gang preempts only strictly lower priority", p.Priority)))
		}
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(v.Pods), idx.Child("pods"))...)
	}
	return allErrs
}

// validateVictimRef checks a victim named by ref: the ref has
// VictimRef's form and is not repeated, and the victim's namespace, name
// and UID, which the ref stands for, are not set.
func validateVictimRef(v scheduling.PreemptionVictim, seen sets.Set[string], idx *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch {
	case !scheduling.IsVictimRef(v.Ref):
		allErrs = append(allErrs, field.Invalid(idx.Child("ref"), v.Ref, scheduling.VictimRefRule))
	case seen.Has(v.Ref):
		allErrs = append(allErrs, field.Duplicate(idx.Child("ref"), v.Ref))
	default:
		seen.Insert(v.Ref)
	}
	const why = "must be empty when ref is set: a ref stands for a victim in another namespace, whose names the group's readers may not see"
	for _, f := range []struct{ name, value string }{{"namespace", v.Namespace}, {"name", v.Name}, {"uid", string(v.UID)}} {
		if f.value != "" {
			allErrs = append(allErrs, field.Forbidden(idx.Child(f.name), why))
		}
	}
	return allErrs
}

// validatePlacements checks that each placement names a pod and a node by
// valid names, once per pod UID.
func validatePlacements(placements []scheduling.PodPlacement, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(placements) > scheduling.MaxPlacements {
		allErrs = append(allErrs, field.TooMany(fldPath, len(placements), scheduling.MaxPlacements))
	}
	seen := sets.New[types.UID]()
	for i, p := range placements {
		idx := fldPath.Index(i)
		for _, msg := range apivalidation.NameIsDNSSubdomain(p.Pod, false) {
			allErrs = append(allErrs, field.Invalid(idx.Child("pod"), p.Pod, msg))
		}
		allErrs = append(allErrs, validateUniqueUID(p.UID, seen, idx.Child("uid"), "the pod's UID is required")...)
		for _, msg := range apivalidation.NameIsDNSSubdomain(p.Node, false) {
			allErrs = append(allErrs, field.Invalid(idx.Child("node"), p.Node, msg))
		}
	}
	return allErrs
}

// validatePodGroupStatusTransition guards the facts that the controller's
// crash-safety relies on: counts never go down, admission is recorded once,
// and Scheduled stays True.
func validatePodGroupStatusTransition(s, old *scheduling.PodGroupStatus, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if s.Succeeded < old.Succeeded {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("succeeded"), s.Succeeded, fmt.Sprintf("must not decrease (was %d): each finished pod is counted exactly once", old.Succeeded)))
	}
	if s.Failed < old.Failed {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("failed"), s.Failed, fmt.Sprintf("must not decrease (was %d): each finished pod is counted exactly once", old.Failed)))
	}
	if s.Preempted < old.Preempted {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("preempted"), s.Preempted, fmt.Sprintf("must not decrease (was %d): each finished pod is counted exactly once", old.Preempted)))
	}
	// A group preempted is admitted again later: only then may its
	// admissionTime move, and only forward.
	readmitted := meta.IsStatusConditionTrue(old.Conditions, scheduling.ConditionPreempted) &&
		s.AdmissionTime != nil && old.AdmissionTime != nil && old.AdmissionTime.Before(s.AdmissionTime)
	if old.AdmissionTime != nil && !readmitted && !apiequality.Semantic.DeepEqual(s.AdmissionTime, old.AdmissionTime) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("admissionTime"), s.AdmissionTime, "field is immutable once set, but for a later admission of a preempted group"))
	}
	if meta.IsStatusConditionTrue(old.Conditions, scheduling.ConditionScheduled) && !meta.IsStatusConditionTrue(s.Conditions, scheduling.ConditionScheduled) {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("conditions"), "condition Scheduled cannot leave True once it is True"))
	}
	return allErrs
}

// validateUniqueUID checks an entry's UID in a list keyed by UID: required
// (required says what it is), and not already in seen, which it joins.
func validateUniqueUID(uid types.UID, seen sets.Set[types.UID], fldPath *field.Path, required string) field.ErrorList {
	defer seen.Insert(uid)
	switch {
	case uid == "":
		return field.ErrorList{field.Required(fldPath, required)}
	case seen.Has(uid):
		return field.ErrorList{field.Duplicate(fldPath, uid)}
	}
	return nil
}
