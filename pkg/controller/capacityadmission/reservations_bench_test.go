package capacityadmission

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/podtest"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/controller/admission"
	"github.com/muster-dev/muster/pkg/controller/capacity"
)

// BenchmarkAdmitRoleCreatedLater measures what one sync and one admission
// cycle cost for a driver whose roles-template asks for a role of many
// workers created later (issue 21, item 1), on 200 nodes of 32 cpu, where
// 6,400 workers of 1 cpu fit: the sync offers the gang, the cycle places
// it, and the next sync reads the verdict. It reports the heap the round
// leaves live at its peak (peak-MB), besides the allocations.
func BenchmarkAdmitRoleCreatedLater(b *testing.B) {
	const nodes = 200
	ctx, cancel := context.WithCancel(context.Background())
	f, err := capacity.NewFilters(ctx, kubefake.NewClientset(), false)
	if err == nil {
		err = f.Start(ctx)
	}
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		cancel()
		f.Shutdown()
	}()
	for _, workers := range []int32{5000, 200_000, 2_000_000} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			a := &Mode{
				tracker: capacity.NewTracker(true), queue: newAdmissionQueue(), filters: f,
				strategy: capacity.BestEffortFIFO,
				clock:    clocktesting.NewFakeClock(time.Unix(0, 0)), enqueue: func(scheduling.GroupKey) {}, metrics: noMetrics{},
			}
			for i := range nodes {
				a.tracker.SetNode(benchNode(fmt.Sprintf("n%04d", i), "32"))
			}
			pg := &v1alpha1.PodGroup{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pg", UID: "uid-group"},
				Spec: v1alpha1.PodGroupSpec{
					SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: workers + 1}},
					Roles: []v1alpha1.PodGroupRole{{Name: "driver", Count: 1}, {Name: "worker", Count: workers, CreatedLater: true,
						Template: &v1alpha1.PodGroupRoleTemplate{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}},
				},
			}
			driver := podtest.Pod(podtest.InGroup("pg"), podtest.Label(scheduling.RoleLabel, "driver"), podtest.WithGates(scheduling.AdmissionGate),
				func(p *corev1.Pod) { p.Name, p.UID = "driver", "uid-driver" })
			key := scheduling.NewGroupKey("ns", "pg")
			var peak uint64
			var outcome string
			b.ReportAllocs()
			for b.Loop() {
				g := pg.DeepCopy()
				grp := admission.Group{Key: key, PodGroup: g, Pods: []*corev1.Pod{driver}, Gated: []*corev1.Pod{driver},
					Present: 1, Active: 1, RoleActive: map[string]int32{"driver": 1}}
				a.placeGang(grp, workers+1, time.Unix(0, 0))
				a.admitCycle()
				d, admitted := a.placeGang(grp, workers+1, time.Unix(0, 0))
				if d.Places != nil {
					g.Status.Reservations = d.Places.Reservations
				}
				peak = max(peak, heapAlloc())
				outcome = fmt.Sprintf("admitted=%t reason=%s reservations=%d", admitted, d.Reason, admission.ReservedPlaces(g))
				a.Drop(key)
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-MB")
			b.Log(outcome)
		})
	}
}

// benchNode is a Ready node with cpu CPUs and room for 110 pods.
func benchNode(name, cpu string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourcePods: resource.MustParse("110")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
}

// heapAlloc is the heap in use now, live or not yet collected.
func heapAlloc() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
