package capacityadmission

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/controller/capacity"
)

// BenchmarkCycleBehindBacklog is issue 36's scenario in one process: 50
// nodes of 32 CPU, each three quarters held by a pod of another kind, and
// a backlog of gangs of 8 × 16 CPU that fit the idle cluster but not now.
// Each iteration offers one gang of 8 × 10m that fits at once, runs one
// admission cycle, and lets the gang's pods go again. "parked" is the
// controller as it runs; "placing every gang" lets go of every parked gang
// before each cycle, as cycles ran before queueing hints.
func BenchmarkCycleBehindBacklog(b *testing.B) {
	f := testFilters(b)
	for _, backlog := range []int{0, 200, 1000} {
		for _, parking := range []bool{true, false} {
			name := fmt.Sprintf("waiting=%d/parked", backlog)
			if !parking {
				name = fmt.Sprintf("waiting=%d/placing every gang", backlog)
			}
			b.Run(name, func(b *testing.B) {
				w := newWorld(f)
				for i := range 50 {
					n := testNode(fmt.Sprintf("n%02d", i), 32, "a")
					w.mode.tracker.SetNode(n)
					filler := testPod("", fmt.Sprintf("filler-%d", i), 24000, "")
					filler.Spec.NodeName, filler.Status.Phase = n.Name, corev1.PodRunning
					w.mode.tracker.SetUnmanagedPod(filler)
				}
				for g := range backlog {
					w.offerGang(fmt.Sprintf("w%04d", g), 8, 16000)
				}
				w.mode.admitCycle() // parks the backlog
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if !parking {
						w.mode.queue.mu.Lock()
						clear(w.mode.queue.parked)
						w.mode.queue.mu.Unlock()
					}
					i++
					key := w.offerGang(fmt.Sprintf("probe-%d", i), 8, 10)
					w.mode.admitCycle()
					if _, ok := w.mode.queue.decision(key); !ok {
						b.Fatalf("the probe gang was not admitted")
					}
					w.mode.queue.forget(key)
					for _, p := range w.pods[key] {
						w.mode.tracker.RemoveManagedPod(p.UID)
					}
					delete(w.pods, key)
				}
			})
		}
	}
}

// offerGang records a gang of n gated pods of milli CPU each and offers it.
func (w *world) offerGang(name string, n int, milli int64) scheduling.GroupKey {
	key := scheduling.GroupKey{Namespace: "ns", Name: name}
	ps := make([]*corev1.Pod, n)
	for i := range ps {
		ps[i] = testPod(name, fmt.Sprintf("%s-%d", name, i), milli, "")
		ps[i].ResourceVersion = w.nextRV()
		w.mode.tracker.SetManagedPod(key, ps[i], true)
	}
	w.pods[key] = ps
	w.mode.queue.offer(capacity.Candidate{Key: key, Created: w.clk.Now(), Pods: ps, Need: n})
	return key
}
