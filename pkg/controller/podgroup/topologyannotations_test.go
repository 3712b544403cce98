package podgroup

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

const (
	topoZone = "topology.kubernetes.io/zone"
	topoRack = "example.com/rack"
	topoHost = "kubernetes.io/hostname"
)

func topoRequired(key string) podMod { return annotated(scheduling.TopologyRequiredAnnotation, key) }

// topoConstraints builds v1alpha1 constraints: a required level (none when
// ""), preferred levels, and a slice when size > 0.
func topoConstraints(req string, preferred []string, sliceKey string, size int32) *v1alpha1.PodGroupSchedulingConstraints {
	c := &v1alpha1.PodGroupSchedulingConstraints{}
	if req != "" {
		c.Topology = []v1alpha1.TopologyConstraint{{Key: req}}
	}
	for _, k := range preferred {
		c.PreferredTopology = append(c.PreferredTopology, v1alpha1.TopologyConstraint{Key: k})
	}
	if size > 0 {
		c.Slice = &v1alpha1.TopologySlice{Key: sliceKey, Size: size}
	}
	return c
}

func topoGroupConstraints(c *v1alpha1.PodGroupSchedulingConstraints) groupMod {
	return func(pg *v1alpha1.PodGroup) { pg.Spec.SchedulingConstraints = c }
}

// TestSpecFromTopologyAnnotations: the topology annotations give the
// created group its schedulingConstraints, but never ask for a group.
func TestSpecFromTopologyAnnotations(t *testing.T) {
	gang := func(n int32) v1alpha1.PodGroupSchedulingPolicy {
		return v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: n}}
	}
	cases := []struct {
		name    string
		ann     map[string]string
		want    v1alpha1.PodGroupSpec
		ok      bool
		wantErr bool
	}{
		{name: "topology annotations alone ask for no group", ann: map[string]string{scheduling.TopologyRequiredAnnotation: topoZone}},
		{name: "min-count and a required level", ok: true,
			ann:  map[string]string{scheduling.MinCountAnnotation: "4", scheduling.TopologyRequiredAnnotation: topoZone},
			want: v1alpha1.PodGroupSpec{SchedulingPolicy: gang(4), SchedulingConstraints: topoConstraints(topoZone, nil, "", 0)}},
		{name: "min-count and every topology annotation", ok: true,
			ann: map[string]string{scheduling.MinCountAnnotation: "8", scheduling.TopologyRequiredAnnotation: topoZone, scheduling.TopologyPreferredAnnotation: topoHost + ", " + topoRack,
				scheduling.TopologySliceKeyAnnotation: topoRack, scheduling.TopologySliceSizeAnnotation: "4"},
			want: v1alpha1.PodGroupSpec{SchedulingPolicy: gang(8), SchedulingConstraints: topoConstraints(topoZone, []string{topoHost, topoRack}, topoRack, 4)}},
		{name: "a workloadRef and preferred levels: the pod's constraints, not the template's", ok: true,
			ann: map[string]string{scheduling.WorkloadAnnotation: "w", scheduling.TemplateAnnotation: "t", scheduling.TopologyPreferredAnnotation: topoRack},
			want: v1alpha1.PodGroupSpec{WorkloadRef: &v1alpha1.WorkloadReference{WorkloadName: "w", TemplateName: "t"},
				SchedulingConstraints: topoConstraints("", []string{topoRack}, "", 0)}},
		{name: "invalid topology annotations refuse the group", ann: map[string]string{scheduling.MinCountAnnotation: "4", scheduling.TopologySliceKeyAnnotation: topoRack}, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := specFromAnnotations(tc.ann)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if !tc.wantErr && (ok != tc.ok || !equalSpec(got, tc.want)) {
				t.Errorf("= %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestCreatedGroupTopology: a group the controller creates from a pod's
// annotations, or from its pods' roles, takes the schedulingConstraints of
// the pod it is created from; invalid topology annotations create no group.
func TestCreatedGroupTopology(t *testing.T) {
	minCount := func(v string) podMod { return annotated(scheduling.MinCountAnnotation, v) }
	const waiting = "Normal WaitingForPodGroup waiting for PodGroup pg"
	driver := func(mods ...podMod) *corev1.Pod {
		return newPod("d", append([]podMod{inRole("driver"), annotated(scheduling.RolesTemplateAnnotation, `[{"name":"worker","count":2,"template":{}}]`)}, mods...)...)
	}
	cases := []struct {
		name   string
		objs   []runtime.Object
		from   string
		want   *v1alpha1.PodGroupSchedulingConstraints // of the created group
		events []string
	}{{
		name:   "min-count and a required level create a group in one zone",
		objs:   objects(nil, newPod("p-0", minCount("2"), topoRequired(topoZone))),
		from:   "p-0",
		want:   topoConstraints(topoZone, nil, "", 0),
		events: []string{"Normal PodGroupCreated created PodGroup pg"},
	}, {
		name: "a slice comes with its key and size",
		objs: objects(nil, newPod("p-0", minCount("4"), annotated(scheduling.TopologySliceKeyAnnotation, topoRack, scheduling.TopologySliceSizeAnnotation, "2"))),
		from: "p-0", want: topoConstraints("", nil, topoRack, 2),
		events: []string{"Normal PodGroupCreated created PodGroup pg"},
	}, {
		name:   "min-count alone creates a group without constraints",
		objs:   objects(nil, newPod("p-0", minCount("2"))),
		from:   "p-0",
		events: []string{"Normal PodGroupCreated created PodGroup pg"},
	}, {
		name:   "topology annotations alone create nothing",
		objs:   objects(nil, newPod("p-0", topoRequired(topoZone))),
		events: []string{waiting},
	}, {
		name: "invalid topology annotations are reported and create nothing",
		objs: objects(nil, newPod("p-0", minCount("2"), annotated(scheduling.TopologySliceSizeAnnotation, "2"))),
		events: []string{"Warning InvalidAnnotation metadata.annotations[scheduling.muster.dev/topology-slice-key]: Required value: must be set when scheduling.muster.dev/topology-slice-size is set",
			waiting},
	}, {
		name: "a pod with invalid topology annotations does not stop a valid one from creating the group",
		objs: objects(nil, newPod("bad", minCount("2"), topoRequired("a zone"), createdAt(t0.Add(-time.Hour))), newPod("good", minCount("2"), topoRequired(topoRack))),
		from: "good", want: topoConstraints(topoRack, nil, "", 0),
		events: []string{`Warning InvalidAnnotation metadata.annotations[scheduling.muster.dev/topology-required]: Invalid value: "a zone": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
			"Normal PodGroupCreated created PodGroup pg"},
	}, {
		name:   "a driver's roles template and its required level",
		objs:   objects(nil, driver(topoRequired(topoZone))),
		from:   "d",
		want:   topoConstraints(topoZone, nil, "", 0),
		events: []string{"Normal PodGroupCreated created PodGroup pg"},
	}, {
		name:   "a driver's invalid topology annotations create nothing",
		objs:   objects(nil, driver(annotated(scheduling.TopologyPreferredAnnotation, "a,a"))),
		events: []string{`Warning InvalidAnnotation metadata.annotations[scheduling.muster.dev/topology-preferred]: Duplicate value: "a"`, waiting},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil, tc.objs...)
			h.sync()
			_, err := h.muster.Tracker().Get(podGroupsGVR, testNS, testGroup)
			switch got := h.created(); {
			case tc.from == "" && err == nil:
				t.Errorf("created PodGroup %+v, want none", got)
			case tc.from != "" && err != nil:
				t.Errorf("no PodGroup created, want one from %s", tc.from)
			case tc.from != "":
				if from := got.Annotations[scheduling.CreatedFromPodAnnotation]; from != tc.from {
					t.Errorf("created from pod %q, want %q", from, tc.from)
				}
				if !equalSpec(v1alpha1.PodGroupSpec{SchedulingConstraints: got.Spec.SchedulingConstraints}, v1alpha1.PodGroupSpec{SchedulingConstraints: tc.want}) {
					t.Errorf("schedulingConstraints = %+v, want %+v", got.Spec.SchedulingConstraints, tc.want)
				}
			}
			wantEvents(t, h.events(), tc.events...)
		})
	}
}

// TestTopologyAnnotationsAgree: pods whose topology annotations ask for
// other constraints than their group's are told once, as for min-count;
// pods without them are not compared.
func TestTopologyAnnotationsAgree(t *testing.T) {
	zoned := topoGroupConstraints(topoConstraints(topoZone, []string{topoHost, topoRack}, "", 0))
	cases := []struct {
		name   string
		group  *v1alpha1.PodGroup
		pods   []*corev1.Pod
		events []string
	}{{
		name:  "pods that ask for the group's constraints are not told anything, however they spell them",
		group: admitted(2, zoned),
		pods: []*corev1.Pod{
			newPod("p-0", running, topoRequired(topoZone), annotated(scheduling.TopologyPreferredAnnotation, topoHost+","+topoRack)),
			newPod("p-1", running, topoRequired(topoZone), annotated(scheduling.TopologyPreferredAnnotation, " "+topoHost+" , "+topoRack)),
		},
	}, {
		name:  "pods without topology annotations are not compared",
		group: admitted(2, zoned),
		pods:  []*corev1.Pod{newPod("p-0", running), newPod("p-1", running)},
	}, {
		name:  "empty constraints are none",
		group: admitted(1, topoGroupConstraints(&v1alpha1.PodGroupSchedulingConstraints{})),
		pods:  []*corev1.Pod{newPod("p-0", running)},
	}, {
		name:  "a pod that asks for another level gets a warning",
		group: admitted(2, zoned),
		pods:  []*corev1.Pod{newPod("p-0", running, topoRequired(topoRack)), newPod("p-1", running)},
		events: []string{`Warning TopologyMismatch annotations scheduling.muster.dev/topology-required="example.com/rack" disagree with PodGroup pg, ` +
			`whose spec.schedulingConstraints are those of the annotations scheduling.muster.dev/topology-required="topology.kubernetes.io/zone" ` +
			`scheduling.muster.dev/topology-preferred="kubernetes.io/hostname,example.com/rack"; all pods of a group must agree`},
	}, {
		name:  "a pod that asks for constraints in a group without any gets a warning",
		group: admitted(1),
		pods:  []*corev1.Pod{newPod("p-0", running, annotated(scheduling.TopologySliceKeyAnnotation, topoRack, scheduling.TopologySliceSizeAnnotation, "2"))},
		events: []string{`Warning TopologyMismatch annotations scheduling.muster.dev/topology-slice-key="example.com/rack" scheduling.muster.dev/topology-slice-size="2" ` +
			`disagree with PodGroup pg, which has no spec.schedulingConstraints; all pods of a group must agree`},
	}, {
		name:  "a pod with invalid topology annotations is told why",
		group: admitted(1),
		pods:  []*corev1.Pod{newPod("p-0", running, annotated(scheduling.TopologySliceSizeAnnotation, "2"))},
		events: []string{`Warning TopologyMismatch annotations scheduling.muster.dev/topology-slice-size="2" disagree with PodGroup pg, which has no spec.schedulingConstraints; ` +
			`all pods of a group must agree (they are invalid: metadata.annotations[scheduling.muster.dev/topology-slice-key]: Required value: must be set when scheduling.muster.dev/topology-slice-size is set)`},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil, objects(tc.group, tc.pods...)...)
			h.sync()
			wantEvents(t, h.events(), tc.events...)
			h.step(time.Second)
			wantEvents(t, h.events()) // told once.
		})
	}
}
