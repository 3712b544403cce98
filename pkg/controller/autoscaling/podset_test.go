package autoscaling

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

func gangPod(name string, mod ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: "uid-" + "name",
			Labels:      map[string]string{scheduling.PodGroupLabel: "g", scheduling.ManagedLabel: "true", "app": "trainer"},
			Annotations: map[string]string{"user": "kept off"}},
		Spec: corev1.PodSpec{
			ServiceAccountName: "trainer",
			Containers: []corev1.Container{{Name: "main", Image: "trainer:1", Command: []string{"train"},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), "nvidia.com/gpu": resource.MustParse("8")},
					Limits:   corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")},
				}}},
			SchedulingGates: []corev1.PodSchedulingGate{{Name: scheduling.AdmissionGate}},
			NodeSelector:    map[string]string{"pool": "gpu"},
			Tolerations:     []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}},
			Volumes:         []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
	for _, m := range mod {
		m(p)
	}
	return p
}

func TestCapacityRequestTemplate(t *testing.T) {
	withInit := func(p *corev1.Pod) {
		p.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("6")}}}}
	}
	withHostPort := func(p *corev1.Pod) {
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080, Protocol: corev1.ProtocolTCP}, {ContainerPort: 90}}
	}
	tests := []struct {
		name      string
		pod       *corev1.Pod
		wantCPU   string
		wantPorts []int32
	}{
		{name: "the pod's requests, limits equal", pod: gangPod("p"), wantCPU: "2"},
		{name: "an init container larger than the containers decides", pod: gangPod("p", withInit), wantCPU: "6"},
		{name: "host ports carry over, other ports do not", pod: gangPod("p", withHostPort), wantCPU: "2", wantPorts: []int32{8080}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tpl := CapacityRequestTemplate(tc.pod, "g", testRequestImage)
			if got := tpl.Labels[scheduling.CapacityRequestLabel]; got != "g" {
				t.Errorf("label %s = %q", scheduling.CapacityRequestLabel, got)
			}
			if _, ok := tpl.Labels[scheduling.PodGroupLabel]; ok {
				t.Errorf("the group label is kept: the pod would be gated")
			}
			if _, ok := tpl.Labels[scheduling.ManagedLabel]; ok {
				t.Errorf("the managed label is kept")
			}
			if tpl.Labels["app"] != "trainer" {
				t.Errorf("the pod's own labels are not kept: %v", tpl.Labels)
			}
			if tpl.Annotations[scheduling.KarpenterDoNotDisrupt] != "true" || tpl.Annotations[scheduling.ClusterAutoscalerSafeToEvict] != "false" || tpl.Annotations["user"] != "" {
				t.Errorf("annotations %v", tpl.Annotations)
			}
			s := tpl.Spec
			if s.PriorityClassName != scheduling.CapacityRequestPriorityClass || s.Priority != nil {
				t.Errorf("priority class %q, priority %v", s.PriorityClassName, s.Priority)
			}
			if len(s.SchedulingGates) != 0 || len(s.Volumes) != 0 || s.ServiceAccountName != "" || *s.AutomountServiceAccountToken || *s.TerminationGracePeriodSeconds != 0 {
				t.Errorf("gates %v, volumes %v, service account %q, token %v, grace %v", s.SchedulingGates, s.Volumes, s.ServiceAccountName, *s.AutomountServiceAccountToken, *s.TerminationGracePeriodSeconds)
			}
			if s.NodeSelector["pool"] != "gpu" || len(s.Tolerations) != 1 {
				t.Errorf("constraints lost: %v %v", s.NodeSelector, s.Tolerations)
			}
			if len(s.Containers) != 1 || s.Containers[0].Image != testRequestImage || len(s.Containers[0].Command) != 0 || len(s.InitContainers) != 0 {
				t.Fatalf("containers %+v, init %+v", s.Containers, s.InitContainers)
			}
			c := s.Containers[0]
			if got := c.Resources.Requests[corev1.ResourceCPU]; got.Cmp(resource.MustParse(tc.wantCPU)) != 0 {
				t.Errorf("cpu request %s, want %s", got.String(), tc.wantCPU)
			}
			if got := c.Resources.Requests["nvidia.com/gpu"]; got.Cmp(resource.MustParse("8")) != 0 {
				t.Errorf("gpu request %s, want 8", got.String())
			}
			for r, q := range c.Resources.Requests {
				if l := c.Resources.Limits[r]; l.Cmp(q) != 0 {
					t.Errorf("limit of %s is %s, request %s", r, l.String(), q.String())
				}
			}
			var ports []int32
			for _, p := range c.Ports {
				ports = append(ports, p.HostPort)
			}
			if len(ports) != len(tc.wantPorts) || (len(ports) > 0 && ports[0] != tc.wantPorts[0]) {
				t.Errorf("host ports %v, want %v", ports, tc.wantPorts)
			}
		})
	}
}

func TestPodSets(t *testing.T) {
	big := func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("4")
	}
	tpl := gangPod("template")
	tests := []struct {
		name       string
		pods       []*corev1.Pod
		wantCounts []int32
	}{
		{name: "pods of one shape are one set", pods: []*corev1.Pod{gangPod("a"), gangPod("b"), gangPod("c")}, wantCounts: []int32{3}},
		{name: "two shapes, in the order they come", pods: []*corev1.Pod{gangPod("a", big), gangPod("b"), gangPod("c", big)}, wantCounts: []int32{2, 1}},
		{name: "a template given for each pod not yet created", pods: []*corev1.Pod{gangPod("a", big), tpl, tpl, tpl}, wantCounts: []int32{1, 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sets, hash := PodSets(tc.pods, "g", testRequestImage)
			var counts []int32
			for _, s := range sets {
				counts = append(counts, s.Count)
			}
			if len(counts) != len(tc.wantCounts) {
				t.Fatalf("counts %v, want %v", counts, tc.wantCounts)
			}
			for i := range counts {
				if counts[i] != tc.wantCounts[i] {
					t.Errorf("counts %v, want %v", counts, tc.wantCounts)
				}
			}
			if _, again := PodSets(tc.pods, "g", testRequestImage); again != hash || hash == "" {
				t.Errorf("hash %q then %q: not stable", hash, again)
			}
			if _, other := PodSets(tc.pods[:1], "g", testRequestImage); len(tc.pods) > 1 && other == hash {
				t.Errorf("another demand has the same hash %q", hash)
			}
		})
	}
}

const testRequestImage = scheduling.DefaultCapacityRequestImage

// TestInOneDomain: a gang with a required topology asks for its nodes in
// one domain: every capacity-request pod has a required pod affinity, on
// the level's key, to the group's capacity-request pods, beside its own
// affinity, and the demand's hash changes with it.
func TestInOneDomain(t *testing.T) {
	withNodeAffinity := func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"gpu"}}}}},
		}}}
	}
	big := func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("4")
	}
	sets, plain := PodSets([]*corev1.Pod{gangPod("a", withNodeAffinity), gangPod("b", big)}, "g", testRequestImage)
	sets, hash := InOneDomain(sets, "g", corev1.LabelTopologyZone)
	if hash == plain {
		t.Errorf("hash %q unchanged: a request made without the constraint would be taken for this one", hash)
	}
	want := []corev1.PodAffinityTerm{{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{scheduling.CapacityRequestLabel: "g"}},
		TopologyKey:   corev1.LabelTopologyZone,
	}}
	for i, s := range sets {
		a := s.Template.Spec.Affinity
		if diff := cmp.Diff(want, a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution); diff != "" {
			t.Errorf("set %d: pod affinity (-want +got):\n%s", i, diff)
		}
		if i == 0 && a.NodeAffinity == nil {
			t.Errorf("set 0 lost the pod's own node affinity")
		}
	}
}
