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
