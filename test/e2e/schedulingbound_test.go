package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// TestSchedulingInputsAreBounded creates, through kube-apiserver, labelled
// pods whose affinity is under and over scheduling.MaxPodSchedulingBytes,
// plain and already prepared (gate, finalizer and managed label set by the
// user, so the mutating webhook is not called), and one whose roles template
// is over scheduling.MaxPodMusterAnnotationBytes, and others whose
// nodeSelector is under and over the same bound (the fat nodeSelectors that
// grew muster-apiserver's memory 4x their size) or that have more than
// scheduling.MaxPodContainers containers: the validating webhook's match
// condition sends the large ones, and muster-pod-labels checks the
// containers, the scheduling gates and the finalizers; all are refused
// naming the field.
func TestSchedulingInputsAreBounded(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	hosts := func(n int) *corev1.Affinity {
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
	prepare := func(p *corev1.Pod) {
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: scheduling.AdmissionGate}}
		p.Finalizers = []string{scheduling.TrackingFinalizer}
		p.Labels[scheduling.ManagedLabel] = "true"
	}
	// padded is a valid roles template followed by pad spaces.
	padded := func(pad int) map[string]string {
		return map[string]string{
			scheduling.RoleCountAnnotation:     "1",
			scheduling.RolesTemplateAnnotation: `[{"name":"worker","count":2,"template":{"requests":{"cpu":"1"}}}]` + strings.Repeat(" ", pad),
		}
	}
	nodeSelector := func(n int) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.NodeSelector = map[string]string{}
			for j := range n {
				p.Spec.NodeSelector[fmt.Sprintf("%0253d/%063d", j, j)] = strings.Repeat("v", 63)
			}
		}
	}
	containers := func(n int) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			for j := len(p.Spec.Containers); j < n; j++ {
				c := p.Spec.Containers[0]
				c.Name = fmt.Sprintf("c-%d", j)
				p.Spec.Containers = append(p.Spec.Containers, c)
			}
		}
	}
	gates := func(n int) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			for j := range n {
				p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: fmt.Sprintf("example.com/gate-%d", j)})
			}
		}
	}
	// Finalizers only on pods that are refused: a stored pod would keep
	// them, and its namespace, for ever.
	finalizers := func(n int) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			for j := range n {
				p.Finalizers = append(p.Finalizers, fmt.Sprintf("example.com/finalizer-%d", j))
			}
		}
	}
	tests := []struct {
		name        string
		hosts       int
		annotations map[string]string
		prepared    bool
		mutate      func(*corev1.Pod)
		refused     string
	}{
		{"an affinity on 100 hosts is created", 100, nil, false, nil, ""},
		{"an affinity on 20,000 hosts is refused", 20000, nil, false, nil, "spec.affinity"},
		{"an affinity on 20,000 hosts is refused on a pod that comes prepared", 20000, nil, true, nil, "spec.affinity"},
		{"a roles template padded over 64 KiB is refused", 0, padded(scheduling.MaxPodMusterAnnotationBytes), false, nil, scheduling.RolesTemplateAnnotation},
		{"100 labels of the longest key and value are refused", -100, nil, false, nil, "metadata.labels"},
		{"a nodeSelector of 16 entries of the longest key and value is created", 0, nil, false, nodeSelector(scheduling.NodeSelectorCheckCount), ""},
		{"a nodeSelector of 100 entries of the longest key and value is refused", 0, nil, false, nodeSelector(100), "spec.nodeSelector"},
		{"a nodeSelector of 100 entries is refused on a pod that comes prepared", 0, nil, true, nodeSelector(100), "spec.nodeSelector"},
		{"64 containers are created", 0, nil, false, containers(scheduling.MaxPodContainers), ""},
		{"65 containers are refused", 0, nil, false, containers(scheduling.MaxPodContainers + 1), "spec.containers: Too many: 65"},
		{"31 scheduling gates and Muster's are created", 0, nil, false, gates(scheduling.MaxPodSchedulingGates - 1), ""},
		{"32 scheduling gates and Muster's are refused", 0, nil, false, gates(scheduling.MaxPodSchedulingGates), "spec.schedulingGates: Too many: 33"},
		{"32 finalizers and Muster's are refused", 0, nil, false, finalizers(scheduling.MaxPodFinalizers), "metadata.finalizers: Too many: 33"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPod(ns, fmt.Sprintf("bound-%d", i), podOpts{group: "bound", annotations: tt.annotations})
			switch {
			case tt.hosts > 0:
				p.Spec.Affinity = hosts(tt.hosts)
			case tt.hosts < 0: // that many long labels
				for j := range -tt.hosts {
					p.Labels[fmt.Sprintf("%0253d/%063d", j, j)] = strings.Repeat("v", 63)
				}
			}
			if tt.annotations != nil {
				p.Labels[scheduling.RoleLabel] = "driver"
			}
			if tt.mutate != nil {
				tt.mutate(p)
			}
			if tt.prepared {
				prepare(p)
			}
			_, err := kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
			switch {
			case tt.refused == "" && err != nil:
				t.Errorf("create: %v", err)
			case tt.refused != "" && err == nil:
				t.Errorf("created, want it refused naming %s", tt.refused)
			case tt.refused != "" && !strings.Contains(err.Error(), tt.refused):
				t.Errorf("refused with %q, want the field %s named", err, tt.refused)
			}
		})
	}
}

// TestSchedulingInputsAreBoundedOnUpdate updates labelled pods through
// kube-apiserver, where muster-pod-labels checks updates in the webhook's
// place: an update may not bring labels above scheduling.LabelCheckCount,
// tolerations above scheduling.SchedulingCheckTolerations or a gated pod's
// nodeSelector above scheduling.NodeSelectorCheckCount, nor make Muster's
// annotations longer than scheduling.MaxPodMusterAnnotationBytes bytes
// together, nor a gated pod's required node affinity (KEP-3838) longer than
// scheduling.MaxPodSchedulingBytes, nor add finalizers past
// scheduling.MaxPodFinalizers; it is refused naming the field. Smaller
// updates go through.
func TestSchedulingInputsAreBoundedOnUpdate(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	tolerations := func(n int) []corev1.Toleration {
		out := make([]corev1.Toleration, n)
		for i := range out {
			out[i] = corev1.Toleration{Key: fmt.Sprintf("example.com/taint-%d", i), Operator: corev1.TolerationOpExists}
		}
		return out
	}
	// hostAffinity requires one of n hosts, by short names.
	hostAffinity := func(n int) *corev1.Affinity {
		values := make([]string, n)
		for i := range values {
			values[i] = fmt.Sprint(i)
		}
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: values}}}},
		}}}
	}
	tests := []struct {
		name    string
		change  func(p *corev1.Pod)
		refused string
		// gated puts the pod in a group that is never complete, so that it
		// is still gated when it is updated: kube-apiserver lets only a
		// gated pod's node affinity change.
		gated bool
	}{
		{"adding 2 labels is allowed", func(p *corev1.Pod) { p.Labels["a"], p.Labels["b"] = "1", "2" }, "", false},
		{"adding labels past 64 is refused", func(p *corev1.Pod) {
			for j := range 70 {
				p.Labels[fmt.Sprintf("example.com/label-%d", j)] = "v"
			}
		}, "metadata.labels: Too many", false},
		{"adding 2 tolerations is allowed", func(p *corev1.Pod) { p.Spec.Tolerations = append(p.Spec.Tolerations, tolerations(2)...) }, "", false},
		{"adding tolerations past 16 is refused", func(p *corev1.Pod) { p.Spec.Tolerations = append(p.Spec.Tolerations, tolerations(20)...) }, "spec.tolerations: Too many", false},
		{"adding 2 nodeSelector entries to a gated pod is allowed (KEP-3838)", func(p *corev1.Pod) {
			p.Spec.NodeSelector = map[string]string{"example.com/a": "1", "example.com/b": "2"}
		}, "", true},
		{"adding nodeSelector entries past 16 is refused", func(p *corev1.Pod) {
			p.Spec.NodeSelector = map[string]string{}
			for j := range 20 {
				p.Spec.NodeSelector[fmt.Sprintf("example.com/key-%d", j)] = "v"
			}
		}, "spec.nodeSelector: Too many", true},
		{"a min-count changed to a valid value is allowed", func(p *corev1.Pod) { p.Annotations[scheduling.MinCountAnnotation] = "3" }, "", false},
		{"a roles template grown past 64 KiB is refused", func(p *corev1.Pod) {
			p.Annotations[scheduling.RolesTemplateAnnotation] = `[{"name":"worker","count":2,"template":{}}]` + strings.Repeat(" ", scheduling.MaxPodMusterAnnotationBytes)
		}, "metadata.annotations: Too long", false},
		{"a roles template of 4-byte characters, within 64 Ki characters but past 64 KiB, is refused", func(p *corev1.Pod) {
			p.Annotations[scheduling.RolesTemplateAnnotation] = `[{"name":"worker","count":2,"template":{}}]` + strings.Repeat("\U0001F600", scheduling.MaxPodMusterAnnotationBytes/2)
		}, "metadata.annotations: Too long: Muster's annotations are", false},
		{"a required node affinity set on a gated pod (KEP-3838) is allowed", func(p *corev1.Pod) { p.Spec.Affinity = hostAffinity(20) }, "", true},
		{"a required node affinity past 32 KiB set on a gated pod is refused", func(p *corev1.Pod) { p.Spec.Affinity = hostAffinity(20000) },
			"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution: Too long", true},
		{"adding finalizers past 32 is refused", func(p *corev1.Pod) {
			for j := range scheduling.MaxPodFinalizers {
				p.Finalizers = append(p.Finalizers, fmt.Sprintf("example.com/finalizer-%d", j))
			}
		}, "metadata.finalizers: Too many: 33", false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := fmt.Sprintf("update-%d", i)
			opts := podOpts{group: "update", annotations: map[string]string{scheduling.MinCountAnnotation: "2"}}
			if tt.gated {
				opts = podOpts{group: "update-gated", annotations: map[string]string{scheduling.MinCountAnnotation: "100"}}
			}
			createPod(t, ctx, newPod(ns, name, opts))
			// Muster writes the pod too (its group, its status): read it
			// again on a conflict, as any client does.
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				p, err := kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				tt.change(p)
				_, err = kube.CoreV1().Pods(ns).Update(ctx, p, metav1.UpdateOptions{})
				return err
			})
			switch {
			case tt.refused == "" && err != nil:
				t.Errorf("update: %v", err)
			case tt.refused != "" && err == nil:
				t.Errorf("updated, want it refused with %q", tt.refused)
			case tt.refused != "" && !strings.Contains(err.Error(), tt.refused):
				t.Errorf("refused with %q, want %q", err, tt.refused)
			}
		})
	}
}
