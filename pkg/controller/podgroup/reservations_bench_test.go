package podgroup

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
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
			a := &capacityAdmission{
				tracker: capacity.NewTracker(true), queue: newAdmissionQueue(), filters: f,
				strategy: capacity.BestEffortFIFO, recorder: record.NewFakeRecorder(100),
				clock: clocktesting.NewFakeClock(t0), enqueue: func(scheduling.GroupKey) {},
			}
			for i := range nodes {
				a.tracker.SetNode(newNode(fmt.Sprintf("n%04d", i), "32"))
			}
			pg := newGroup(workers+1, sparkRoles(workers, "1"))
			driver := newPod("driver", func(p *corev1.Pod) { p.Labels[scheduling.RoleLabel] = "driver" })
			v := classifyPods([]*corev1.Pod{driver}, t0, true)
			var peak uint64
			var outcome string
			b.ReportAllocs()
			for b.Loop() {
				g := pg.DeepCopy()
				grp := admissionGroup(testKey, g, v)
				a.placeGang(grp, workers+1, t0)
				a.admitCycle()
				d, admitted := a.placeGang(grp, workers+1, t0)
				if d.Places != nil {
					g.Status.Reservations = d.Places.Reservations
				}
				peak = max(peak, heapAlloc())
				outcome = fmt.Sprintf("admitted=%t reason=%s reservations=%d", admitted, d.Reason, reservedPlaces(g))
				a.drop(testKey)
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-MB")
			b.Log(outcome)
		})
	}
}

// heapAlloc is the heap in use now, live or not yet collected.
func heapAlloc() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
