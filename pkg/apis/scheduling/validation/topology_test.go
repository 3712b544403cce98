package validation

import (
	"strings"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

const (
	zone = "topology.kubernetes.io/zone"
	rack = "example.com/rack"
	host = "kubernetes.io/hostname"
)

// sc builds constraints: required is topology's keys, preferred
// preferredTopology's; a slice is added with withSlice.
func sc(required []string, preferred ...string) *scheduling.PodGroupSchedulingConstraints {
	c := &scheduling.PodGroupSchedulingConstraints{}
	for _, k := range required {
		c.Topology = append(c.Topology, scheduling.TopologyConstraint{Key: k})
	}
	for _, k := range preferred {
		c.PreferredTopology = append(c.PreferredTopology, scheduling.TopologyConstraint{Key: k})
	}
	return c
}

func withSlice(c *scheduling.PodGroupSchedulingConstraints, key string, size int32) *scheduling.PodGroupSchedulingConstraints {
	c.Slice = &scheduling.TopologySlice{Key: key, Size: size}
	return c
}

func constraints(c *scheduling.PodGroupSchedulingConstraints) func(*scheduling.PodGroup) {
	return func(pg *scheduling.PodGroup) { pg.Spec.SchedulingConstraints = c }
}

func roleConstraints(r scheduling.PodGroupRole, c *scheduling.PodGroupSchedulingConstraints) scheduling.PodGroupRole {
	r.SchedulingConstraints = c
	return r
}

func templateConstraints(i int, c *scheduling.PodGroupSchedulingConstraints) func(*scheduling.Workload) {
	return template(i, func(t *scheduling.PodGroupTemplate) { t.SchedulingConstraints = c })
}

// TestValidateSchedulingConstraints checks spec.schedulingConstraints of a
// PodGroup, one rule a line.
func TestValidateSchedulingConstraints(t *testing.T) {
	const p = "spec.schedulingConstraints"
	tests := []struct {
		name string
		c    *scheduling.PodGroupSchedulingConstraints
		want []want
	}{
		{"no constraints are valid", nil, nil},
		{"constraints with nothing set are the same as none", sc(nil), nil},
		{"one required level is valid, as upstream's topology", sc([]string{zone}), nil},
		{"required, preferred and a slice together are valid", withSlice(sc([]string{zone}, host, rack), rack, 4), nil},
		{"preferred levels without a required one are valid", sc(nil, rack, zone), nil},
		{"a slice without a required level is valid", withSlice(sc(nil), rack, 1), nil},
		{"a slice may use a preferred level's key", withSlice(sc([]string{zone}, rack), rack, 8), nil},
		{"a key without a prefix is valid", sc([]string{"rack"}), nil},

		{"topology holds at most one level", sc([]string{zone, rack}), []want{tooMany(p + ".topology")}},
		{"topology's key is required", sc([]string{""}), []want{required(p + ".topology[0].key")}},
		{"topology's key must be a label key", sc([]string{"not a key"}), []want{invalid(p + ".topology[0].key")}},
		{"topology's key has at most one slash", sc([]string{"a/b/c"}), []want{invalid(p + ".topology[0].key")}},
		{"topology's key prefix must be a DNS subdomain", sc([]string{"Example_Com/rack"}), []want{invalid(p + ".topology[0].key")}},
		{"topology's key name is at most 63 characters", sc([]string{"example.com/" + strings.Repeat("r", 64)}), []want{invalid(p + ".topology[0].key")}},

		{"4 preferred levels are valid", sc(nil, "a", "b", "c", "d"), nil},
		{"5 preferred levels are too many", sc(nil, "a", "b", "c", "d", "e"), []want{tooMany(p + ".preferredTopology")}},
		{"too many preferred levels are not checked one by one", sc(nil, "", "", "", "", ""), []want{tooMany(p + ".preferredTopology")}},
		{"a preferred key is required", sc(nil, rack, ""), []want{required(p + ".preferredTopology[1].key")}},
		{"a preferred key must be a label key", sc(nil, "rack!"), []want{invalid(p + ".preferredTopology[0].key")}},
		{"preferred keys are unique", sc(nil, rack, host, rack), []want{duplicate(p + ".preferredTopology[2].key")}},
		{"a preferred key is not the required one", sc([]string{zone}, rack, zone), []want{invalid(p + ".preferredTopology[1].key")}},

		{"a slice's key is required", withSlice(sc(nil), "", 2), []want{required(p + ".slice.key")}},
		{"a slice's key must be a label key", withSlice(sc(nil), "rack!", 2), []want{invalid(p + ".slice.key")}},
		{"a slice's key is not the required one", withSlice(sc([]string{zone}), zone, 2), []want{invalid(p + ".slice.key")}},
		{"a slice's size is at least 1", withSlice(sc(nil), rack, 0), []want{invalid(p + ".slice.size")}},
		{"a slice's size is not negative", withSlice(sc(nil), rack, -1), []want{invalid(p + ".slice.size")}},
		{"a slice's size may be MaxPlacements", withSlice(sc(nil), rack, scheduling.MaxPlacements), nil},
		{"a slice's size is at most MaxPlacements", withSlice(sc(nil), rack, scheduling.MaxPlacements+1), []want{invalid(p + ".slice.size")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, ValidatePodGroup(podGroup(constraints(tc.c))), tc.want...)
		})
	}
}

// TestSchedulingConstraintsEverywhere: the same rules hold for a role's
// constraints and a Workload template's, at their own paths, and a role's
// only in a gang, as every role is.
func TestSchedulingConstraintsEverywhere(t *testing.T) {
	bad := sc([]string{zone, rack})
	good := sc([]string{rack})
	tests := []struct {
		name string
		errs field.ErrorList
		want []want
	}{
		{"a role's constraints are valid", ValidatePodGroup(podGroup(roles(3, role("driver", 1), roleConstraints(role("worker", 2), good)))), nil},
		{"a role's constraints are checked at the role", ValidatePodGroup(podGroup(roles(3, role("driver", 1), roleConstraints(role("worker", 2), bad)))),
			[]want{tooMany("spec.roles[1].schedulingConstraints.topology")}},
		{"a role with constraints needs a gang, as every role does", ValidatePodGroup(podGroup(func(pg *scheduling.PodGroup) {
			pg.Spec.SchedulingPolicy = basic()
			pg.Spec.Roles = []scheduling.PodGroupRole{roleConstraints(role("worker", 2), good)}
		})), []want{invalid("spec.schedulingPolicy")}},
		{"a role of a roles template is checked too", func() field.ErrorList {
			_, errs := RolesFromTemplate(`[{"name":"worker","count":2,"template":{},"schedulingConstraints":{"topology":[{"key":"a"},{"key":"b"}]}}]`, "driver", 1, field.NewPath("ann"))
			return errs
		}(), []want{tooMany("ann[0].schedulingConstraints.topology")}},
		{"a template's constraints are valid", ValidateWorkload(workload(templateConstraints(0, good))), nil},
		{"a template's constraints are checked at the template", ValidateWorkload(workload(templateConstraints(0, bad))),
			[]want{tooMany("spec.podGroupTemplates[0].schedulingConstraints.topology")}},
		{"a template's role's constraints are checked at the role", ValidateWorkload(workload(template(0, func(t *scheduling.PodGroupTemplate) {
			t.SchedulingPolicy = gang(2)
			t.Roles = []scheduling.PodGroupRole{roleConstraints(role("worker", 2), withSlice(sc(nil), rack, 0))}
		}))), []want{invalid("spec.podGroupTemplates[0].roles[0].schedulingConstraints.slice.size")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, tc.errs, tc.want...)
		})
	}
}

// TestSchedulingConstraintsImmutable: a group's constraints, and its
// roles', are fixed at creation, as are a Workload template's.
func TestSchedulingConstraintsImmutable(t *testing.T) {
	withRole := func(c *scheduling.PodGroupSchedulingConstraints) func(*scheduling.PodGroup) {
		return roles(3, role("driver", 1), roleConstraints(role("worker", 2), c))
	}
	withRoleCount := func(n int32, c *scheduling.PodGroupSchedulingConstraints) func(*scheduling.PodGroup) {
		return roles(1+n, role("driver", 1), roleConstraints(role("worker", n), c))
	}
	tests := []struct {
		name string
		errs field.ErrorList
		want []want
	}{
		{"unchanged constraints are valid", ValidatePodGroupUpdate(podGroup(constraints(sc([]string{zone}))), podGroup(constraints(sc([]string{zone})))), nil},
		{"empty constraints are the same as none", ValidatePodGroupUpdate(podGroup(constraints(sc(nil))), podGroup()), nil},
		{"constraints cannot be set after creation", ValidatePodGroupUpdate(podGroup(constraints(sc([]string{zone}))), podGroup()),
			[]want{invalid("spec.schedulingConstraints")}},
		{"constraints cannot be removed", ValidatePodGroupUpdate(podGroup(), podGroup(constraints(sc([]string{zone})))),
			[]want{invalid("spec.schedulingConstraints")}},
		{"the required level cannot change", ValidatePodGroupUpdate(podGroup(constraints(sc([]string{rack}))), podGroup(constraints(sc([]string{zone})))),
			[]want{invalid("spec.schedulingConstraints")}},
		{"a slice's size cannot change", ValidatePodGroupUpdate(podGroup(constraints(withSlice(sc(nil), rack, 4))), podGroup(constraints(withSlice(sc(nil), rack, 2)))),
			[]want{invalid("spec.schedulingConstraints")}},

		{"a role's constraints may stay while its count changes", ValidatePodGroupUpdate(podGroup(withRoleCount(4, sc([]string{rack}))), podGroup(withRoleCount(2, sc([]string{rack})))), nil},
		{"a role's constraints cannot change", ValidatePodGroupUpdate(podGroup(withRole(sc([]string{host}))), podGroup(withRole(sc([]string{rack})))),
			[]want{invalid("spec.roles[1].schedulingConstraints")}},
		{"a role's constraints cannot be added", ValidatePodGroupUpdate(podGroup(withRole(sc([]string{host}))), podGroup(withRole(nil))),
			[]want{invalid("spec.roles[1].schedulingConstraints")}},

		{"a template's constraints cannot change: only schedulingPolicy may", ValidateWorkloadUpdate(workload(templateConstraints(0, sc([]string{rack}))), workload(templateConstraints(0, sc([]string{zone})))),
			[]want{forbidden("spec.podGroupTemplates[0]")}},
		{"a template's constraints cannot be added", ValidateWorkloadUpdate(workload(templateConstraints(0, sc([]string{rack}))), workload()),
			[]want{forbidden("spec.podGroupTemplates[0]")}},
		{"a template's empty constraints are the same as none", ValidateWorkloadUpdate(workload(templateConstraints(0, sc(nil))), workload()), nil},
		{"a template's policy may still change beside its constraints", ValidateWorkloadUpdate(
			workload(templateConstraints(0, sc([]string{rack})), templatePolicy(0, gang(8))), workload(templateConstraints(0, sc([]string{rack})))), nil},
		{"a template's role's constraints cannot change", ValidateWorkloadUpdate(
			workload(template(0, func(t *scheduling.PodGroupTemplate) {
				t.SchedulingPolicy = gang(2)
				t.Roles = []scheduling.PodGroupRole{roleConstraints(role("worker", 2), sc([]string{rack}))}
			})),
			workload(template(0, func(t *scheduling.PodGroupTemplate) {
				t.SchedulingPolicy = gang(2)
				t.Roles = []scheduling.PodGroupRole{roleConstraints(role("worker", 2), sc([]string{host}))}
			}))),
			[]want{invalid("spec.podGroupTemplates[0].roles[0].schedulingConstraints")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, tc.errs, tc.want...)
		})
	}
	// The message is apimachinery's, as for workloadRef.
	errs := ValidatePodGroupUpdate(podGroup(constraints(sc([]string{zone}))), podGroup())
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "field is immutable") {
		t.Errorf("want one error saying the field is immutable, got %v", errs)
	}
}

// TestValidateTopologyDomain checks status.topologyDomain and each role's.
func TestValidateTopologyDomain(t *testing.T) {
	domain := func(key, value string) *scheduling.TopologyDomain {
		return &scheduling.TopologyDomain{Key: key, Value: value}
	}
	group := func(d *scheduling.TopologyDomain) scheduling.PodGroupStatus {
		return scheduling.PodGroupStatus{TopologyDomain: d}
	}
	ofRole := func(d *scheduling.TopologyDomain) scheduling.PodGroupStatus {
		return scheduling.PodGroupStatus{Roles: []scheduling.PodGroupRoleStatus{{Name: "worker", TopologyDomain: d}}}
	}
	tests := []struct {
		name   string
		status scheduling.PodGroupStatus
		want   []want
	}{
		{"no domain is valid", group(nil), nil},
		{"a zone is a valid domain", group(domain(zone, "us-east-1a")), nil},
		{"an empty label value is a valid domain", group(domain(rack, "")), nil},
		{"a domain's key is required", group(domain("", "a")), []want{required("status.topologyDomain.key")}},
		{"a domain's key must be a label key", group(domain("not a key", "a")), []want{invalid("status.topologyDomain.key")}},
		{"a domain's value must be a label value", group(domain(zone, "us east")), []want{invalid("status.topologyDomain.value")}},
		{"a domain's value is at most 63 characters", group(domain(zone, strings.Repeat("a", 64))), []want{invalid("status.topologyDomain.value")}},
		{"a role's domain is valid", ofRole(domain(rack, "r1")), nil},
		{"a role's domain's key is required", ofRole(domain("", "r1")), []want{required("status.roles[0].topologyDomain.key")}},
		{"a role's domain's value must be a label value", ofRole(domain(rack, "r/1")), []want{invalid("status.roles[0].topologyDomain.value")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := podGroup(roles(2, role("worker", 2)))
			pg := podGroup(roles(2, role("worker", 2)), func(pg *scheduling.PodGroup) { pg.Status = tc.status })
			expectErrors(t, ValidatePodGroupStatusUpdate(pg, old), tc.want...)
		})
	}
}

// TestTopologyFromAnnotations reads the topology annotations of a pod,
// one rule a line: each error names the annotation, with the rule of the
// field it gives.
func TestTopologyFromAnnotations(t *testing.T) {
	const (
		req    = "metadata.annotations[" + scheduling.TopologyRequiredAnnotation + "]"
		pref   = "metadata.annotations[" + scheduling.TopologyPreferredAnnotation + "]"
		sKey   = "metadata.annotations[" + scheduling.TopologySliceKeyAnnotation + "]"
		sSize  = "metadata.annotations[" + scheduling.TopologySliceSizeAnnotation + "]"
		reqA   = scheduling.TopologyRequiredAnnotation
		prefA  = scheduling.TopologyPreferredAnnotation
		sKeyA  = scheduling.TopologySliceKeyAnnotation
		sSizeA = scheduling.TopologySliceSizeAnnotation
	)
	tests := []struct {
		name string
		ann  map[string]string
		c    *scheduling.PodGroupSchedulingConstraints
		want []want
	}{
		{"no annotations ask for nothing", nil, nil, nil},
		{"other annotations ask for nothing", map[string]string{scheduling.MinCountAnnotation: "4"}, nil, nil},
		{"a required level", map[string]string{reqA: zone}, sc([]string{zone}), nil},
		{"preferred levels, narrowest first", map[string]string{prefA: host + "," + rack}, sc(nil, host, rack), nil},
		{"blanks around preferred levels are ignored", map[string]string{prefA: " " + host + " , " + rack}, sc(nil, host, rack), nil},
		{"a slice", map[string]string{sKeyA: rack, sSizeA: "4"}, withSlice(sc(nil), rack, 4), nil},
		{"a slice's size in base 10, as min-count", map[string]string{sKeyA: rack, sSizeA: "08"}, withSlice(sc(nil), rack, 8), nil},
		{"all of them", map[string]string{reqA: zone, prefA: host + "," + rack, sKeyA: rack, sSizeA: "2"}, withSlice(sc([]string{zone}, host, rack), rack, 2), nil},

		{"the required level must be a label key", map[string]string{reqA: "a zone"}, nil, []want{invalid(req)}},
		{"the required level must not be empty", map[string]string{reqA: ""}, nil, []want{required(req)}},
		{"at most 4 preferred levels", map[string]string{prefA: "a,b,c,d,e"}, nil, []want{tooMany(pref)}},
		{"every preferred level is a label key", map[string]string{prefA: "a,b c"}, nil, []want{invalid(pref)}},
		{"no preferred level is empty", map[string]string{prefA: "a,,b"}, nil, []want{required(pref)}},
		{"an empty preferred annotation names no level", map[string]string{prefA: ""}, nil, []want{required(pref)}},
		{"preferred levels are unique", map[string]string{prefA: "a,b,a"}, nil, []want{duplicate(pref)}},
		{"a preferred level is not the required one", map[string]string{reqA: zone, prefA: rack + "," + zone}, nil, []want{invalid(pref)}},
		{"a slice's key needs its size", map[string]string{sKeyA: rack}, nil, []want{required(sSize)}},
		{"a slice's size needs its key", map[string]string{sSizeA: "4"}, nil, []want{required(sKey)}},
		{"a slice's key alone is still checked", map[string]string{sKeyA: "a rack"}, nil, []want{required(sSize), invalid(sKey)}},
		{"a slice's size alone is still checked", map[string]string{sSizeA: "0"}, nil, []want{required(sKey), invalid(sSize)}},
		{"a slice's key must be a label key", map[string]string{sKeyA: "rack!", sSizeA: "4"}, nil, []want{invalid(sKey)}},
		{"a slice's key is not the required one", map[string]string{reqA: zone, sKeyA: zone, sSizeA: "4"}, nil, []want{invalid(sKey)}},
		{"a slice's size must be a number", map[string]string{sKeyA: rack, sSizeA: "four"}, nil, []want{invalid(sSize)}},
		{"a slice's size is at least 1", map[string]string{sKeyA: rack, sSizeA: "0"}, nil, []want{invalid(sSize)}},
		{"a slice's size is at most MaxPlacements", map[string]string{sKeyA: rack, sSizeA: "5001"}, nil, []want{invalid(sSize)}},
		{"a slice's size past int32 is refused", map[string]string{sKeyA: rack, sSizeA: "2147483648"}, nil, []want{invalid(sSize)}},
		{"every bad annotation is named", map[string]string{reqA: "", prefA: "a,a", sKeyA: "k", sSizeA: "-1"}, nil,
			[]want{required(req), duplicate(pref), invalid(sSize)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateTopologyAnnotations(tc.ann, field.NewPath("metadata", "annotations"))
			expectErrors(t, errs, tc.want...)
			c, err := TopologyFromAnnotations(tc.ann)
			if (err != nil) != (len(tc.want) > 0) {
				t.Fatalf("TopologyFromAnnotations error = %v, want an error: %v", err, len(tc.want) > 0)
			}
			if !apiequality.Semantic.DeepEqual(c, tc.c) {
				t.Errorf("TopologyFromAnnotations = %+v, want %+v", c, tc.c)
			}
		})
	}
}

// TestTopologyAnnotationMessages: an annotation's error says what the
// field's error says, with the annotation in place of the field, and the
// annotation's text as the bad value.
func TestTopologyAnnotationMessages(t *testing.T) {
	tests := []struct {
		ann  map[string]string
		want string
	}{
		{map[string]string{scheduling.TopologyRequiredAnnotation: ""},
			"metadata.annotations[scheduling.muster.dev/topology-required]: Required value: " + scheduling.TopologyKeyRequired},
		{map[string]string{scheduling.TopologyPreferredAnnotation: "a,b,c,d,e"},
			"metadata.annotations[scheduling.muster.dev/topology-preferred]: Too many: 5: must have at most 4 items"},
		{map[string]string{scheduling.TopologyPreferredAnnotation: "a,a"},
			`metadata.annotations[scheduling.muster.dev/topology-preferred]: Duplicate value: "a"`},
		{map[string]string{scheduling.TopologyRequiredAnnotation: "a", scheduling.TopologyPreferredAnnotation: "a"},
			`metadata.annotations[scheduling.muster.dev/topology-preferred]: Invalid value: "a": ` + scheduling.TopologyDiffersRule},
		{map[string]string{scheduling.TopologySliceKeyAnnotation: "k", scheduling.TopologySliceSizeAnnotation: "0"},
			`metadata.annotations[scheduling.muster.dev/topology-slice-size]: Invalid value: "0": ` + scheduling.TopologySliceSizeRule},
		{map[string]string{scheduling.TopologySliceKeyAnnotation: "k"},
			"metadata.annotations[scheduling.muster.dev/topology-slice-size]: Required value: must be set when scheduling.muster.dev/topology-slice-key is set"},
	}
	for _, tc := range tests {
		_, err := TopologyFromAnnotations(tc.ann)
		if err == nil || err.Error() != tc.want {
			t.Errorf("TopologyFromAnnotations(%v) = %v\nwant %s", tc.ann, err, tc.want)
		}
	}
}

// TestTopologyAnnotationsRoundTrip: the annotations that ask for valid
// constraints are read back as those constraints.
func TestTopologyAnnotationsRoundTrip(t *testing.T) {
	for _, c := range []*scheduling.PodGroupSchedulingConstraints{
		sc([]string{zone}),
		sc(nil, host, rack),
		withSlice(sc(nil), rack, 16),
		withSlice(sc([]string{zone}, host, rack, "example.com/block"), rack, scheduling.MaxPlacements),
	} {
		ann := scheduling.TopologyAnnotationsFor(c)
		got, err := TopologyFromAnnotations(ann)
		if err != nil || !apiequality.Semantic.DeepEqual(got, c) {
			t.Errorf("TopologyFromAnnotations(TopologyAnnotationsFor(%+v)) = %+v, %v", c, got, err)
		}
	}
	if ann := scheduling.TopologyAnnotationsFor(sc(nil)); ann != nil {
		t.Errorf("empty constraints need no annotations, got %v", ann)
	}
}

// FuzzTopologyAnnotations feeds arbitrary topology annotations to the
// reader. It must never panic; its errors name only the topology
// annotations; what it accepts is valid constraints, which the
// annotations TopologyAnnotationsFor writes say again.
// Run it with: make fuzz, or go test ./pkg/apis/scheduling/validation -run '^$' -fuzz FuzzTopologyAnnotations
func FuzzTopologyAnnotations(f *testing.F) {
	f.Add(zone, host+","+rack, rack, "4", uint8(15))
	f.Add("", "a,,a", "k", "0", uint8(15))
	f.Add("a/b/c", " a , b ", "", "+8", uint8(6))
	f.Add(zone, zone, zone, "2147483648", uint8(13))
	path := field.NewPath("metadata", "annotations")
	named := map[string]bool{}
	for _, k := range scheduling.TopologyAnnotations {
		named[path.Key(k).String()] = true
	}
	f.Fuzz(func(t *testing.T, req, pref, key, size string, set uint8) {
		ann := map[string]string{}
		for i, v := range []string{req, pref, key, size} {
			if set&(1<<i) != 0 {
				ann[scheduling.TopologyAnnotations[i]] = v
			}
		}
		errs := ValidateTopologyAnnotations(ann, path)
		c, err := TopologyFromAnnotations(ann)
		if (err != nil) != (len(errs) > 0) {
			t.Fatalf("TopologyFromAnnotations error %v, ValidateTopologyAnnotations %v", err, errs)
		}
		for _, e := range errs {
			if !named[e.Field] {
				t.Fatalf("error on %s, not a topology annotation: %v", e.Field, e)
			}
		}
		switch {
		case len(ann) == 0 && (c != nil || err != nil):
			t.Fatalf("no annotations read as %+v, %v", c, err)
		case err != nil:
			return
		case len(ann) > 0 && !scheduling.HasSchedulingConstraints(c):
			t.Fatalf("annotations %v read as no constraints", ann)
		}
		if errs := ValidateSchedulingConstraints(c, field.NewPath("spec")); len(errs) > 0 {
			t.Fatalf("annotations %v read as invalid constraints: %v", ann, errs)
		}
		again, err := TopologyFromAnnotations(scheduling.TopologyAnnotationsFor(c))
		if err != nil || !apiequality.Semantic.DeepEqual(again, c) {
			t.Fatalf("constraints %+v written and read again as %+v, %v", c, again, err)
		}
	})
}
