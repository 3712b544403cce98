package validation

import (
	"fmt"
	"strconv"
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// ValidateSchedulingConstraints checks the schedulingConstraints of a
// PodGroup, of a Workload template or of a role: topology is upstream's
// (scheduling.k8s.io), at most one level, required; preferredTopology at
// most MaxPreferredTopology distinct levels, none the required one; slice a
// level other than the required one, and a size from 1 to MaxPlacements.
// Every level is a node label key. Constraints with nothing set are the
// same as none.
func ValidateSchedulingConstraints(c *scheduling.PodGroupSchedulingConstraints, fldPath *field.Path) field.ErrorList {
	if c == nil {
		return nil
	}
	var allErrs field.ErrorList
	required := ""
	topoPath := fldPath.Child("topology")
	switch n := len(c.Topology); {
	case n > 1:
		// Each further entry would be another required level, which
		// upstream does not define: no entry is checked.
		allErrs = append(allErrs, field.TooMany(topoPath, n, 1))
	case n == 1:
		required = c.Topology[0].Key
		allErrs = append(allErrs, validateTopologyKey(required, topoPath.Index(0).Child("key"))...)
	}

	prefPath := fldPath.Child("preferredTopology")
	if n := len(c.PreferredTopology); n > scheduling.MaxPreferredTopology {
		allErrs = append(allErrs, field.TooMany(prefPath, n, scheduling.MaxPreferredTopology))
	} else {
		seen := sets.New[string]()
		for i, t := range c.PreferredTopology {
			p := prefPath.Index(i).Child("key")
			errs := validateTopologyKey(t.Key, p)
			allErrs = append(allErrs, errs...)
			switch {
			case len(errs) > 0:
			case seen.Has(t.Key):
				allErrs = append(allErrs, field.Duplicate(p, t.Key))
			case t.Key == required:
				allErrs = append(allErrs, field.Invalid(p, t.Key, scheduling.TopologyDiffersRule))
			}
			seen.Insert(t.Key)
		}
	}

	if s := c.Slice; s != nil {
		slicePath := fldPath.Child("slice")
		errs := validateTopologyKey(s.Key, slicePath.Child("key"))
		allErrs = append(allErrs, errs...)
		if len(errs) == 0 && s.Key == required {
			allErrs = append(allErrs, field.Invalid(slicePath.Child("key"), s.Key, scheduling.TopologyDiffersRule))
		}
		if s.Size < 1 || s.Size > scheduling.MaxPlacements {
			allErrs = append(allErrs, field.Invalid(slicePath.Child("size"), s.Size, scheduling.TopologySliceSizeRule))
		}
	}
	return allErrs
}

// validateTopologyKey checks a level of the topology: a node label key,
// as upstream checks its topology keys.
func validateTopologyKey(key string, fldPath *field.Path) field.ErrorList {
	if key == "" {
		return field.ErrorList{field.Required(fldPath, scheduling.TopologyKeyRequired)}
	}
	return metav1validation.ValidateLabelName(key, fldPath)
}

// validateTopologyDomain checks status.topologyDomain (and a role's): a
// node label key and one of its values.
func validateTopologyDomain(d *scheduling.TopologyDomain, fldPath *field.Path) field.ErrorList {
	if d == nil {
		return nil
	}
	allErrs := validateTopologyKey(d.Key, fldPath.Child("key"))
	for _, msg := range utilvalidation.IsValidLabelValue(d.Value) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("value"), d.Value, msg))
	}
	return allErrs
}

// validateConstraintsUnchanged keeps schedulingConstraints as they were
// created; constraints with nothing set are the same as none.
func validateConstraintsUnchanged(c, old *scheduling.PodGroupSchedulingConstraints, fldPath *field.Path) field.ErrorList {
	if !scheduling.HasSchedulingConstraints(c) {
		c = nil
	}
	if !scheduling.HasSchedulingConstraints(old) {
		old = nil
	}
	return apivalidation.ValidateImmutableField(c, old, fldPath)
}

// podAnnotationsPath is where errors about a pod's annotations point.
var podAnnotationsPath = field.NewPath("metadata", "annotations")

// TopologyFromAnnotations reads a pod's topology annotations
// (scheduling.TopologyAnnotations) into the schedulingConstraints of the
// PodGroup created from the pod: nil, nil when it carries none. The error,
// when they are invalid, holds the errors of ValidateTopologyAnnotations,
// each naming its annotation and the rule.
func TopologyFromAnnotations(ann map[string]string) (*scheduling.PodGroupSchedulingConstraints, error) {
	c, errs := topologyFromAnnotations(ann, podAnnotationsPath)
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return c, nil
}

// ValidateTopologyAnnotations checks a pod's topology annotations, whose
// map is at fldPath, by the rules of ValidateSchedulingConstraints: a
// required level, up to MaxPreferredTopology preferred ones
// (comma-separated, blanks around each ignored), and a slice's key and
// size, set together. Each error names the annotation, in place of the
// field.
func ValidateTopologyAnnotations(ann map[string]string, fldPath *field.Path) field.ErrorList {
	_, errs := topologyFromAnnotations(ann, fldPath)
	return errs
}

// topologyFromAnnotations reads and checks the topology annotations.
func topologyFromAnnotations(ann map[string]string, fldPath *field.Path) (*scheduling.PodGroupSchedulingConstraints, field.ErrorList) {
	if !scheduling.HasTopologyAnnotations(ann) {
		return nil, nil
	}
	var allErrs field.ErrorList
	c := &scheduling.PodGroupSchedulingConstraints{}
	if v, ok := ann[scheduling.TopologyRequiredAnnotation]; ok {
		c.Topology = []scheduling.TopologyConstraint{{Key: v}}
	}
	if v, ok := ann[scheduling.TopologyPreferredAnnotation]; ok {
		for _, k := range strings.Split(v, ",") {
			c.PreferredTopology = append(c.PreferredTopology, scheduling.TopologyConstraint{Key: strings.TrimSpace(k)})
		}
	}
	key, hasKey := ann[scheduling.TopologySliceKeyAnnotation]
	size, hasSize := ann[scheduling.TopologySliceSizeAnnotation]
	keyPath, sizePath := fldPath.Key(scheduling.TopologySliceKeyAnnotation), fldPath.Key(scheduling.TopologySliceSizeAnnotation)
	switch {
	case hasKey && !hasSize:
		allErrs = append(allErrs, field.Required(sizePath, fmt.Sprintf("must be set when %s is set", scheduling.TopologySliceKeyAnnotation)))
	case hasSize && !hasKey:
		allErrs = append(allErrs, field.Required(keyPath, fmt.Sprintf("must be set when %s is set", scheduling.TopologySliceSizeAnnotation)))
	}
	if hasKey || hasSize {
		// A size that is missing or no number is said above or here, and
		// stands in as 1 so that the key is still checked; the errors about
		// a missing key are left out below.
		c.Slice = &scheduling.TopologySlice{Key: key, Size: 1}
		if hasSize {
			n, err := strconv.ParseInt(size, 10, 32)
			if err != nil {
				allErrs = append(allErrs, field.Invalid(sizePath, size, scheduling.TopologySliceSizeRule))
			} else {
				c.Slice.Size = int32(n)
			}
		}
	}

	for _, e := range ValidateSchedulingConstraints(c, nil) {
		name := topologyAnnotationOf(e.Field)
		v, set := ann[name]
		if !set {
			continue
		}
		wrapped := *e
		wrapped.Field = fldPath.Key(name).String()
		if name == scheduling.TopologySliceSizeAnnotation {
			wrapped.BadValue = v // the annotation's text, not the number read from it
		}
		allErrs = append(allErrs, &wrapped)
	}
	if len(allErrs) > 0 {
		return nil, allErrs
	}
	return c, nil
}

// topologyAnnotationOf names the annotation that gives the field of
// schedulingConstraints at path (relative to the constraints).
func topologyAnnotationOf(path string) string {
	switch {
	case strings.HasPrefix(path, "topology"):
		return scheduling.TopologyRequiredAnnotation
	case strings.HasPrefix(path, "preferredTopology"):
		return scheduling.TopologyPreferredAnnotation
	case strings.HasPrefix(path, "slice.size"):
		return scheduling.TopologySliceSizeAnnotation
	default:
		return scheduling.TopologySliceKeyAnnotation
	}
}
