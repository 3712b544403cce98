package capacity

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// clusterTracker builds a tracker of nodes of 64 cpu, each running
// podsPerNode unmanaged pods of 1 cpu (half the nodes carry a label); one
// running pod in ten has required anti-affinity to its own app on the
// hostname, as a one-per-node service does.
func clusterTracker(nodes, podsPerNode int) *Tracker {
	tr := NewTracker(true)
	for i := range nodes {
		n := node(fmt.Sprintf("node-%05d", i), "64", "256Gi")
		if i%2 == 0 {
			n.Labels["pool"] = "even"
		}
		tr.SetNode(n)
		for j := range podsPerNode {
			p := boundPod(fmt.Sprintf("u-%d-%d", i, j), n.Name)
			if (i*podsPerNode+j)%10 == 0 {
				antiAffinity("app", p.Labels["app"], corev1.LabelHostname)(p)
			}
			tr.SetUnmanagedPod(p)
		}
	}
	return tr
}

func boundPod(name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(fmt.Sprintf("%036s", name)),
			Labels: map[string]string{"app": fmt.Sprintf("svc-%d", len(name)%7), "pod-template-hash": "5d8f7c9b6"}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

// BenchmarkAdmitGang measures one admission decision as the controller
// makes it: a snapshot of the tracker, then the placement of one gang by
// the scheduler's filters (issue 20's targets on 2 cores: a gang of 8 on
// 5,000 nodes in 10 ms, a gang of 256 in 100 ms).
func BenchmarkAdmitGang(b *testing.B) {
	for _, nodes := range []int{1000, 5000} {
		tr := clusterTracker(nodes, 20)
		for _, size := range []int{8, 256} {
			for _, kind := range []string{"", "nodeSelector", "onePerNode"} {
				opts := []podOpt{withMemory("4Gi"), withLabels("app", "trainer")}
				name := fmt.Sprintf("nodes=%d/gang=%d", nodes, size)
				switch kind {
				case "nodeSelector":
					opts = append(opts, withNodeSelector("pool", "even"))
				case "onePerNode":
					if size > 8 {
						continue
					}
					opts = append(opts, antiAffinity("app", "trainer", corev1.LabelHostname))
				}
				if kind != "" {
					name += "/" + kind
				}
				gang := Candidate{Key: gk("ns/g"), Pods: pods("g", size, "8", opts...), Need: size}
				b.Run(name, func(b *testing.B) {
					benchAdmit(b, tr, defaultFilters(), gang)
				})
			}
		}
	}
}

// BenchmarkAdmitGangDevices places a gang of 8 pods of one GPU each, by
// ResourceClaims, on 1,000 nodes of 8 GPUs each (DynamicResources).
func BenchmarkAdmitGangDevices(b *testing.B) {
	const nodes = 1000
	names := make([]string, nodes)
	for i := range names {
		names[i] = fmt.Sprintf("node-%05d", i)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f, err := startFilters(ctx, append(draCluster(8, names...), claims("gpu", 8)...)...)
	defer func() {
		cancel()
		if f != nil {
			f.Shutdown()
		}
	}()
	if err != nil {
		b.Fatal(err)
	}
	tr := clusterTracker(nodes, 20)
	gang := Candidate{Key: gk("ns/g"), Pods: devicePods("g", "gpu", 8), Need: 8}
	b.Run(fmt.Sprintf("nodes=%d/gang=8/devices", nodes), func(b *testing.B) {
		benchAdmit(b, tr, f, gang)
	})
}

func benchAdmit(b *testing.B, tr *Tracker, f *Filters, gang Candidate) {
	b.ReportAllocs()
	for b.Loop() {
		v := Admit(tr.Snapshot(f), []Candidate{gang}, Options{Strategy: BestEffortFIFO})
		if len(v) != 1 || !v[0].Admit {
			b.Fatalf("gang not admitted: %+v", v)
		}
	}
}

// BenchmarkUnmanagedPodMemory reports the heap the tracker keeps for each
// bound pod that Muster does not manage, kept as the scheduler's PodInfo
// of a trimmed pod (issue 20's target: at most 1 KiB).
func BenchmarkUnmanagedPodMemory(b *testing.B) {
	const nodes, perNode = 1000, 100
	var bytesPerPod float64
	for b.Loop() {
		b.StopTimer()
		tr := NewTracker(true)
		names := make([]string, nodes)
		for i := range nodes {
			n := node(fmt.Sprintf("node-%05d", i), "64", "256Gi")
			names[i] = n.Name
			tr.SetNode(n)
		}
		// Pods arrive one by one, as from a watch; each is garbage once stored.
		before := heapInUse()
		b.StartTimer()
		for i := range nodes * perNode {
			tr.SetUnmanagedPod(boundPod(fmt.Sprintf("pod-%07d", i), names[i%nodes]))
		}
		b.StopTimer()
		after := heapInUse()
		if tr.UnmanagedPods() != nodes*perNode {
			b.Fatalf("tracker holds %d pods, want %d", tr.UnmanagedPods(), nodes*perNode)
		}
		bytesPerPod = float64(after-before) / float64(nodes*perNode)
		runtime.KeepAlive(tr)
		b.StartTimer()
	}
	b.ReportMetric(bytesPerPod, "bytes/pod")
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkPreemption measures an admission cycle that preempts: nodes of
// 64 cpu, each filled by admitted gangs of lower priority (gangs of 8 pods
// of 8 cpu, one node each, priorities 0 to 9), and one gang of 8 pods of 64
// cpu of priority 100 that fits only once 8 whole nodes are freed: no one
// victim suffices, so the cycle tries the singles, searches for the
// shortest prefix and reprieves what it need not take.
func BenchmarkPreemption(b *testing.B) {
	for _, nodes := range []int{100, 1000} {
		tr := NewTracker(true)
		for i := range nodes {
			n := node(fmt.Sprintf("node-%05d", i), "64", "256Gi")
			tr.SetNode(n)
			key := fmt.Sprintf("ns/low-%05d", i)
			for j := range 8 {
				tr.SetManagedPod(gk(key), pod(fmt.Sprintf("low-%d-%d", i, j), "8", onNode(n.Name), withPriority(int32(i%10))), false)
			}
			tr.SetGroupState(gk(key), &GroupState{UID: types.UID(key), Admitted: true, Since: t0.Add(time.Duration(i) * time.Second)})
		}
		gang := Candidate{Key: gk("ns/high"), Priority: 100, Pods: pods("high", 8, "64"), Need: 8, Preempt: true}
		opts := Options{Strategy: BestEffortFIFO, Now: t0.Add(time.Hour), Victims: func() Pool { return tr.Victims(false) }}
		b.Run(fmt.Sprintf("nodes=%d/victims=8", nodes), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				v := Admit(tr.Snapshot(defaultFilters()), []Candidate{gang}, opts)
				if len(v) != 1 || len(v[0].Victims) != 8 {
					b.Fatalf("want 8 victims, got %+v", v)
				}
			}
		})
	}
}
