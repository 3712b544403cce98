package capacityadmission

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/controller/admission"
	"github.com/muster-dev/muster/pkg/controller/capacity"
)

func TestGangTopology(t *testing.T) {
	rack := []v1alpha1.TopologyConstraint{{Key: "rack"}}
	tests := []struct {
		name string
		spec v1alpha1.PodGroupSpec
		want *capacity.Topology
	}{
		{name: "no constraints: no topology", want: nil},
		{name: "empty constraints: no topology", spec: v1alpha1.PodGroupSpec{SchedulingConstraints: &v1alpha1.PodGroupSchedulingConstraints{}}, want: nil},
		{
			name: "topology is required",
			spec: v1alpha1.PodGroupSpec{SchedulingConstraints: &v1alpha1.PodGroupSchedulingConstraints{Topology: []v1alpha1.TopologyConstraint{{Key: "block"}}}},
			want: &capacity.Topology{Levels: []string{"block"}, Required: true},
		},
		{
			name: "preferred levels come first, in order, then the required one",
			spec: v1alpha1.PodGroupSpec{SchedulingConstraints: &v1alpha1.PodGroupSchedulingConstraints{
				Topology: []v1alpha1.TopologyConstraint{{Key: "zone"}}, PreferredTopology: []v1alpha1.TopologyConstraint{{Key: "rack"}, {Key: "block"}}}},
			want: &capacity.Topology{Levels: []string{"rack", "block", "zone"}, Required: true},
		},
		{
			name: "preferred alone is not required",
			spec: v1alpha1.PodGroupSpec{SchedulingConstraints: &v1alpha1.PodGroupSchedulingConstraints{PreferredTopology: rack}},
			want: &capacity.Topology{Levels: []string{"rack"}},
		},
		{
			name: "a slice",
			spec: v1alpha1.PodGroupSpec{SchedulingConstraints: &v1alpha1.PodGroupSchedulingConstraints{
				Topology: []v1alpha1.TopologyConstraint{{Key: "block"}}, Slice: &v1alpha1.TopologySlice{Key: "rack", Size: 8}}},
			want: &capacity.Topology{Levels: []string{"block"}, Required: true, SliceKey: "rack", SliceSize: 8},
		},
		{
			name: "a role's constraints, with none for the gang",
			spec: v1alpha1.PodGroupSpec{Roles: []v1alpha1.PodGroupRole{
				{Name: "driver", Count: 1}, {Name: "worker", Count: 8, SchedulingConstraints: &v1alpha1.PodGroupSchedulingConstraints{Topology: rack}}}},
			want: &capacity.Topology{Roles: map[string]*capacity.Topology{"worker": {Levels: []string{"rack"}, Required: true}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, gangTopology(&v1alpha1.PodGroup{Spec: tc.spec})); diff != "" {
				t.Errorf("topology (-want +got):\n%s", diff)
			}
		})
	}
}

func TestJoinerTopology(t *testing.T) {
	rack := &v1alpha1.TopologyDomain{Key: "rack", Value: "r1"}
	tests := []struct {
		name   string
		status v1alpha1.PodGroupStatus
		want   *capacity.Topology
	}{
		{name: "admitted in no domain: joiners go anywhere", want: nil},
		{name: "joiners go in the group's domain", status: v1alpha1.PodGroupStatus{TopologyDomain: rack},
			want: &capacity.Topology{In: &capacity.Domain{Key: "rack", Value: "r1"}}},
		{name: "a role's joiners go in the role's domain", status: v1alpha1.PodGroupStatus{Roles: []v1alpha1.PodGroupRoleStatus{{Name: "d"}, {Name: "w", TopologyDomain: rack}}},
			want: &capacity.Topology{Roles: map[string]*capacity.Topology{"w": {In: &capacity.Domain{Key: "rack", Value: "r1"}}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, joinerTopology(&v1alpha1.PodGroup{Status: tc.status})); diff != "" {
				t.Errorf("topology (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSetDomains(t *testing.T) {
	var p admission.Places
	setDomains(&p, capacity.Verdict{Domain: &capacity.Domain{Key: "block", Value: "b1"}, RoleDomains: map[string]capacity.Domain{"w": {Key: "rack", Value: "r2"}}})
	want := admission.Places{Domains: true, TopologyDomain: &v1alpha1.TopologyDomain{Key: "block", Value: "b1"},
		RoleDomains: map[string]v1alpha1.TopologyDomain{"w": {Key: "rack", Value: "r2"}}}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("places (-want +got):\n%s", diff)
	}
	// A gang admitted in no domain clears what an earlier admission recorded.
	var none admission.Places
	setDomains(&none, capacity.Verdict{})
	if !none.Domains || none.TopologyDomain != nil {
		t.Errorf("places %+v: want Domains set and no domain", none)
	}
}
