package capacity

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

type nodeOpt func(*corev1.Node)

func node(name string, cpu, mem string, opts ...nodeOpt) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{"kubernetes.io/hostname": name}},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse(cpu),
				corev1.ResourceMemory: resource.MustParse(mem),
				corev1.ResourcePods:   resource.MustParse("110"),
			},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
	for _, o := range opts {
		o(n)
	}
	return n
}

func withLabel(k, v string) nodeOpt { return func(n *corev1.Node) { n.Labels[k] = v } }
func withTaint(k string, e corev1.TaintEffect) nodeOpt {
	return func(n *corev1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: k, Value: "x", Effect: e})
	}
}
func withMaxPods(v string) nodeOpt {
	return func(n *corev1.Node) { n.Status.Allocatable[corev1.ResourcePods] = resource.MustParse(v) }
}
func withAllocatable(name corev1.ResourceName, v string) nodeOpt {
	return func(n *corev1.Node) { n.Status.Allocatable[name] = resource.MustParse(v) }
}
func notReady(n *corev1.Node)      { n.Status.Conditions[0].Status = corev1.ConditionFalse }
func unschedulable(n *corev1.Node) { n.Spec.Unschedulable = true }

type podOpt func(*corev1.Pod)

func pod(name, cpu string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
		}}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func pods(prefix string, n int, cpu string, opts ...podOpt) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = pod(fmt.Sprintf("%s-%d", prefix, i), cpu, opts...)
	}
	return out
}

func withMemory(v string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse(v)
	}
}
func withRequest(name corev1.ResourceName, v string) podOpt {
	return func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Requests[name] = resource.MustParse(v) }
}
func withInit(cpu string, sidecar bool) podOpt {
	return func(p *corev1.Pod) {
		c := corev1.Container{Name: fmt.Sprintf("init-%d", len(p.Spec.InitContainers)), Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
		}}
		if sidecar {
			always := corev1.ContainerRestartPolicyAlways
			c.RestartPolicy = &always
		}
		p.Spec.InitContainers = append(p.Spec.InitContainers, c)
	}
}
func withOverhead(cpu string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	}
}
func withNodeSelector(k, v string) podOpt {
	return func(p *corev1.Pod) {
		if p.Spec.NodeSelector == nil {
			p.Spec.NodeSelector = map[string]string{}
		}
		p.Spec.NodeSelector[k] = v
	}
}
func withAffinityIn(k string, vs ...string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: k, Operator: corev1.NodeSelectorOpIn, Values: vs}}}},
		}}}
	}
}
func withToleration(k string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: k, Operator: corev1.TolerationOpExists})
	}
}
func withPodLabel(k, v string) podOpt {
	return func(p *corev1.Pod) {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[k] = v
	}
}

// withPodAffinity requires a pod labelled k=v on the same node, in the
// pod's namespace, or in namespaces when given.
func withPodAffinity(k, v string, namespaces ...string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{k: v}},
			TopologyKey:   "kubernetes.io/hostname",
			Namespaces:    namespaces,
		}}}}
	}
}
func onNode(n string) podOpt { return func(p *corev1.Pod) { p.Spec.NodeName = n } }
func version(rv int) podOpt {
	return func(p *corev1.Pod) { p.ResourceVersion = strconv.Itoa(rv) }
}
func phase(ph corev1.PodPhase) podOpt {
	return func(p *corev1.Pod) { p.Status.Phase = ph }
}
func deleting(p *corev1.Pod) {
	t := metav1.NewTime(time.Unix(100, 0))
	p.DeletionTimestamp = &t
}
func pinnedTo(n string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{scheduling.PinRequirement(n)}}},
		}}}
	}
}

// trackerOf builds a tracker with nodes and bound unmanaged pods.
func trackerOf(nodes []*corev1.Node, bound ...*corev1.Pod) *Tracker {
	t := NewTracker(true)
	for _, n := range nodes {
		t.SetNode(n)
	}
	for _, p := range bound {
		t.SetUnmanagedPod(p)
	}
	return t
}

// snapshotOf is trackerOf's snapshot on the default filters.
func snapshotOf(nodes []*corev1.Node, bound ...*corev1.Pod) *Snapshot {
	return trackerOf(nodes, bound...).Snapshot(defaultFilters())
}

var (
	filtersOnce sync.Once
	filtersErr  error
	shared      *Filters
)

// defaultFilters are the scheduler's filters on a cluster with no storage
// or DRA objects, built once for the package's tests.
func defaultFilters() *Filters {
	filtersOnce.Do(func() {
		shared, filtersErr = startFilters(context.Background())
	})
	if filtersErr != nil {
		panic(filtersErr)
	}
	return shared
}

// startFilters builds the filters on a fake clientset holding objs (storage
// classes, volumes, claims, DRA objects), and waits for their informers.
func startFilters(ctx context.Context, objs ...runtime.Object) (*Filters, error) {
	f, err := NewFilters(ctx, fake.NewClientset(objs...), true)
	if err != nil {
		return nil, err
	}
	return f, f.Start(ctx)
}

// placedOn maps pod name to node.
func placedOn(r Result) map[string]string {
	out := map[string]string{}
	for _, a := range r.Assignments {
		out[a.Pod.Name] = a.Node
	}
	return out
}

// perNode counts pods placed on each node.
func perNode(r Result) map[string]int {
	out := map[string]int{}
	for _, a := range r.Assignments {
		out[a.Node]++
	}
	return out
}

// gk is the group key a test writes as "namespace/name", or as a name alone.
func gk(s string) scheduling.GroupKey {
	if ns, name, ok := strings.Cut(s, "/"); ok {
		return scheduling.NewGroupKey(ns, name)
	}
	return scheduling.NewGroupKey("", s)
}
