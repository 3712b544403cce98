package workloadref

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/utils/ptr"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

type getter map[string]*v1alpha1.Workload

func (g getter) GetWorkload(_ context.Context, _, name string) (*v1alpha1.Workload, error) {
	if name == "broken" {
		return nil, errors.New("etcd is down")
	}
	if w, ok := g[name]; ok {
		return w, nil
	}
	return nil, apierrors.NewNotFound(scheduling.Resource("workloads"), name)
}

func TestAdmit(t *testing.T) {
	workloads := getter{"job": {Spec: v1alpha1.WorkloadSpec{PodGroupTemplates: []v1alpha1.PodGroupTemplate{
		{Name: "workers", SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: 8}}, Priority: ptr.To[int32](7)},
		{Name: "driver", SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{Basic: &v1alpha1.BasicSchedulingPolicy{}}},
		{Name: "spark", SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: 5}},
			Roles: []v1alpha1.PodGroupRole{{Name: "driver", Count: 1}, {Name: "worker", Count: 4, CreatedLater: true, Template: &v1alpha1.PodGroupRoleTemplate{NodeSelector: map[string]string{"pool": "a"}}}}},
		{Name: "zoned", SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: 3}},
			SchedulingConstraints: &v1alpha1.PodGroupSchedulingConstraints{
				Topology:          []v1alpha1.TopologyConstraint{{Key: "topology.kubernetes.io/zone"}},
				PreferredTopology: []v1alpha1.TopologyConstraint{{Key: "example.com/rack"}},
			},
			Roles: []v1alpha1.PodGroupRole{{Name: "driver", Count: 1}, {Name: "worker", Count: 2,
				SchedulingConstraints: &v1alpha1.PodGroupSchedulingConstraints{Slice: &v1alpha1.TopologySlice{Key: "example.com/rack", Size: 2}}}}},
	}}}}
	withConstraints := func(pg *scheduling.PodGroup, c *scheduling.PodGroupSchedulingConstraints) *scheduling.PodGroup {
		pg.Spec.SchedulingConstraints = c
		return pg
	}
	ref := func(wl, tpl string) *scheduling.PodGroup {
		return &scheduling.PodGroup{
			ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: "ns"},
			Spec:       scheduling.PodGroupSpec{WorkloadRef: &scheduling.WorkloadReference{WorkloadName: wl, TemplateName: tpl}},
		}
	}
	tests := []struct {
		name         string
		pg           *scheduling.PodGroup
		subresource  string
		wantMin      int32 // 0: basic; -1: no policy
		wantPriority *int32
		wantRoles    string // name:count,... of the roles the group ends with
		// wantTopology is the group's constraints as the annotations that
		// would ask for them, and each role's: "" for none.
		wantTopology, wantRoleTopology string
		wantInvalid                    string
		wantInternal                   bool
	}{
		{name: "gang policy and priority come from the template", pg: ref("job", "workers"), wantMin: 8, wantPriority: ptr.To[int32](7)},
		{name: "basic policy comes from the template", pg: ref("job", "driver"), wantMin: 0},
		{name: "roles come from the template with its policy", pg: ref("job", "spark"), wantMin: 5, wantRoles: "driver:1,worker:4"},
		{name: "an explicit policy keeps the template's roles out", pg: func() *scheduling.PodGroup {
			pg := ref("job", "spark")
			pg.Spec.SchedulingPolicy.Gang = &scheduling.GangSchedulingPolicy{MinCount: 2}
			return pg
		}(), wantMin: 2},
		{name: "an explicit policy and priority are kept", pg: func() *scheduling.PodGroup {
			pg := ref("job", "workers")
			pg.Spec.SchedulingPolicy.Gang = &scheduling.GangSchedulingPolicy{MinCount: 2}
			pg.Spec.Priority = ptr.To[int32](1)
			return pg
		}(), wantMin: 2, wantPriority: ptr.To[int32](1)},
		{name: "constraints come from the template, and roles' with the roles", pg: ref("job", "zoned"), wantMin: 3, wantRoles: "driver:1,worker:2",
			wantTopology:     "scheduling.muster.dev/topology-preferred=example.com/rack,scheduling.muster.dev/topology-required=topology.kubernetes.io/zone",
			wantRoleTopology: "driver:;worker:scheduling.muster.dev/topology-slice-key=example.com/rack,scheduling.muster.dev/topology-slice-size=2"},
		{name: "constraints come from the template beside an explicit policy", pg: func() *scheduling.PodGroup {
			pg := ref("job", "zoned")
			pg.Spec.SchedulingPolicy.Gang = &scheduling.GangSchedulingPolicy{MinCount: 2}
			return pg
		}(), wantMin: 2,
			wantTopology: "scheduling.muster.dev/topology-preferred=example.com/rack,scheduling.muster.dev/topology-required=topology.kubernetes.io/zone"},
		{name: "explicit constraints are kept", pg: withConstraints(ref("job", "zoned"), &scheduling.PodGroupSchedulingConstraints{Topology: []scheduling.TopologyConstraint{{Key: "example.com/block"}}}),
			wantMin: 3, wantRoles: "driver:1,worker:2", wantTopology: "scheduling.muster.dev/topology-required=example.com/block",
			wantRoleTopology: "driver:;worker:scheduling.muster.dev/topology-slice-key=example.com/rack,scheduling.muster.dev/topology-slice-size=2"},
		{name: "empty constraints are none, and the template's fill them", pg: withConstraints(ref("job", "zoned"), &scheduling.PodGroupSchedulingConstraints{}),
			wantMin: 3, wantRoles: "driver:1,worker:2",
			wantTopology:     "scheduling.muster.dev/topology-preferred=example.com/rack,scheduling.muster.dev/topology-required=topology.kubernetes.io/zone",
			wantRoleTopology: "driver:;worker:scheduling.muster.dev/topology-slice-key=example.com/rack,scheduling.muster.dev/topology-slice-size=2"},
		{name: "a template without constraints leaves the group without", pg: ref("job", "workers"), wantMin: 8, wantPriority: ptr.To[int32](7)},
		{name: "a missing Workload is rejected on workloadName", pg: ref("nope", "workers"), wantInvalid: "spec.workloadRef.workloadName"},
		{name: "a missing template is rejected on templateName", pg: ref("job", "nope"), wantInvalid: "spec.workloadRef.templateName"},
		{name: "a failed lookup is an internal error, not a rejection of the input", pg: ref("broken", "workers"), wantInternal: true},
		{name: "empty names are left to validation", pg: ref("", ""), wantMin: -1},
		{name: "a group without workloadRef is untouched", pg: &scheduling.PodGroup{}, wantMin: -1},
		{name: "the status subresource is untouched", pg: ref("nope", "workers"), subresource: "status", wantMin: -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := New()
			Initializer{Workloads: workloads}.Initialize(p)
			if err := p.ValidateInitialization(); err != nil {
				t.Fatal(err)
			}
			attrs := admission.NewAttributesRecord(tc.pg, nil, scheduling.Kind("PodGroup").WithVersion(""), "ns", "g",
				schema.GroupVersionResource{Group: scheduling.GroupName, Version: "v1alpha1", Resource: "podgroups"},
				tc.subresource, admission.Create, &metav1.CreateOptions{}, false, nil)
			err := p.Admit(t.Context(), attrs, nil)
			switch {
			case tc.wantInvalid != "":
				if !apierrors.IsInvalid(err) {
					t.Fatalf("err = %v, want Invalid", err)
				}
				if causes := err.(apierrors.APIStatus).Status().Details.Causes; len(causes) != 1 || causes[0].Field != tc.wantInvalid {
					t.Fatalf("causes = %+v, want one on %s", causes, tc.wantInvalid)
				}
				return
			case tc.wantInternal:
				if !apierrors.IsInternalError(err) {
					t.Fatalf("err = %v, want an internal error", err)
				}
				return
			case err != nil:
				t.Fatalf("admit: %v", err)
			}
			pol := tc.pg.Spec.SchedulingPolicy
			switch {
			case tc.wantMin == -1 && (pol.Basic != nil || pol.Gang != nil):
				t.Errorf("policy = %+v, want none", pol)
			case tc.wantMin == 0 && pol.Basic == nil:
				t.Errorf("policy = %+v, want basic", pol)
			case tc.wantMin > 0 && (pol.Gang == nil || pol.Gang.MinCount != tc.wantMin):
				t.Errorf("policy = %+v, want gang of %d", pol, tc.wantMin)
			}
			var roles []string
			for _, r := range tc.pg.Spec.Roles {
				roles = append(roles, fmt.Sprintf("%s:%d", r.Name, r.Count))
			}
			if got := strings.Join(roles, ","); got != tc.wantRoles {
				t.Errorf("roles = %q, want %q", got, tc.wantRoles)
			}
			if tc.wantRoles == "driver:1,worker:4" && (!tc.pg.Spec.Roles[1].CreatedLater || tc.pg.Spec.Roles[1].Template.NodeSelector["pool"] != "a") {
				t.Errorf("worker role = %+v, want createdLater with the template's nodeSelector", tc.pg.Spec.Roles[1])
			}
			if got := topologyOf(tc.pg.Spec.SchedulingConstraints); got != tc.wantTopology {
				t.Errorf("schedulingConstraints = %q, want %q", got, tc.wantTopology)
			}
			if tc.wantRoleTopology != "" {
				var got []string
				for _, r := range tc.pg.Spec.Roles {
					got = append(got, r.Name+":"+topologyOf(r.SchedulingConstraints))
				}
				if strings.Join(got, ";") != tc.wantRoleTopology {
					t.Errorf("roles' schedulingConstraints = %q, want %q", strings.Join(got, ";"), tc.wantRoleTopology)
				}
			}
			if !ptr.Equal(tc.pg.Spec.Priority, tc.wantPriority) {
				t.Errorf("priority = %v, want %v", ptr.Deref(tc.pg.Spec.Priority, -1), ptr.Deref(tc.wantPriority, -1))
			}
		})
	}
}

func TestNeedsAGetter(t *testing.T) {
	if err := New().ValidateInitialization(); err == nil {
		t.Error("a plugin without a Workload getter passed initialization")
	}
}

// topologyOf spells constraints as the annotations that ask for them,
// sorted: "" for none.
func topologyOf(c *scheduling.PodGroupSchedulingConstraints) string {
	ann := scheduling.TopologyAnnotationsFor(c)
	var kv []string
	for k, v := range ann {
		kv = append(kv, k+"="+v)
	}
	sort.Strings(kv)
	return strings.Join(kv, ",")
}
