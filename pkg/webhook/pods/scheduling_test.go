package pods

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/podtest"
)

// hostAffinity is a required node affinity on n host names, 14 bytes of
// JSON each.
func hostAffinity(n int) *corev1.Affinity {
	values := make([]string, n)
	for i := range values {
		values[i] = fmt.Sprintf("node-%06d", i)
	}
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: values}},
		}}},
	}}
}

// tolerations are n tolerations of the largest key the API accepts.
func tolerations(n int) []corev1.Toleration {
	out := make([]corev1.Toleration, n)
	for i := range out {
		out[i] = corev1.Toleration{Key: fmt.Sprintf("example.com/%0300d", i), Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	}
	return out
}

// withLabels adds n labels of the longest key and value the API accepts.
func withLabels(n int) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		for i := range n {
			podtest.Label(fmt.Sprintf("%0253d/%063d", i, i), strings.Repeat("v", 63))(p)
		}
	}
}

// withRolesTemplate makes the pod the driver of a gang whose roles template
// lists n worker roles, followed by pad spaces (valid JSON still).
func withRolesTemplate(n, pad int) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		roles := make([]string, n)
		for i := range roles {
			roles[i] = fmt.Sprintf(`{"name":"worker-%d","count":2,"template":{"requests":{"cpu":"1"}}}`, i)
		}
		podtest.Label(scheduling.RoleLabel, "driver")(p)
		podtest.Annotation(scheduling.RoleCountAnnotation, "1")(p)
		podtest.Annotation(scheduling.RolesTemplateAnnotation, "["+strings.Join(roles, ",")+"]"+strings.Repeat(" ", pad))(p)
	}
}

// withNodeSelector sets a nodeSelector of n entries of the longest key and
// value the API accepts.
func withNodeSelector(n int) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.NodeSelector = map[string]string{}
		for i := range n {
			p.Spec.NodeSelector[fmt.Sprintf("%0253d/%063d", i, i)] = strings.Repeat("v", 63)
		}
	}
}

// withContainers gives the pod n containers and init init containers.
func withContainers(n, init int) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Containers, p.Spec.InitContainers = nil, nil
		for i := range n {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: fmt.Sprintf("c-%d", i), Image: "app"})
		}
		for i := range init {
			p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: fmt.Sprintf("i-%d", i), Image: "app"})
		}
	}
}

func withScheduling(a *corev1.Affinity, t []corev1.Toleration) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.Affinity, p.Spec.Tolerations = a, t }
}

func TestValidateSchedulingInputs(t *testing.T) {
	const affinityField, tolerationsField = "spec.affinity", "spec.tolerations"
	tooLong := func(f string) want { return want{"FieldValueTooLong", f} }
	tests := []struct {
		name string
		pod  *corev1.Pod
		want []want
	}{
		{"a labelled pod without scheduling inputs is valid", podtest.Pod(podtest.InGroup("train")), nil},
		{"a one-per-node anti-affinity is valid", podtest.Pod(podtest.InGroup("train"), withScheduling(&corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: "kubernetes.io/hostname"}}}}, nil)), nil},
		{"a node affinity on 1,000 hosts is valid", podtest.Pod(podtest.InGroup("train"), withScheduling(hostAffinity(1000), nil)), nil},
		{"a node affinity over the bound is refused, naming spec.affinity", podtest.Pod(podtest.InGroup("train"), withScheduling(hostAffinity(3000), nil)), []want{tooLong(affinityField)}},
		{"the bound is on the sum: the largest field is named", podtest.Pod(podtest.InGroup("train"), withScheduling(hostAffinity(600), tolerations(80))), []want{tooLong(tolerationsField)}},
		{"an unlabelled pod is not Muster's to bound", podtest.Pod(withScheduling(hostAffinity(20000), nil)), nil},
		{"a nodeSelector of 16 of the longest entries is valid", podtest.Pod(podtest.InGroup("train"), withNodeSelector(scheduling.NodeSelectorCheckCount)), nil},
		{"a nodeSelector over the bound is refused, naming spec.nodeSelector", podtest.Pod(podtest.InGroup("train"), withNodeSelector(100)), []want{tooLong("spec.nodeSelector")}},
		{"the nodeSelector counts toward the sum with the affinity", podtest.Pod(podtest.InGroup("train"), withScheduling(hostAffinity(2000), nil), withNodeSelector(16)),
			[]want{tooLong(affinityField)}},
		{"64 containers and init containers are valid", podtest.Pod(podtest.InGroup("train"), withContainers(60, 4)), nil},
		{"65 containers are refused, naming spec.containers", podtest.Pod(podtest.InGroup("train"), withContainers(65, 0)), []want{{"FieldValueTooMany", "spec.containers"}}},
		{"mostly init containers are refused, naming spec.initContainers", podtest.Pod(podtest.InGroup("train"), withContainers(1, 64)), []want{{"FieldValueTooMany", "spec.initContainers"}}},
		{"an unlabelled pod's containers are not Muster's to bound", podtest.Pod(withContainers(100, 0)), nil},
		{"32 scheduling gates and 32 finalizers are valid", podtest.Pod(podtest.InGroup("train"), withGatesAndFinalizers(32, 32)), nil},
		{"33 scheduling gates are refused, naming spec.schedulingGates", podtest.Pod(podtest.InGroup("train"), withGatesAndFinalizers(33, 1)),
			[]want{{"FieldValueTooMany", "spec.schedulingGates"}}},
		{"33 finalizers are refused, naming metadata.finalizers", podtest.Pod(podtest.InGroup("train"), withGatesAndFinalizers(1, 33)),
			[]want{{"FieldValueTooMany", "metadata.finalizers"}}},
		{"an unlabelled pod's gates and finalizers are not Muster's to bound", podtest.Pod(withGatesAndFinalizers(100, 100)), nil},

		{"64 labels of the longest key and value are valid", podtest.Pod(podtest.InGroup("train"), withLabels(63)), nil},
		{"labels over the bound are refused, naming metadata.labels", podtest.Pod(podtest.InGroup("train"), withLabels(100)), []want{tooLong("metadata.labels")}},

		{"a roles template of eight roles (the pod's own and seven) is valid", podtest.Pod(podtest.InGroup("train"), withRolesTemplate(7, 0)), nil},
		{"a roles template padded over the bound is refused, naming it", podtest.Pod(podtest.InGroup("train"), withRolesTemplate(1, scheduling.MaxPodMusterAnnotationBytes)),
			[]want{tooLong("metadata.annotations[" + scheduling.RolesTemplateAnnotation + "]")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expectErrors(t, validateCreate(tt.pod), tt.want...)
		})
	}
}

// TestToleratedCountCannotReachTheBound: a pod the validating webhook's match
// condition does not send (no affinity, no spread, at most
// SchedulingCheckTolerations tolerations) is always within the bound.
func TestToleratedCountCannotReachTheBound(t *testing.T) {
	p := podtest.Pod(podtest.InGroup("train"), withScheduling(nil, tolerations(scheduling.SchedulingCheckTolerations)))
	for i := range p.Spec.Tolerations {
		p.Spec.Tolerations[i].Key = "example.com/" + fmt.Sprintf("%0305d", i) // 317 characters, the most a key may have
		p.Spec.Tolerations[i].Value = fmt.Sprintf("%063d", i)
		p.Spec.Tolerations[i].Operator = corev1.TolerationOpEqual
		p.Spec.Tolerations[i].TolerationSeconds = new(int64)
		*p.Spec.Tolerations[i].TolerationSeconds = 1 << 62
	}
	if n := jsonSize(p.Spec.Tolerations, false); n > scheduling.MaxPodSchedulingBytes {
		t.Errorf("%d of the largest tolerations are %d bytes, over the bound %d: the match condition would let them through unmeasured",
			scheduling.SchedulingCheckTolerations, n, scheduling.MaxPodSchedulingBytes)
	}
}

// TestNodeSelectorCountCannotReachTheBound: a pod the validating webhook's
// match condition does not send (no affinity, no spread, at most
// SchedulingCheckTolerations tolerations and NodeSelectorCheckCount
// nodeSelector entries, each of the largest) is always within the bound.
func TestNodeSelectorCountCannotReachTheBound(t *testing.T) {
	p := podtest.Pod(podtest.InGroup("train"), withScheduling(nil, tolerations(scheduling.SchedulingCheckTolerations)), withNodeSelector(scheduling.NodeSelectorCheckCount))
	if errs := validateSchedulingInputs(p); len(errs) != 0 {
		t.Errorf("%d tolerations and %d of the longest nodeSelector entries are refused: the match condition would let such a pod through unmeasured: %v",
			scheduling.SchedulingCheckTolerations, scheduling.NodeSelectorCheckCount, errs)
	}
}

// TestLabelCountCannotReachTheBound: a pod the validating webhook's match
// condition does not send for its labels (at most LabelCheckCount) is always
// within MaxPodLabelBytes.
func TestLabelCountCannotReachTheBound(t *testing.T) {
	if errs := validateLabelSize(podtest.Pod(podtest.InGroup("train"), withLabels(scheduling.LabelCheckCount-1))); len(errs) != 0 {
		t.Errorf("%d of the longest labels are refused: the match condition would let such a pod through unmeasured: %v", scheduling.LabelCheckCount, errs)
	}
}

// withGatesAndFinalizers gives a pod gates scheduling gates and finalizers
// finalizers.
func withGatesAndFinalizers(gates, finalizers int) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		for i := range gates {
			p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: fmt.Sprintf("example.com/gate-%d", i)})
		}
		for i := range finalizers {
			p.Finalizers = append(p.Finalizers, fmt.Sprintf("example.com/finalizer-%d", i))
		}
	}
}
