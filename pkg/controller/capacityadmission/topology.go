package capacityadmission

import (
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/controller/admission"
	"github.com/muster-dev/muster/pkg/controller/capacity"
)

// gangTopology is where a gang that is not admitted must, or would rather,
// go: its spec.schedulingConstraints and those of its roles; nil when it
// has none.
func gangTopology(pg *v1alpha1.PodGroup) *capacity.Topology {
	t := constraintTopology(pg.Spec.SchedulingConstraints)
	for _, r := range pg.Spec.Roles {
		rt := constraintTopology(r.SchedulingConstraints)
		if rt == nil {
			continue
		}
		if t == nil {
			t = &capacity.Topology{}
		}
		if t.Roles == nil {
			t.Roles = map[string]*capacity.Topology{}
		}
		t.Roles[r.Name] = rt
	}
	return t
}

// constraintTopology is one set of constraints as placement takes them:
// the preferred levels in order, then the required one.
func constraintTopology(c *v1alpha1.PodGroupSchedulingConstraints) *capacity.Topology {
	if c == nil || (len(c.Topology) == 0 && len(c.PreferredTopology) == 0 && c.Slice == nil) {
		return nil
	}
	t := &capacity.Topology{}
	for _, l := range c.PreferredTopology {
		t.Levels = append(t.Levels, l.Key)
	}
	if len(c.Topology) > 0 {
		t.Levels, t.Required = append(t.Levels, c.Topology[0].Key), true
	}
	if c.Slice != nil {
		t.SliceKey, t.SliceSize = c.Slice.Key, int(c.Slice.Size)
	}
	return t
}

// joinerTopology is where the pods that join an admitted group go: the
// domains its status records for it and its roles. A group admitted with
// no domain (its preferred levels had none with room, or it has no
// constraints) places its joiners anywhere. Slices are not kept: which
// slice a replacement belonged to is not recorded.
func joinerTopology(pg *v1alpha1.PodGroup) *capacity.Topology {
	var t *capacity.Topology
	if d := pg.Status.TopologyDomain; d != nil {
		t = &capacity.Topology{In: &capacity.Domain{Key: d.Key, Value: d.Value}}
	}
	for _, r := range pg.Status.Roles {
		if r.TopologyDomain == nil {
			continue
		}
		if t == nil {
			t = &capacity.Topology{}
		}
		if t.Roles == nil {
			t.Roles = map[string]*capacity.Topology{}
		}
		t.Roles[r.Name] = &capacity.Topology{In: &capacity.Domain{Key: r.TopologyDomain.Key, Value: r.TopologyDomain.Value}}
	}
	return t
}

// setDomains copies the domains a cycle placed the gang in into what its
// status is to hold.
func setDomains(p *admission.Places, v capacity.Verdict) {
	p.Domains = true
	if v.Domain != nil {
		p.TopologyDomain = &v1alpha1.TopologyDomain{Key: v.Domain.Key, Value: v.Domain.Value}
	}
	for role, d := range v.RoleDomains {
		if p.RoleDomains == nil {
			p.RoleDomains = map[string]v1alpha1.TopologyDomain{}
		}
		p.RoleDomains[role] = v1alpha1.TopologyDomain{Key: d.Key, Value: d.Value}
	}
}
