package whatif

import (
	"fmt"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/podtest"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// refusalCase is a review that is refused, with the refusals' types and
// field paths.
type refusalCase struct {
	name     string
	object   any
	podGroup *v1alpha1.PodGroup
	lookup   fakeLookup
	wants    []want
}

// refusalCases are the reviews that are refused, one line per rule; the
// fuzz test starts from them too.
func refusalCases() []refusalCase {
	const (
		tplPath   = "spec.object.spec.template"
		groupKey  = "[" + scheduling.PodGroupLabel + "]"
		minCount  = "[" + scheduling.MinCountAnnotation + "]"
		rolesKey  = "[" + scheduling.RolesAnnotation + "]"
		pgPath    = "spec.podGroup"
		typeInv   = field.ErrorTypeInvalid
		typeReq   = field.ErrorTypeRequired
		typeFbd   = field.ErrorTypeForbidden
		typeNS    = field.ErrorTypeNotSupported
		typeMany  = field.ErrorTypeTooMany
		typeLong  = field.ErrorTypeTooLong
		typeDup   = field.ErrorTypeDuplicate
		typeNF    = field.ErrorTypeNotFound
		typeInter = field.ErrorTypeInternal
	)
	otherNS := func(p *corev1.Pod) { p.Namespace = "elsewhere" }
	stored := fakeLookup{groups: map[string]*v1alpha1.PodGroup{ns + "/train": gangGroup("train", 4)}}
	return []refusalCase{
		// The object.
		{name: "no object", wants: []want{{typeReq, "spec.object"}}},
		{name: "an object that is not JSON", object: []byte("{"), wants: []want{{typeInv, "spec.object"}}},
		{name: "an object without a kind", object: []byte(`{"metadata":{"name":"x"}}`), wants: []want{{typeReq, "spec.object.kind"}}},
		{name: "a kind that is not accepted, unknown to the server", object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment"},
			wants: []want{{typeNS, "spec.object.kind"}}},
		{name: "a kind that is not accepted, known to the server", object: map[string]any{"apiVersion": "v1", "kind": "Service"},
			wants: []want{{typeNS, "spec.object.kind"}}},
		{name: "a JobSet of another version", object: map[string]any{"apiVersion": "jobset.x-k8s.io/v1alpha1", "kind": "JobSet"},
			wants: []want{{typeNS, "spec.object.kind"}}},
		{name: "an object of another namespace", object: job("train", func(j *batchv1.Job) { j.Namespace = "elsewhere" }),
			wants: []want{{typeInv, "spec.object.metadata.namespace"}}},

		// Pods and Lists.
		{name: "a Pod without a name or generateName", object: podtest.Pod(podtest.InGroup("g"), func(p *corev1.Pod) { p.Name = "" }),
			wants: []want{{typeReq, "spec.object.metadata.name"}}},
		{name: "an empty List", object: list(), wants: []want{{typeReq, "spec.object.items"}}},
		{name: "a List of something other than Pods", object: list(podtest.Pod(podtest.InGroup("g")), map[string]any{"apiVersion": "v1", "kind": "Service"}),
			wants: []want{{typeNS, "spec.object.items[1].kind"}}},
		{name: "a List item of another namespace", object: list(podtest.Pod(podtest.InGroup("g"), otherNS)),
			wants: []want{{typeInv, "spec.object.items[0].metadata.namespace"}}},
		{name: "a List of two pods of one name", object: list(podtest.Pod(podtest.InGroup("g")), podtest.Pod(podtest.InGroup("g"))),
			wants: []want{{typeInv, "spec.object.items[1].metadata.name"}}},

		// Jobs.
		{name: "a Job without a name", object: job(""), wants: []want{{typeReq, "spec.object.metadata.name"}}},
		{name: "a Job whose name cannot be a label value", object: job(strings.Repeat("a", 64)), wants: []want{{typeInv, "spec.object.metadata.name"}}},
		{name: "a Job of parallelism 0 makes no pods", object: job("train", parallelism(0)), wants: []want{{typeInv, "spec.object.spec.parallelism"}}},
		{name: "a Job of completions 0 makes no pods", object: job("train", completions(0)), wants: []want{{typeInv, "spec.object.spec.completions"}}},
		{name: "a negative parallelism", object: job("train", parallelism(-1)), wants: []want{{typeInv, "spec.object.spec.parallelism"}}},
		{name: "an Indexed Job without completions", object: job("train", indexed), wants: []want{{typeReq, "spec.object.spec.completions"}}},
		{name: "an unknown completion mode", object: job("train", func(j *batchv1.Job) { j.Spec.CompletionMode = ptr.To[batchv1.CompletionMode]("Sometimes") }),
			wants: []want{{typeNS, "spec.object.spec.completionMode"}}},
		{name: "a Job past MaxPods", object: job("train", parallelism(MaxPods+1)), wants: []want{{typeMany, "spec.object.spec.parallelism"}}},
		{name: "a Job whose pods come to more than MaxPodBytes", object: job("train", parallelism(MaxPods), tplAnnotation("example.com/pad", strings.Repeat("x", 20000))),
			wants: []want{{typeLong, tplPath}}},

		// JobSets.
		{name: "a JobSet without replicated jobs", object: jobSet("train"), wants: []want{{typeReq, "spec.object.spec.replicatedJobs"}}},
		{name: "a JobSet whose replicated jobs are not a list",
			object: map[string]any{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": map[string]any{"name": "t"}, "spec": map[string]any{"replicatedJobs": "x"}},
			wants:  []want{{typeInv, "spec.object.spec.replicatedJobs"}}},
		{name: "a replicated job that is not an object",
			object: map[string]any{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": map[string]any{"name": "t"}, "spec": map[string]any{"replicatedJobs": []any{"x"}}},
			wants:  []want{{typeInv, "spec.object.spec.replicatedJobs[0]"}}},
		{name: "two replicated jobs of one name", object: jobSet("train", rjob("w", 1, 1), rjob("w", 1, 1)),
			wants: []want{{typeDup, "spec.object.spec.replicatedJobs[1].name"}}},
		{name: "a replicated job whose Jobs' names are too long", object: jobSet("train", rjob(strings.Repeat("w", 60), 1, 1)),
			wants: []want{{typeInv, "spec.object.spec.replicatedJobs[0].name"}}},
		{name: "a replicated job of negative parallelism", object: jobSet("train", rjob("w", 1, -1)),
			wants: []want{{typeInv, "spec.object.spec.replicatedJobs[0].template.spec.parallelism"}}},
		{name: "a JobSet past MaxPods", object: jobSet("train", rjob("w", 100, 100)), wants: []want{{typeMany, "spec.object.spec.replicatedJobs"}}},
		{name: "a JobSet of no replicas makes no pods", object: jobSet("train", rjob("w", 0, 1)), wants: []want{{typeInv, "spec.object.spec.replicatedJobs"}}},
		{name: "a JobSet's pods refused by the webhook, at their template",
			object: func() map[string]any {
				js := jobSet("train", rjob("w", 2, 2))
				js["spec"].(map[string]any)["replicatedJobs"].([]any)[0].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["template"].(map[string]any)["metadata"].(map[string]any)["annotations"].(map[string]any)[scheduling.MinCountAnnotation] = "0"
				return js
			}(),
			wants: []want{{typeInv, "spec.object.spec.replicatedJobs[0].template.spec.template.metadata.annotations" + minCount}}},

		// The webhook, once for the pods of one template.
		{name: "a Job's pods refused by the validating webhook", object: job("train", tplAnnotation(scheduling.MinCountAnnotation, "0")),
			wants: []want{{typeInv, tplPath + ".metadata.annotations" + minCount}}},
		{name: "a Job's pods refused by the mutating webhook: grouped by labels they lack", object: job("train", tplAnnotation(scheduling.GroupByAnnotation, "example.com/run")),
			wants: []want{{typeReq, tplPath + ".metadata.labels"}}},

		// One gang.
		{name: "a pod without the group label", object: podtest.Pod(podtest.Annotation(scheduling.MinCountAnnotation, "1")),
			wants: []want{{typeReq, "spec.object.metadata.labels" + groupKey}}},
		{name: "pods of a List that name two groups",
			object: list(podtest.Pod(podtest.InGroup("a"), podtest.Annotation(scheduling.MinCountAnnotation, "1")), podtest.Pod(podtest.InGroup("b"), func(p *corev1.Pod) { p.Name = "other" })),
			wants:  []want{{typeInv, "spec.object.items[1].metadata.labels" + groupKey}}},
		{name: "pods of a Job grouped by their index name a group each",
			object: job("idx", parallelism(2), completions(2), indexed, tplAnnotation(scheduling.GroupByAnnotation, batchv1.JobCompletionIndexAnnotation)),
			wants:  []want{{typeInv, tplPath + ".metadata.labels" + groupKey}}},

		// Priority.
		{name: "a PriorityClass that does not exist", object: job("train", priorityClass("nope")),
			wants: []want{{typeNF, tplPath + ".spec.priorityClassName"}}},
		{name: "a priority that is not its class's", object: podtest.Pod(podtest.InGroup("g"), func(p *corev1.Pod) { p.Spec.Priority = ptr.To[int32](5) }),
			wants: []want{{typeFbd, "spec.object.spec.priority"}}},
		{name: "a preemption policy that is not its class's", object: podtest.Pod(podtest.InGroup("g"), func(p *corev1.Pod) { p.Spec.PreemptionPolicy = ptr.To(corev1.PreemptNever) }),
			wants: []want{{typeFbd, "spec.object.spec.preemptionPolicy"}}},
		{name: "the classes cannot be read", object: job("train"), lookup: fakeLookup{classErr: errDown},
			wants: []want{{typeInter, tplPath + ".spec.priorityClassName"}}},

		// The group the controller would create.
		{name: "nothing sizes the gang: no annotation", object: podtest.Pod(podtest.InGroup("solo")),
			wants: []want{{typeReq, "spec.object.metadata.annotations" + minCount}}},
		{name: "nothing sizes the gang: a pod grouped by instance, whose owner is not read",
			object: podtest.Pod(podtest.InGroup("x"), podtest.Label(batchv1.JobNameLabel, "j"), podtest.Annotation(scheduling.GroupByAnnotation, scheduling.GroupByInstance)),
			wants:  []want{{typeReq, "spec.object.metadata.annotations" + minCount}}},
		{name: "a group from role annotations is not modelled",
			object: podtest.Pod(podtest.InGroup("r"), podtest.Label(scheduling.RoleLabel, "leader"), podtest.Annotation(scheduling.RolesAnnotation, "2"), podtest.Annotation(scheduling.RoleCountAnnotation, "1")),
			wants:  []want{{typeFbd, "spec.object.metadata.annotations" + rolesKey}}},
		{name: "a Workload template the server cannot read",
			object: job("train", inGroup("wl"), tplAnnotation(scheduling.WorkloadAnnotation, "llm"), tplAnnotation(scheduling.TemplateAnnotation, "workers")),
			wants:  []want{{typeInv, tplPath + ".metadata.annotations"}}},
		{name: "a Workload that does not exist",
			object: job("train", inGroup("wl"), tplAnnotation(scheduling.WorkloadAnnotation, "llm"), tplAnnotation(scheduling.TemplateAnnotation, "workers")),
			lookup: fakeLookup{workloads: map[string]*v1alpha1.Workload{}},
			wants:  []want{{typeInv, tplPath + ".metadata.annotations"}}},
		{name: "the Workload cannot be read",
			object: job("train", inGroup("wl"), tplAnnotation(scheduling.WorkloadAnnotation, "llm"), tplAnnotation(scheduling.TemplateAnnotation, "workers")),
			lookup: fakeLookup{workloads: map[string]*v1alpha1.Workload{}, wlErr: errDown},
			wants:  []want{{typeInter, tplPath + ".metadata.annotations"}}},
		{name: "the stored groups cannot be read", object: job("train"), lookup: fakeLookup{groupErr: errDown},
			wants: []want{{typeInter, "spec"}}},

		// spec.podGroup.
		{name: "spec.podGroup of another name than the pods'", object: job("train"), podGroup: gangGroup("other", 4),
			wants: []want{{typeInv, pgPath + ".metadata.name"}}},
		{name: "spec.podGroup without a name", object: job("train"), podGroup: gangGroup("", 4),
			wants: []want{{typeReq, pgPath + ".metadata.name"}}},
		{name: "spec.podGroup of another namespace", object: job("train"),
			podGroup: func() *v1alpha1.PodGroup { pg := gangGroup("train", 4); pg.Namespace = "elsewhere"; return pg }(),
			wants:    []want{{typeInv, pgPath + ".metadata.namespace"}}},
		{name: "spec.podGroup that is stored already", object: job("train"), podGroup: gangGroup("train", 4), lookup: stored,
			wants: []want{{typeInv, pgPath + ".metadata.name"}}},
		{name: "spec.podGroup of minCount 0", object: job("train"), podGroup: gangGroup("train", 0),
			wants: []want{{typeInv, pgPath + ".spec.schedulingPolicy.gang.minCount"}}},
		{name: "spec.podGroup without a policy", object: job("train"), podGroup: &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "train"}},
			wants: []want{{typeReq, pgPath + ".spec.schedulingPolicy"}}},
		{name: "spec.podGroup naming a Workload the server cannot read", object: job("train"),
			podGroup: &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "train"}, Spec: v1alpha1.PodGroupSpec{WorkloadRef: &v1alpha1.WorkloadReference{WorkloadName: "llm", TemplateName: "w"}}},
			wants:    []want{{typeFbd, pgPath + ".spec.workloadRef"}}},
		{name: "spec.podGroup naming a Workload that does not exist", object: job("train"), lookup: fakeLookup{workloads: map[string]*v1alpha1.Workload{}},
			podGroup: &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "train"}, Spec: v1alpha1.PodGroupSpec{WorkloadRef: &v1alpha1.WorkloadReference{WorkloadName: "llm", TemplateName: "w"}}},
			wants:    []want{{typeInv, pgPath + ".spec.workloadRef.workloadName"}}},

		// spec.podGroup alone, a PodGroup with pod templates.
		{name: "no object, and spec.podGroup without roles", podGroup: gangGroup("g", 2), wants: []want{{typeReq, "spec.object"}}},
		{name: "no object, and a role that is not createdLater without a template", podGroup: rolesGroup("g", role("leader", 1, "1"), role("worker", 2, "")),
			wants: []want{{typeReq, pgPath + ".spec.roles[1].template"}}},
		{name: "no object, and a role of the Workload template without a template",
			podGroup: &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "g"}, Spec: v1alpha1.PodGroupSpec{WorkloadRef: &v1alpha1.WorkloadReference{WorkloadName: "spark", TemplateName: "job"}}},
			lookup:   fakeLookup{workloads: map[string]*v1alpha1.Workload{ns + "/spark": workloadWithRoles("spark", "job", role("driver", 1, ""))}},
			wants:    []want{{typeReq, pgPath + ".spec.roles[0].template"}}},
		{name: "no object, and spec.podGroup without a name", podGroup: rolesGroup("", role("w", 1, "1")),
			wants: []want{{typeReq, pgPath + ".metadata.name"}}},
		{name: "no object, and spec.podGroup that is stored already", podGroup: rolesGroup("train", role("w", 4, "1")), lookup: stored,
			wants: []want{{typeInv, pgPath + ".metadata.name"}}},
		{name: "no object, and spec.podGroup that the API would refuse",
			podGroup: func() *v1alpha1.PodGroup {
				pg := rolesGroup("g", role("w", 2, "1"))
				pg.Spec.SchedulingPolicy.Gang.MinCount = 3
				return pg
			}(),
			wants: []want{{typeInv, pgPath + ".spec.schedulingPolicy.gang.minCount"}}},
		{name: "no object, and role pods that come to more than MaxPodBytes",
			podGroup: func() *v1alpha1.PodGroup {
				r := role("w", MaxPods, "1")
				r.Template.NodeSelector = map[string]string{}
				for i := range 250 {
					r.Template.NodeSelector[fmt.Sprintf("example.com/k%03d", i)] = strings.Repeat("x", 50)
				}
				return rolesGroup("g", r)
			}(),
			wants: []want{{typeLong, pgPath + ".spec.roles[0].template"}}},
		{name: "no object, and the stored groups cannot be read", podGroup: rolesGroup("g", role("w", 1, "1")), lookup: fakeLookup{groupErr: errDown},
			wants: []want{{typeInter, "spec"}}},
		{name: "no object, and the classes cannot be read", podGroup: rolesGroup("g", role("w", 1, "1")), lookup: fakeLookup{classErr: errDown},
			wants: []want{{typeInter, pgPath + ".spec.roles[0].template.spec.priorityClassName"}}},
	}
}

func TestFromReviewRefusals(t *testing.T) {
	for _, tt := range refusalCases() {
		t.Run(tt.name, func(t *testing.T) {
			g, errs := FromReview(ns, reviewOf(t, tt.object, tt.podGroup), lookupOf(&tt.lookup))
			expectErrors(t, errs, tt.wants...)
			if g != nil {
				t.Errorf("a refused review returned a gang: %+v", g)
			}
		})
	}
}
