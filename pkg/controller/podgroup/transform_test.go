package podgroup

import (
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/utils/ptr"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/controller/capacity"
)

// bigPod is a Spark-executor-like pod of a gang: what Muster reads, and a
// lot it does not (environment, command, volumes, unrelated metadata,
// container states, managed fields).
func bigPod() *corev1.Pod {
	always := corev1.ContainerRestartPolicyAlways
	grace := int64(30)
	p := newPod("exec-1", running, onNode("n1"),
		annotated(scheduling.MinCountAnnotation, "4", scheduling.RolesAnnotation, "2"),
		func(p *corev1.Pod) {
			p.Spec.Priority = ptr.To(int32(1000))
			p.Spec.PreemptionPolicy = ptr.To(corev1.PreemptNever)
			p.Labels[scheduling.RoleLabel] = "executor"
			p.Labels["spark-app-selector"] = "spark-0123456789"
			p.Annotations["kubectl.kubernetes.io/last-applied-configuration"] = strings.Repeat("x", 8192)
			for i := range 20 {
				p.Annotations[fmt.Sprintf("example.com/note-%d", i)] = strings.Repeat("y", 512)
			}
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "driver", UID: "uid-driver"}}
			p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
			p.Generation = 3
			p.DeletionGracePeriodSeconds = &grace
			c := &p.Spec.Containers[0]
			c.Command = []string{"/opt/spark/bin/spark-class", "org.apache.spark.executor.CoarseGrainedExecutorBackend"}
			for i := range 100 {
				c.Env = append(c.Env, corev1.EnvVar{Name: fmt.Sprintf("SPARK_ENV_%d", i), Value: strings.Repeat("v", 64)})
			}
			c.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"),
			}}
			p.Spec.InitContainers = []corev1.Container{
				{Name: "fetch", Image: "busybox", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}}},
				{Name: "sidecar", Image: "envoy", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}}},
			}
			p.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
			p.Spec.NodeSelector = map[string]string{"pool": "spark"}
			p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "spark", Effect: corev1.TaintEffectNoSchedule}}
			p.Spec.Affinity = &corev1.Affinity{
				NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
						{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a", "b"}},
					}}},
				}},
				PodAntiAffinity: &corev1.PodAntiAffinity{},
			}
			for i := range 10 {
				p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: fmt.Sprintf("vol-%d", i), VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
			}
			p.Spec.SchedulerName = corev1.DefaultSchedulerName
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule}}
			c.Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 8080, Protocol: corev1.ProtocolTCP}}
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}})
			template := "gpu"
			p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &template}}
			claim := "exec-1-gpu-x7"
			p.Status.ResourceClaimStatuses = []corev1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: &claim}}
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue})
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{
				Name: "c", Image: "spark:3.5", ImageID: strings.Repeat("sha256:", 10), ContainerID: "containerd://abc",
				State:              corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
				AllocatedResources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")},
			}}
			p.Status.HostIP, p.Status.PodIP = "10.0.0.1", "10.244.0.5"
		})
	return p
}

func trimmed(t testing.TB, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	out, err := TransformPod(p.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	return out.(*corev1.Pod)
}

// TestTransformPodKeepsWhatMusterReads checks, field by field, that the
// pod cache keeps exactly what the controller and placement read, and
// drops the rest.
func TestTransformPodKeepsWhatMusterReads(t *testing.T) {
	in := bigPod()
	out := trimmed(t, in)
	kept := []struct {
		field string
		get   func(*corev1.Pod) any
	}{
		{"name, namespace, UID, resourceVersion", func(p *corev1.Pod) any { return []any{p.Name, p.Namespace, p.UID, p.ResourceVersion} }},
		{"creation and deletion", func(p *corev1.Pod) any {
			return []any{p.CreationTimestamp, p.DeletionTimestamp, p.DeletionGracePeriodSeconds, p.Generation}
		}},
		{"finalizers", func(p *corev1.Pod) any { return p.Finalizers }},
		{"every label: placement's pod affinity and topology spread match them", func(p *corev1.Pod) any { return p.Labels }},
		{"Muster's annotations", func(p *corev1.Pod) any {
			return []string{p.Annotations[scheduling.MinCountAnnotation], p.Annotations[scheduling.RolesAnnotation]}
		}},
		{"schedulingGates", func(p *corev1.Pod) any { return p.Spec.SchedulingGates }},
		{"nodeName", func(p *corev1.Pod) any { return p.Spec.NodeName }},
		{"node selection", func(p *corev1.Pod) any { return []any{p.Spec.NodeSelector, p.Spec.Affinity, p.Spec.Tolerations} }},
		{"what the scheduler's other filters read: scheduler name, spread, host ports, storage volumes, claims", func(p *corev1.Pod) any {
			return []any{p.Spec.SchedulerName, p.Spec.TopologySpreadConstraints, p.Spec.Containers[0].Ports,
				p.Spec.Volumes[len(p.Spec.Volumes)-1:], p.Spec.ResourceClaims, p.Status.ResourceClaimStatuses}
		}},
		{"phase and conditions", func(p *corev1.Pod) any { return []any{p.Status.Phase, p.Status.Conditions} }},
		{"priority and preemption policy: a gang's priority, and whether it preempts", func(p *corev1.Pod) any {
			return []any{*p.Spec.Priority, *p.Spec.PreemptionPolicy}
		}},
		{"effective requests", func(p *corev1.Pod) any { return capacity.PodRequests(p) }},
		{"required node affinity", func(p *corev1.Pod) any {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"zone": "a", "pool": "spark"}}}
			match, err := nodeaffinity.GetRequiredNodeAffinity(p).Match(node)
			return []any{match, err}
		}},
		{"pinned node and unschedulable", func(p *corev1.Pod) any {
			since, msg, ok := capacity.Unschedulable(p)
			return []any{scheduling.PinnedNode(p), since, msg, ok}
		}},
	}
	for _, k := range kept {
		t.Run("keeps "+k.field, func(t *testing.T) {
			if got, want := k.get(out), k.get(in); !reflect.DeepEqual(got, want) {
				t.Errorf("after the transform %s = %v, want %v", k.field, got, want)
			}
		})
	}

	dropped := []struct {
		field string
		gone  func(*corev1.Pod) bool
	}{
		{"managedFields", func(p *corev1.Pod) bool { return p.ManagedFields == nil }},
		{"ownerReferences", func(p *corev1.Pod) bool { return p.OwnerReferences == nil }},
		{"other annotations", func(p *corev1.Pod) bool { return len(p.Annotations) == 2 }},
		{"env and command", func(p *corev1.Pod) bool {
			return p.Spec.Containers[0].Env == nil && p.Spec.Containers[0].Command == nil
		}},
		{"images", func(p *corev1.Pod) bool {
			return p.Spec.Containers[0].Image == "" && p.Spec.InitContainers[0].Image == ""
		}},
		{"volumes that name no storage", func(p *corev1.Pod) bool { return len(p.Spec.Volumes) == 1 && p.Spec.Volumes[0].Name == "data" }},
		{"container states", func(p *corev1.Pod) bool {
			s := p.Status.ContainerStatuses[0]
			return s.State.Running == nil && s.Image == "" && s.ContainerID == ""
		}},
		{"addresses", func(p *corev1.Pod) bool { return p.Status.PodIP == "" && p.Status.HostIP == "" }},
	}
	for _, d := range dropped {
		t.Run("drops "+d.field, func(t *testing.T) {
			if !d.gone(out) {
				t.Errorf("%s kept", d.field)
			}
		})
	}

	t.Run("is idempotent", func(t *testing.T) {
		if again := trimmed(t, out); !reflect.DeepEqual(again, out) {
			t.Errorf("a second transform changed the pod:\n%+v\n%+v", again, out)
		}
	})
	t.Run("leaves other objects alone", func(t *testing.T) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "x", Annotations: map[string]string{"a": "b"}}}
		if got, err := TransformPod(ns); err != nil || got != ns {
			t.Errorf("TransformPod(namespace) = %v, %v; want it unchanged", got, err)
		}
	})
	t.Run("is a tenth of the size or less", func(t *testing.T) {
		before, after := jsonSize(t, in), jsonSize(t, out)
		if after*10 > before {
			t.Errorf("kept %d of %d bytes, want at most a tenth", after, before)
		}
	})
}

// TestTransformPodKeepsRequestsOfEveryShape checks that the effective
// requests, as placement computes them, are the same before and after the
// transform for each way a pod can state them.
func TestTransformPodKeepsRequestsOfEveryShape(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	cpu := func(v string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(v)}
	}
	cases := []struct {
		name string
		mod  podMod
	}{
		{"containers", func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Requests = cpu("2") }},
		{"an init container larger than the containers", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "i", Resources: corev1.ResourceRequirements{Requests: cpu("4")}}}
		}},
		{"a restartable sidecar", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "s", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: cpu("1")}}}
		}},
		{"overhead", func(p *corev1.Pod) { p.Spec.Overhead = cpu("250m") }},
		{"pod-level resources", func(p *corev1.Pod) { p.Spec.Resources = &corev1.ResourceRequirements{Requests: cpu("6")} }},
		{"a bound pod resized in place", func(p *corev1.Pod) {
			p.Spec.NodeName = "n1"
			p.Spec.Containers[0].Resources.Requests = cpu("1")
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", AllocatedResources: cpu("3"),
				Resources: &corev1.ResourceRequirements{Requests: cpu("2")}}}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := newPod("p", tc.mod)
			if got, want := capacity.PodRequests(trimmed(t, in)), capacity.PodRequests(in); !reflect.DeepEqual(got, want) {
				t.Errorf("requests after the transform = %+v, want %+v", got, want)
			}
		})
	}
}

func jsonSize(t testing.TB, p *corev1.Pod) int {
	t.Helper()
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return len(data)
}

// BenchmarkTransformPod reports the bytes (as JSON) of a Spark-executor-like
// pod before and after the transform, and what the transform costs.
func BenchmarkTransformPod(b *testing.B) {
	in := bigPod()
	out := trimmed(b, in)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := TransformPod(in); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(jsonSize(b, in)), "bytes-before/pod")
	b.ReportMetric(float64(jsonSize(b, out)), "bytes-kept/pod")
}

// hostAffinity is a required node affinity on n host names named by prefix,
// 14 bytes of JSON each (with a 6-character prefix).
func hostAffinity(prefix string, n int) *corev1.Affinity {
	values := make([]string, n)
	for i := range values {
		values[i] = fmt.Sprintf("%s-%06d", prefix, i)
	}
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: values}},
		}}},
	}}
}

// maxHosts is how many hosts (named by a 5-character prefix) the largest
// host affinity that the webhook accepts names: just under
// scheduling.MaxPodSchedulingBytes of JSON.
func maxHosts(t testing.TB) int {
	t.Helper()
	n := scheduling.MaxPodSchedulingBytes / 14
	for ; n > 0; n-- {
		b, err := json.Marshal(hostAffinity("hosta", n))
		if err != nil {
			t.Fatal(err)
		}
		if len(b) <= scheduling.MaxPodSchedulingBytes {
			break
		}
	}
	return n
}

// decoded returns p as an informer would hand it to the transform: decoded
// from JSON, so that no two pods share memory before the transform.
func decoded(t testing.TB, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var out corev1.Pod
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

func transformed(t testing.TB, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	out, err := TransformPod(p)
	if err != nil {
		t.Fatal(err)
	}
	return out.(*corev1.Pod)
}

// TestTransformPodSharesAGangsInputs: two pods, decoded apart, with the same
// affinity, tolerations, topology spread or long Muster annotation keep one
// copy of it in the cache; different ones keep their own.
func TestTransformPodSharesAGangsInputs(t *testing.T) {
	template := strings.Repeat(`{"name":"worker","count":8}`, 20)
	withInputs := func(affinityPrefix, taint, template string) podMod {
		return func(p *corev1.Pod) {
			p.Spec.Affinity = hostAffinity(affinityPrefix, 50)
			p.Spec.Tolerations = []corev1.Toleration{{Key: taint, Operator: corev1.TolerationOpExists}}
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: taint, WhenUnsatisfiable: corev1.DoNotSchedule}}
			p.Annotations = map[string]string{scheduling.RolesTemplateAnnotation: template}
		}
	}
	same := func(a, b *corev1.Pod) map[string]bool {
		return map[string]bool{
			"affinity":    a.Spec.Affinity == b.Spec.Affinity,
			"tolerations": &a.Spec.Tolerations[0] == &b.Spec.Tolerations[0],
			"spread":      &a.Spec.TopologySpreadConstraints[0] == &b.Spec.TopologySpreadConstraints[0],
			"template": unsafe.StringData(a.Annotations[scheduling.RolesTemplateAnnotation]) ==
				unsafe.StringData(b.Annotations[scheduling.RolesTemplateAnnotation]),
		}
	}
	tests := []struct {
		name string
		a, b podMod
		want map[string]bool
	}{
		{"a gang's identical inputs are kept once", withInputs("hosta", "gpu", template), withInputs("hosta", "gpu", template),
			map[string]bool{"affinity": true, "tolerations": true, "spread": true, "template": true}},
		{"different inputs are kept apart", withInputs("hosta", "gpu", template), withInputs("hostb", "tpu", template+" "),
			map[string]bool{"affinity": false, "tolerations": false, "spread": false, "template": false}},
		{"only what is equal is shared", withInputs("hosta", "gpu", template), withInputs("hosta", "tpu", template),
			map[string]bool{"affinity": true, "tolerations": false, "spread": false, "template": true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := transformed(t, decoded(t, newPod("a", tt.a)))
			b := transformed(t, decoded(t, newPod("b", tt.b)))
			if got := same(a, b); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("shared %v, want %v", got, tt.want)
			}
			if !reflect.DeepEqual(a.Spec.Affinity, decoded(t, newPod("a", tt.a)).Spec.Affinity) {
				t.Errorf("the kept affinity is not the pod's")
			}
		})
	}
}

// heapAfter returns the live heap after a collection.
func heapAfter() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// keptBytes returns the live heap that n transformed pods hold, each decoded
// apart from mod(i)'s pod, per pod.
func keptBytes(t *testing.T, n int, mod func(i int) podMod) uint64 {
	t.Helper()
	inputs := make([][]byte, n)
	for i := range n {
		b, err := json.Marshal(newPod(fmt.Sprintf("w-%d", i), mod(i)))
		if err != nil {
			t.Fatal(err)
		}
		inputs[i] = b
	}
	kept := make([]*corev1.Pod, n)
	before := heapAfter()
	for i, b := range inputs {
		var p corev1.Pod
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
		kept[i] = transformed(t, &p)
	}
	after := heapAfter()
	runtime.KeepAlive(kept)
	runtime.KeepAlive(inputs)
	if after < before {
		return 0
	}
	return (after - before) / uint64(n)
}

// maxGangCacheBytes bounds what 300 gated pods of one gang, each with the
// largest affinity the webhook accepts, may cost the pod cache: one copy of
// the affinity (about 100 KiB decoded) and a few KiB of each pod.
const maxGangCacheBytes = 2 << 20

// TestTransformPodMemoryOfLargeAffinities prints the bytes the cache keeps
// per pod with the largest affinity the webhook accepts, for pods whose
// affinities all differ (each kept whole, as every pod was before
// interning) and for a gang that shares one, and holds 300 pods of such a
// gang under maxGangCacheBytes.
func TestTransformPodMemoryOfLargeAffinities(t *testing.T) {
	const n = 300
	hosts := maxHosts(t)
	shared := hostAffinity("hosta", hosts)
	distinct := make([]*corev1.Affinity, n)
	for i := range distinct {
		distinct[i] = hostAffinity(fmt.Sprintf("h%04d", i), hosts)
	}
	perPodDistinct := keptBytes(t, n, func(i int) podMod { return func(p *corev1.Pod) { p.Spec.Affinity = distinct[i] } })
	perPodShared := keptBytes(t, n, func(int) podMod { return func(p *corev1.Pod) { p.Spec.Affinity = shared } })
	t.Logf("%d pods with a %d-value host affinity (the most under %d bytes of JSON): %d bytes kept per pod when each differs, %d when a gang shares one; %d and %d in all",
		n, hosts,
		scheduling.MaxPodSchedulingBytes, perPodDistinct, perPodShared, perPodDistinct*n, perPodShared*n)
	if total := perPodShared * n; total > maxGangCacheBytes {
		t.Errorf("%d pods of a gang with the largest affinity keep %d bytes, over %d", n, total, maxGangCacheBytes)
	}
}

// TestInternTableForgetsWhatNoPodHolds: the table holds its values weakly and
// sweeps their entries once they are freed, so values that come and go (pods
// deleted, gangs finished) do not grow it.
func TestInternTableForgetsWhatNoPodHolds(t *testing.T) {
	var table internTable[corev1.Affinity]
	const n = 10000
	for i := range n {
		a := hostAffinity(fmt.Sprintf("h%04d", i%10000), 1)
		table.intern([32]byte{byte(i), byte(i >> 8), byte(i >> 16)}, a)
		if i%100 == 99 {
			runtime.GC()
		}
	}
	if got := table.size(); got > n/10 {
		t.Errorf("after %d values that nothing holds, the table has %d entries, want at most %d", n, got, n/10)
	}
}

// TestTransformPodKeepsOnlyTheAnnotationsMusterReads: the cache keeps the
// annotations the controller reads, whose size the webhook bounds, and no
// other, even under scheduling.muster.dev/.
func TestTransformPodKeepsOnlyTheAnnotationsMusterReads(t *testing.T) {
	tests := []struct {
		key  string
		kept bool
	}{
		{scheduling.MinCountAnnotation, true},
		{scheduling.WorkloadAnnotation, true},
		{scheduling.TemplateAnnotation, true},
		{scheduling.RolesAnnotation, true},
		{scheduling.RoleCountAnnotation, true},
		{scheduling.RolesTemplateAnnotation, true},
		{scheduling.GroupName + "/anything-else", false},
		{"example.com/note", false},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			out := trimmed(t, newPod("p", annotated(tt.key, "v")))
			if _, kept := out.Annotations[tt.key]; kept != tt.kept {
				t.Errorf("annotation %s kept = %v, want %v", tt.key, kept, tt.kept)
			}
		})
	}
}
