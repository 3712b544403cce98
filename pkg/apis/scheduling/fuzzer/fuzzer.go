// Package fuzzer fills scheduling.muster.dev objects with random but valid
// values for the round-trip tests of the scheme.
package fuzzer

import (
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/randfill"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// Funcs returns the fill functions of the scheduling.muster.dev group. A
// random policy would often set both union members or none, which no client
// can send, so the policy always gets exactly one.
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
	}
}
