package whatif

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	schedulingapi "k8s.io/kubernetes/pkg/apis/scheduling"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/podtest"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// reviewOf is the review spec of object, given as raw JSON ([]byte) or
// as a value to encode, with podGroup beside it.
func reviewOf(t testing.TB, object any, podGroup *v1alpha1.PodGroup) *v1alpha1.WhatIfReviewSpec {
	t.Helper()
	spec := &v1alpha1.WhatIfReviewSpec{PodGroup: podGroup}
	switch o := object.(type) {
	case nil:
	case []byte:
		spec.Object = runtime.RawExtension{Raw: o}
	default:
		spec.Object = raw(t, o)
	}
	return spec
}

// workloadWith is a Workload with one template of a gang of minCount.
func workloadWith(name, template string, minCount int32) *v1alpha1.Workload {
	return &v1alpha1.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.WorkloadSpec{PodGroupTemplates: []v1alpha1.PodGroupTemplate{{
			Name:             template,
			SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: minCount}},
		}}},
	}
}

// workloadWithRoles is a Workload with one template of a gang of roles.
func workloadWithRoles(name, template string, roles ...v1alpha1.PodGroupRole) *v1alpha1.Workload {
	w := workloadWith(name, template, rolesGroup("", roles...).Spec.SchedulingPolicy.Gang.MinCount)
	w.Spec.PodGroupTemplates[0].Roles = roles
	return w
}

var gpuToleration = corev1.Toleration{Key: "example.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}

// h100Affinity requires nodes of one accelerator.
func h100Affinity() *corev1.NodeAffinity {
	return &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "example.com/accelerator", Operator: corev1.NodeSelectorOpIn, Values: []string{"h100"}},
		}}},
	}}
}

// gangCase is a review that is answered: the gang's group, need, sizing
// and pod names, and what else check says of it.
type gangCase struct {
	name     string
	object   any
	podGroup *v1alpha1.PodGroup
	lookup   fakeLookup
	group    string
	need     int32
	sizedBy  string
	names    []string
	check    func(t *testing.T, g *Gang)
}

// gangCases are the reviews that are answered, one line per rule; the
// fuzz test starts from them too.
func gangCases() []gangCase {
	return []gangCase{
		{
			name:   "a Job makes min(parallelism, completions) pods, its group named after it and sized by it",
			object: job("train", completions(3)), group: "train", need: 3, sizedBy: "Job train",
			names: []string{"train-0", "train-1", "train-2"},
			check: func(t *testing.T, g *Gang) {
				p := g.Pods[1]
				for k, v := range map[string]string{batchv1.JobNameLabel: "train", "job-name": "train",
					batchv1.ControllerUidLabel: string(madeUpUID(0)), "controller-uid": string(madeUpUID(0))} {
					if p.Labels[k] != v {
						t.Errorf("label %s = %q, want %q", k, p.Labels[k], v)
					}
				}
				if ref := metav1.GetControllerOf(p); ref == nil || ref.Kind != "Job" || ref.Name != "train" || ref.UID != madeUpUID(0) {
					t.Errorf("controller = %+v, want Job train", ref)
				}
				if !slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) {
					t.Errorf("finalizers %q lack the Job controller's", p.Finalizers)
				}
				if p.Name != "train-1" || p.GenerateName != "train-" {
					t.Errorf("name %q, generateName %q; want train-1, train-", p.Name, p.GenerateName)
				}
				if got := p.Spec.Containers[0].Resources.Requests.Cpu().String(); got != "1" {
					t.Errorf("cpu request = %s, want 1, defaulted from the limit as the API does", got)
				}
				if g.PodGroup.Annotations[scheduling.SizedByAnnotation] != "Job train" || g.PodGroup.Annotations[scheduling.CreatedFromPodAnnotation] != "train-0" {
					t.Errorf("group annotations %v", g.PodGroup.Annotations)
				}
			},
		},
		{
			name:   "a Job of neither parallelism nor completions makes one pod",
			object: job("one", noParallelism), group: "one", need: 1, sizedBy: "Job one", names: []string{"one-0"},
		},
		{
			name:   "an Indexed Job's pods carry their completion index",
			object: job("idx", parallelism(2), completions(5), indexed), group: "idx", need: 2, sizedBy: "Job idx", names: []string{"idx-0", "idx-1"},
			check: func(t *testing.T, g *Gang) {
				p := g.Pods[1]
				if p.Labels[batchv1.JobCompletionIndexAnnotation] != "1" || p.Annotations[batchv1.JobCompletionIndexAnnotation] != "1" {
					t.Errorf("index label %q, annotation %q; want 1", p.Labels[batchv1.JobCompletionIndexAnnotation], p.Annotations[batchv1.JobCompletionIndexAnnotation])
				}
				if p.Spec.Hostname != "idx-1" || p.GenerateName != "idx-1-" {
					t.Errorf("hostname %q, generateName %q; want idx-1, idx-1-", p.Spec.Hostname, p.GenerateName)
				}
				if env := p.Spec.Containers[0].Env; len(env) != 1 || env[0].Name != completionIndexEnv {
					t.Errorf("env = %+v, want the completion index", env)
				}
			},
		},
		{
			name:   "a Job with only a generateName is named by it and a stand-in suffix",
			object: job("", func(j *batchv1.Job) { j.GenerateName = "train-" }), group: "train-00000", need: 4, sizedBy: "Job train-00000",
			names: []string{"train-00000-0", "train-00000-1", "train-00000-2", "train-00000-3"},
		},
		{
			name:   "a JobSet's group is <jobset>-<attempt>, sized by the JobSet, its pods in the order of its Jobs",
			object: jobSet("train", rjob("launcher", 1, 1), rjob("workers", 2, 2)), group: "train-0", need: 5, sizedBy: "JobSet train",
			names: []string{"train-launcher-0-0", "train-workers-0-0", "train-workers-0-1", "train-workers-1-0", "train-workers-1-1"},
			check: func(t *testing.T, g *Gang) {
				p := g.Pods[3]
				for k, v := range map[string]string{jobSetNameLabel: "train", replicatedJobNameLabel: "workers", jobIndexLabel: "1",
					restartAttemptLabel: "0", batchv1.JobNameLabel: "train-workers-1", jobSetUIDLabel: string(madeUpUID(0))} {
					if p.Labels[k] != v || p.Annotations[k] != v && k != batchv1.JobNameLabel {
						t.Errorf("label %s = %q, annotation %q; want %q", k, p.Labels[k], p.Annotations[k], v)
					}
				}
				if ref := metav1.GetControllerOf(p); ref == nil || ref.Kind != "Job" || ref.Name != "train-workers-1" {
					t.Errorf("controller = %+v, want Job train-workers-1", ref)
				}
			},
		},
		{
			name:   "a JobSet replicated job of no replicas makes nothing",
			object: jobSet("train", rjob("launcher", 0, 1), rjob("workers", 1, 2)), group: "train-0", need: 2, sizedBy: "JobSet train",
			names: []string{"train-workers-0-0", "train-workers-0-1"},
		},
		{
			name:   "a Pod with min-count forms the group its label names",
			object: podtest.Pod(podtest.InGroup("solo"), podtest.Annotation(scheduling.MinCountAnnotation, "1")), group: "solo", need: 1,
			names: []string{"worker-0"},
		},
		{
			name: "a List's pods in order, generated names by prefix and index",
			object: list(
				podtest.Pod(podtest.InGroup("pair"), podtest.Annotation(scheduling.MinCountAnnotation, "2"), func(p *corev1.Pod) { p.Name, p.GenerateName = "", "w-" }),
				podtest.Pod(podtest.InGroup("pair"), func(p *corev1.Pod) { p.Name, p.GenerateName = "", "w-" }),
			),
			group: "pair", need: 2, names: []string{"w-0", "w-1"},
			check: func(t *testing.T, g *Gang) {
				if g.Pods[1].Name != "w-1" {
					t.Errorf("pod name %q, want its stand-in w-1", g.Pods[1].Name)
				}
			},
		},
		{
			name:   "min-count sizes the group rather than the object",
			object: job("train", tplAnnotation(scheduling.MinCountAnnotation, "2")), group: "train", need: 2,
			names: []string{"train-0", "train-1", "train-2", "train-3"},
		},
		{
			name: "the first pod by name with creation annotations makes the group",
			object: list(
				podtest.Pod(podtest.InGroup("g"), podtest.Annotation(scheduling.MinCountAnnotation, "3"), func(p *corev1.Pod) { p.Name = "b" }),
				podtest.Pod(podtest.InGroup("g"), podtest.Annotation(scheduling.MinCountAnnotation, "2"), func(p *corev1.Pod) { p.Name = "a" }),
			),
			group: "g", need: 2, names: []string{"b", "a"},
			check: func(t *testing.T, g *Gang) {
				if from := g.PodGroup.Annotations[scheduling.CreatedFromPodAnnotation]; from != "a" {
					t.Errorf("created from %q, want a", from)
				}
			},
		},
		{
			name: "topology annotations become the created group's constraints",
			object: job("train", inGroup("zoned"), tplAnnotation(scheduling.MinCountAnnotation, "4"),
				tplAnnotation(scheduling.TopologyRequiredAnnotation, "topology.kubernetes.io/zone")),
			group: "zoned", need: 4, names: []string{"train-0", "train-1", "train-2", "train-3"},
			check: func(t *testing.T, g *Gang) {
				c := g.PodGroup.Spec.SchedulingConstraints
				if c == nil || len(c.Topology) != 1 || c.Topology[0].Key != "topology.kubernetes.io/zone" {
					t.Errorf("constraints = %+v, want the zone required", c)
				}
			},
		},
		{
			name:   "a stored group's spec sizes the gang that joins it",
			object: job("train"), lookup: fakeLookup{groups: map[string]*v1alpha1.PodGroup{ns + "/train": gangGroup("train", 6)}},
			group: "train", need: 6, names: []string{"train-0", "train-1", "train-2", "train-3"},
		},
		{
			name:   "spec.podGroup is created beside the pods, in the review's namespace",
			object: job("train"), podGroup: gangGroup("train", 3), group: "train", need: 3,
			names: []string{"train-0", "train-1", "train-2", "train-3"},
			check: func(t *testing.T, g *Gang) {
				if g.PodGroup.Namespace != ns {
					t.Errorf("group namespace %q, want %q", g.PodGroup.Namespace, ns)
				}
			},
		},
		{
			name:   "a basic spec.podGroup needs one pod placed, as the controller asks",
			object: job("train"), group: "train", need: 1, names: []string{"train-0", "train-1", "train-2", "train-3"},
			podGroup: &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: ns},
				Spec: v1alpha1.PodGroupSpec{SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{Basic: &v1alpha1.BasicSchedulingPolicy{}}}},
		},
		{
			name: "spec.podGroup with roles takes the place of the role annotations",
			object: podtest.Pod(podtest.InGroup("r"), podtest.Label(scheduling.RoleLabel, "leader"),
				podtest.Annotation(scheduling.RolesAnnotation, "1"), podtest.Annotation(scheduling.RoleCountAnnotation, "1")),
			podGroup: func() *v1alpha1.PodGroup {
				pg := gangGroup("r", 1)
				pg.Spec.Roles = []v1alpha1.PodGroupRole{{Name: "leader", Count: 1}}
				return pg
			}(),
			group: "r", need: 1, names: []string{"worker-0"},
		},
		{
			name: "a Workload template gives its policy to the group the annotations create",
			object: job("train", inGroup("wl"), tplAnnotation(scheduling.WorkloadAnnotation, "llm"),
				tplAnnotation(scheduling.TemplateAnnotation, "workers")),
			lookup: fakeLookup{workloads: map[string]*v1alpha1.Workload{ns + "/llm": workloadWith("llm", "workers", 5)}},
			group:  "wl", need: 5, names: []string{"train-0", "train-1", "train-2", "train-3"},
		},
		{
			name:   "a Workload template gives its policy to spec.podGroup",
			object: job("train"), group: "train", need: 7, names: []string{"train-0", "train-1", "train-2", "train-3"},
			podGroup: &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "train"},
				Spec: v1alpha1.PodGroupSpec{WorkloadRef: &v1alpha1.WorkloadReference{WorkloadName: "llm", TemplateName: "workers"}}},
			lookup: fakeLookup{workloads: map[string]*v1alpha1.Workload{ns + "/llm": workloadWith("llm", "workers", 7)}},
		},
		{
			name:   "a named PriorityClass gives its value and preemption policy",
			object: job("train", completions(1), priorityClass("high")), group: "train", need: 1, sizedBy: "Job train", names: []string{"train-0"},
			lookup: fakeLookup{classes: []*schedulingv1.PriorityClass{class("high", 1000, false, corev1.PreemptNever), class("low", 1, true, "")}},
			check:  wantPriority("high", 1000, corev1.PreemptNever),
		},
		{
			name:   "no class name takes the global default's, the lowest of several",
			object: job("train", completions(1)), group: "train", need: 1, sizedBy: "Job train", names: []string{"train-0"},
			lookup: fakeLookup{classes: []*schedulingv1.PriorityClass{class("a", 50, true, ""), class("b", 10, true, ""), class("c", 5, false, "")}},
			check:  wantPriority("b", 10, corev1.PreemptLowerPriority),
		},
		{
			name:   "no class name and no global default: 0, PreemptLowerPriority",
			object: job("train", completions(1)), group: "train", need: 1, sizedBy: "Job train", names: []string{"train-0"},
			lookup: fakeLookup{classes: []*schedulingv1.PriorityClass{class("c", 5, false, "")}},
			check:  wantPriority("", 0, corev1.PreemptLowerPriority),
		},
		{
			name:   "a system class resolves though the lookup does not list it",
			object: job("train", completions(1), priorityClass(schedulingapi.SystemClusterCritical)), group: "train", need: 1, sizedBy: "Job train", names: []string{"train-0"},
			check: wantPriority(schedulingapi.SystemClusterCritical, schedulingapi.SystemCriticalPriority, corev1.PreemptLowerPriority),
		},
		{
			name:   "a pod bound at creation is admitted ungated, and the webhook's warning is passed on",
			object: podtest.Pod(podtest.InGroup("solo"), podtest.Annotation(scheduling.MinCountAnnotation, "1"), podtest.OnNode("n1")),
			group:  "solo", need: 1, names: []string{"worker-0"},
			check: func(t *testing.T, g *Gang) {
				if len(g.Warnings) != 1 || !strings.Contains(g.Warnings[0], "spec.nodeName") {
					t.Errorf("warnings = %q, want the webhook's", g.Warnings)
				}
			},
		},

		// spec.podGroup alone: a PodGroup with pod templates.
		{
			name: "spec.podGroup alone makes count pods of each role from its template, in the order of the roles",
			podGroup: func() *v1alpha1.PodGroup {
				leader := role("leader", 1, "2")
				leader.Template.NodeSelector = map[string]string{"pool": "cpu"}
				worker := role("worker", 3, "1")
				worker.Template.Requests[corev1.ResourceMemory] = resource.MustParse("1Gi")
				worker.Template.Tolerations = []corev1.Toleration{gpuToleration}
				worker.Template.NodeAffinity = h100Affinity()
				return rolesGroup("llm", leader, worker)
			}(),
			lookup: fakeLookup{classes: []*schedulingv1.PriorityClass{class("default", 10, true, "")}},
			group:  "llm", need: 4, names: []string{"llm-leader-0", "llm-worker-0", "llm-worker-1", "llm-worker-2"},
			check: func(t *testing.T, g *Gang) {
				wantPriority("default", 10, corev1.PreemptLowerPriority)(t, g)
				leader, worker := g.Pods[0], g.Pods[2]
				if leader.Labels[scheduling.RoleLabel] != "leader" || worker.Labels[scheduling.RoleLabel] != "worker" {
					t.Errorf("role labels %q, %q; want leader, worker", leader.Labels[scheduling.RoleLabel], worker.Labels[scheduling.RoleLabel])
				}
				if worker.Name != "llm-worker-1" || worker.GenerateName != "" {
					t.Errorf("name %q, generateName %q; want llm-worker-1 and none", worker.Name, worker.GenerateName)
				}
				if len(leader.Spec.Containers) != 1 || len(worker.Spec.Containers) != 1 {
					t.Fatalf("containers %d, %d; want one each", len(leader.Spec.Containers), len(worker.Spec.Containers))
				}
				if got := leader.Spec.Containers[0].Resources.Requests; got.Cpu().String() != "2" || !got.Memory().IsZero() {
					t.Errorf("leader requests %v, want cpu 2", got)
				}
				if got := worker.Spec.Containers[0].Resources.Requests; got.Cpu().String() != "1" || got.Memory().String() != "1Gi" {
					t.Errorf("worker requests %v, want cpu 1, memory 1Gi", got)
				}
				if !reflect.DeepEqual(leader.Spec.NodeSelector, map[string]string{"pool": "cpu"}) || len(worker.Spec.NodeSelector) != 0 {
					t.Errorf("node selectors %v, %v; want the leader's pool only", leader.Spec.NodeSelector, worker.Spec.NodeSelector)
				}
				if !reflect.DeepEqual(worker.Spec.Tolerations, []corev1.Toleration{gpuToleration}) || len(leader.Spec.Tolerations) != 0 {
					t.Errorf("tolerations %v, %v; want the worker's only", leader.Spec.Tolerations, worker.Spec.Tolerations)
				}
				if a := worker.Spec.Affinity; a == nil || !reflect.DeepEqual(a.NodeAffinity, h100Affinity()) || leader.Spec.Affinity != nil {
					t.Errorf("affinities %+v, %+v; want the worker's node affinity only", leader.Spec.Affinity, worker.Spec.Affinity)
				}
			},
		},
		{
			name:     "spec.podGroup alone: a createdLater role makes no pods, and the need still counts it",
			podGroup: rolesGroup("spark", role("driver", 1, "1"), later(role("executor", 4, "2"))),
			group:    "spark", need: 5, names: []string{"spark-driver-0"},
		},
		{
			name: "spec.podGroup alone: a Workload template gives the roles",
			podGroup: &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "wl"},
				Spec: v1alpha1.PodGroupSpec{WorkloadRef: &v1alpha1.WorkloadReference{WorkloadName: "spark", TemplateName: "job"}}},
			lookup: fakeLookup{workloads: map[string]*v1alpha1.Workload{ns + "/spark": workloadWithRoles("spark", "job", role("driver", 1, "1"), later(role("executor", 2, "1")))}},
			group:  "wl", need: 3, names: []string{"wl-driver-0"},
		},
	}
}

func TestFromReviewGangs(t *testing.T) {
	for _, tt := range gangCases() {
		t.Run(tt.name, func(t *testing.T) {
			spec := reviewOf(t, tt.object, tt.podGroup)
			before := spec.DeepCopy()
			g, errs := FromReview(ns, spec, lookupOf(&tt.lookup))
			if len(errs) > 0 {
				t.Fatalf("refused: %v", errs)
			}
			if !reflect.DeepEqual(spec, before) {
				t.Errorf("FromReview changed the review")
			}
			if g.PodGroup.Name != tt.group || g.PodGroup.Namespace != ns || g.Need != tt.need || g.SizedBy != tt.sizedBy {
				t.Errorf("group %s/%s, need %d, sized by %q; want %s/%s, %d, %q", g.PodGroup.Namespace, g.PodGroup.Name, g.Need, g.SizedBy, ns, tt.group, tt.need, tt.sizedBy)
			}
			if !reflect.DeepEqual(g.Names, tt.names) || len(g.Pods) != len(g.Names) {
				t.Errorf("names = %q for %d pods, want %q", g.Names, len(g.Pods), tt.names)
			}
			for i, p := range g.Pods {
				bound := p.Spec.NodeName != ""
				switch {
				case p.Labels[scheduling.PodGroupLabel] != tt.group:
					t.Errorf("pod %d names group %q", i, p.Labels[scheduling.PodGroupLabel])
				case p.Namespace != ns || p.Name == "":
					t.Errorf("pod %d is %s/%s", i, p.Namespace, p.Name)
				case !bound && (!scheduling.HasGate(p) || !scheduling.HasTrackingFinalizer(p) || p.Labels[scheduling.ManagedLabel] != "true"):
					t.Errorf("pod %d was not prepared by the webhook: %+v", i, p.ObjectMeta)
				case p.Spec.Priority == nil || p.Spec.PreemptionPolicy == nil:
					t.Errorf("pod %d has no priority resolved", i)
				}
			}
			if tt.check != nil {
				tt.check(t, g)
			}
		})
	}
}

// wantPriority checks every pod's resolved priority.
func wantPriority(className string, value int32, policy corev1.PreemptionPolicy) func(*testing.T, *Gang) {
	return func(t *testing.T, g *Gang) {
		for _, p := range g.Pods {
			if p.Spec.PriorityClassName != className || *p.Spec.Priority != value || *p.Spec.PreemptionPolicy != policy {
				t.Errorf("pod priority %q %d %s, want %q %d %s", p.Spec.PriorityClassName, *p.Spec.Priority, *p.Spec.PreemptionPolicy, className, value, policy)
			}
		}
	}
}

func TestFromReviewNeedsASpecAndANamespace(t *testing.T) {
	if _, errs := FromReview(ns, nil, &fakeLookup{}); len(errs) != 1 || errs[0].Field != "spec" {
		t.Errorf("nil spec: %v", errs)
	}
	if _, errs := FromReview("", reviewOf(t, job("train"), nil), &fakeLookup{}); len(errs) != 1 || errs[0].Field != "metadata.namespace" {
		t.Errorf("no namespace: %v", errs)
	}
}
