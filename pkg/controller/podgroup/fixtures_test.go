package podgroup

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

const (
	testNS = "ns"
	// otherNS is a second namespace, of another tenant.
	otherNS   = "other"
	testGroup = "pg"
)

// testKey is the key of the group most tests sync.
var testKey = scheduling.NewGroupKey(testNS, testGroup)

// gk is the group key a test writes as "namespace/name".
func gk(s string) scheduling.GroupKey {
	ns, name, _ := strings.Cut(s, "/")
	return scheduling.NewGroupKey(ns, name)
}

// t0 is the fake clock's start.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

var (
	podsGVR      = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	podGVK       = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	podGroupsGVR = v1alpha1.SchemeGroupVersion.WithResource("podgroups")
	podGroupGVK  = v1alpha1.SchemeGroupVersion.WithKind("PodGroup")
)

type podMod func(*corev1.Pod)

// newPod returns a pod of testGroup as the webhook leaves it: labelled,
// gated, carrying the tracking finalizer, pending, not bound.
func newPod(name string, mods ...podMod) *corev1.Pod {
	p := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:              name,
			Namespace:         testNS,
			UID:               types.UID("uid-" + name),
			CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour)),
			Labels:            map[string]string{scheduling.PodGroupLabel: testGroup, scheduling.ManagedLabel: "true"},
			Finalizers:        []string{scheduling.TrackingFinalizer},
		},
		Spec: corev1.PodSpec{
			Containers:      []corev1.Container{{Name: "c", Image: "busybox"}},
			SchedulingGates: []corev1.PodSchedulingGate{{Name: scheduling.AdmissionGate}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	for _, m := range mods {
		m(p)
	}
	return p
}

// pods returns n pods named <prefix>-<i>.
func pods(prefix string, n int, mods ...podMod) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = newPod(fmt.Sprintf("%s-%d", prefix, i), mods...)
	}
	return out
}

func gates(names ...string) podMod {
	return func(p *corev1.Pod) {
		p.Spec.SchedulingGates = nil
		for _, n := range names {
			p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: n})
		}
	}
}

// ungated drops every scheduling gate.
func ungated(p *corev1.Pod) { p.Spec.SchedulingGates = nil }

func noFinalizer(p *corev1.Pod) { p.Finalizers = nil }

func finalizers(names ...string) podMod {
	return func(p *corev1.Pod) { p.Finalizers = names }
}

func onNode(node string) podMod {
	return func(p *corev1.Pod) { p.Spec.NodeName = node }
}

// running is ungated, bound and running.
func running(p *corev1.Pod) {
	ungated(p)
	p.Spec.NodeName = "node-1"
	p.Status.Phase = corev1.PodRunning
}

func ready(p *corev1.Pod) {
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
}

func notReady(p *corev1.Pod) {
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse})
}

func succeeded(p *corev1.Pod) { running(p); p.Status.Phase = corev1.PodSucceeded }

func failed(p *corev1.Pod) { running(p); p.Status.Phase = corev1.PodFailed }

// failedUnbound is a pod that ended Failed before it was ever bound, as
// PodGC leaves an unscheduled pod that is being deleted.
func failedUnbound(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }

// deletedAt sets the deletionTimestamp, which is when the grace period ends.
func deletedAt(t time.Time) podMod {
	return func(p *corev1.Pod) {
		ts := metav1.NewTime(t)
		p.DeletionTimestamp = &ts
	}
}

func annotated(kv ...string) podMod {
	return func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		for i := 0; i+1 < len(kv); i += 2 {
			p.Annotations[kv[i]] = kv[i+1]
		}
	}
}

func createdAt(t time.Time) podMod {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t) }
}

func inGroup(name string) podMod {
	return func(p *corev1.Pod) { p.Labels[scheduling.PodGroupLabel] = name }
}

func inNamespace(ns string) podMod {
	return func(p *corev1.Pod) { p.Namespace = ns }
}

type groupMod func(*v1alpha1.PodGroup)

// newGroup returns testGroup with a gang of minCount, carrying the
// pod-cleanup finalizer as the server leaves it.
func newGroup(minCount int32, mods ...groupMod) *v1alpha1.PodGroup {
	pg := &v1alpha1.PodGroup{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "PodGroup"},
		ObjectMeta: metav1.ObjectMeta{
			Name:       testGroup,
			Namespace:  testNS,
			UID:        "uid-group",
			Generation: 1,
			Finalizers: []string{scheduling.PodCleanupFinalizer},
		},
		Spec: v1alpha1.PodGroupSpec{SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{
			Gang: &v1alpha1.GangSchedulingPolicy{MinCount: minCount},
		}},
	}
	for _, m := range mods {
		m(pg)
	}
	return pg
}

func basicPolicy(pg *v1alpha1.PodGroup) {
	pg.Spec.SchedulingPolicy = v1alpha1.PodGroupSchedulingPolicy{Basic: &v1alpha1.BasicSchedulingPolicy{}}
}

func groupGates(names ...string) groupMod {
	return func(pg *v1alpha1.PodGroup) {
		for _, n := range names {
			pg.Spec.SchedulingGates = append(pg.Spec.SchedulingGates, v1alpha1.PodGroupSchedulingGate{Name: n})
		}
	}
}

func condition(typ string, status metav1.ConditionStatus, reason string, at time.Time) groupMod {
	return func(pg *v1alpha1.PodGroup) {
		meta.SetStatusCondition(&pg.Status.Conditions, metav1.Condition{
			Type: typ, Status: status, Reason: reason, Message: "set by the test", LastTransitionTime: metav1.NewTime(at),
		})
	}
}

// admittedAt marks the group admitted, as an earlier sync would have.
func admittedAt(at time.Time) groupMod {
	return func(pg *v1alpha1.PodGroup) {
		condition(v1alpha1.ConditionAdmitted, metav1.ConditionTrue, scheduling.ReasonGangComplete, at)(pg)
		ts := metav1.NewTime(at)
		pg.Status.AdmissionTime = &ts
	}
}

func scheduledAt(at time.Time) groupMod {
	return func(pg *v1alpha1.PodGroup) {
		condition(v1alpha1.ConditionScheduled, metav1.ConditionTrue, scheduling.ReasonMinCountBound, at)(pg)
		ts := metav1.NewTime(at)
		pg.Status.StartTime = &ts
	}
}

func finishedAt(reason string, at time.Time) groupMod {
	return func(pg *v1alpha1.PodGroup) {
		condition(v1alpha1.ConditionFinished, metav1.ConditionTrue, reason, at)(pg)
		ts := metav1.NewTime(at)
		pg.Status.CompletionTime = &ts
	}
}

func uncounted(succeeded, failed []types.UID) groupMod {
	return func(pg *v1alpha1.PodGroup) {
		pg.Status.UncountedTerminatedPods = &v1alpha1.UncountedTerminatedPods{Succeeded: succeeded, Failed: failed}
	}
}

func counts(succeeded, failed int32) groupMod {
	return func(pg *v1alpha1.PodGroup) { pg.Status.Succeeded, pg.Status.Failed = succeeded, failed }
}

func groupDeletedAt(at time.Time) groupMod {
	return func(pg *v1alpha1.PodGroup) {
		ts := metav1.NewTime(at)
		pg.DeletionTimestamp = &ts
	}
}

func groupFinalizers(names ...string) groupMod {
	return func(pg *v1alpha1.PodGroup) { pg.Finalizers = names }
}

func uids(names ...string) []types.UID {
	out := make([]types.UID, len(names))
	for i, n := range names {
		out[i] = types.UID("uid-" + n)
	}
	return out
}

// objects joins a group and its pods into fake API objects.
func objects(pg *v1alpha1.PodGroup, ps ...*corev1.Pod) []runtime.Object {
	var out []runtime.Object
	if pg != nil {
		out = append(out, pg)
	}
	for _, p := range ps {
		out = append(out, p)
	}
	return out
}

func concat[T any](lists ...[]T) []T {
	var out []T
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// admitted is a group of minCount that an earlier sync admitted and saw scheduled.
func admitted(minCount int32, mods ...groupMod) *v1alpha1.PodGroup {
	return newGroup(minCount, append([]groupMod{admittedAt(t0.Add(-time.Hour)), scheduledAt(t0.Add(-time.Hour))}, mods...)...)
}

// newNode returns a Ready node with cpu CPUs and room for 110 pods.
func newNode(name, cpu string, mods ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{corev1.LabelHostname: name}},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse(cpu),
				corev1.ResourceMemory: resource.MustParse("64Gi"),
				corev1.ResourcePods:   resource.MustParse("110"),
			},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
	for _, m := range mods {
		m(n)
	}
	return n
}

// requests gives the pod's container a cpu request.
func requests(cpu string) podMod {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	}
}
