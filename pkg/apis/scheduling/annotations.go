package scheduling

import "strconv"

// ParseMinCount parses the value of MinCountAnnotation: a positive 32-bit
// integer in base 10 ("08" and "+8" are 8). ok is false for anything else.
// The webhook rejects what it refuses, and the controller creates a group's
// gang policy from what it accepts.
func ParseMinCount(v string) (n int32, ok bool) {
	i, err := strconv.ParseInt(v, 10, 32)
	if err != nil || i < 1 {
		return 0, false
	}
	return int32(i), true
}

// WorkloadRefAnnotations reads the pair WorkloadAnnotation and
// TemplateAnnotation, which must be set together or not at all. set is true
// when both are; missing names the one that is absent when only the other is.
func WorkloadRefAnnotations(ann map[string]string) (workload, template string, set bool, missing string) {
	workload, hasWorkload := ann[WorkloadAnnotation]
	template, hasTemplate := ann[TemplateAnnotation]
	switch {
	case hasWorkload && !hasTemplate:
		return workload, "", false, TemplateAnnotation
	case hasTemplate && !hasWorkload:
		return "", template, false, WorkloadAnnotation
	}
	return workload, template, hasWorkload, ""
}

// ParseRoles parses the value of RolesAnnotation: how many roles the group
// has, 1 to MaxRoles. ok is false for anything else.
func ParseRoles(v string) (n int32, ok bool) {
	n, ok = ParseMinCount(v)
	return n, ok && n <= MaxRoles
}

// RoleCount is the value of RoleCountAnnotation, which is 1 when absent; ok
// is false when it is set but not a positive 32-bit integer.
func RoleCount(ann map[string]string) (n int32, ok bool) {
	v, has := ann[RoleCountAnnotation]
	if !has {
		return 1, true
	}
	return ParseMinCount(v)
}
