// Package fuzzer fills scheduling.muster.dev objects with random but valid
// values for the round-trip tests of the scheme.
package fuzzer

import (
	"fmt"

	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/randfill"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// levels are node label keys, from which schedulingConstraints and
// topology domains are filled.
var levels = []string{
	"topology.kubernetes.io/region", "topology.kubernetes.io/zone", "example.com/block",
	"example.com/rack", "kubernetes.io/hostname", "example.com/nvlink-domain",
}

// Funcs returns the fill functions of the scheduling.muster.dev group. A
// random policy would often set both union members or none, which no client
// can send, so the policy always gets exactly one. Scheduling constraints
// get distinct levels in the numbers validation allows, and topology
// domains a level and a label value.
var Funcs = func(codecs runtimeserializer.CodecFactory) []interface{} {
	return []interface{}{
		func(p *scheduling.PodGroupSchedulingPolicy, c randfill.Continue) {
			*p = scheduling.PodGroupSchedulingPolicy{}
			if c.Bool() {
				p.Basic = &scheduling.BasicSchedulingPolicy{}
				return
			}
			p.Gang = &scheduling.GangSchedulingPolicy{MinCount: 1 + c.Int31n(1000)}
		},
		func(sc *scheduling.PodGroupSchedulingConstraints, c randfill.Continue) {
			*sc = scheduling.PodGroupSchedulingConstraints{}
			order := c.Perm(len(levels))
			next := func() string {
				k := levels[order[0]]
				order = order[1:]
				return k
			}
			if c.Bool() {
				sc.Topology = []scheduling.TopologyConstraint{{Key: next()}}
			}
			for range c.Intn(scheduling.MaxPreferredTopology + 1) {
				sc.PreferredTopology = append(sc.PreferredTopology, scheduling.TopologyConstraint{Key: next()})
			}
			if c.Bool() {
				sc.Slice = &scheduling.TopologySlice{Key: next(), Size: 1 + c.Int31n(scheduling.MaxPlacements)}
			}
		},
		func(d *scheduling.TopologyDomain, c randfill.Continue) {
			*d = scheduling.TopologyDomain{Key: levels[c.Intn(len(levels))], Value: fmt.Sprintf("domain-%d", c.Intn(1000))}
		},
	}
}
