package scheduling

import (
	"strconv"
	"strings"
)

// Topology-aware gangs. A PodGroup's spec.schedulingConstraints (and a
// role's) say which nodes its pods must, or would rather, share: a level
// of the topology is a node label key, and a domain of it the nodes that
// share one value of that label. Pods-only users say the same through the
// topology annotations on the pod the controller creates the group from;
// validation.TopologyFromAnnotations reads them, with the bounds and
// messages of validation.ValidateSchedulingConstraints.

// TopologyAnnotations are the pod annotations that give a created group
// its schedulingConstraints.
var TopologyAnnotations = []string{
	TopologyRequiredAnnotation, TopologyPreferredAnnotation, TopologySliceKeyAnnotation, TopologySliceSizeAnnotation,
}

// HasTopologyAnnotations reports whether ann holds any of
// TopologyAnnotations.
func HasTopologyAnnotations(ann map[string]string) bool {
	for _, k := range TopologyAnnotations {
		if _, ok := ann[k]; ok {
			return true
		}
	}
	return false
}

// HasSchedulingConstraints reports whether c asks for anything: an empty
// constraints object means the same as none.
func HasSchedulingConstraints(c *PodGroupSchedulingConstraints) bool {
	return c != nil && (len(c.Topology) > 0 || len(c.PreferredTopology) > 0 || c.Slice != nil)
}

// TopologyAnnotationsFor is the inverse of reading the topology
// annotations: the annotations that ask for c, or nil when c asks for
// nothing. It is how a pod is told what its group's constraints are.
func TopologyAnnotationsFor(c *PodGroupSchedulingConstraints) map[string]string {
	if !HasSchedulingConstraints(c) {
		return nil
	}
	ann := map[string]string{}
	if len(c.Topology) > 0 {
		ann[TopologyRequiredAnnotation] = c.Topology[0].Key
	}
	if len(c.PreferredTopology) > 0 {
		keys := make([]string, len(c.PreferredTopology))
		for i, t := range c.PreferredTopology {
			keys[i] = t.Key
		}
		ann[TopologyPreferredAnnotation] = strings.Join(keys, ",")
	}
	if s := c.Slice; s != nil {
		ann[TopologySliceKeyAnnotation] = s.Key
		ann[TopologySliceSizeAnnotation] = strconv.Itoa(int(s.Size))
	}
	return ann
}
