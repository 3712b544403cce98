package capacityadmission

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-dev/muster/pkg/controller/capacity"
)

// BenchmarkWhatIf is issue 37's target in one process: a what-if for a
// gang of 8 on 1,000 nodes of 32 CPU, each running 10 pods of another kind
// (10,000 pods), with none, 200 or 1,000 gangs waiting ahead of it (gangs
// of 8 × 16 CPU that fit the idle cluster and not now, parked by the
// cycle before). It prints the p50 and p99 of one answer; the target is a
// p99 under 50 ms. Gangs waiting of the gang's priority come before it,
// so the cycle it runs holds them all.
func BenchmarkWhatIf(b *testing.B) {
	f := testFilters(b)
	for _, waiting := range []int{0, 200, 1000} {
		b.Run(fmt.Sprintf("nodes=1000/waiting=%d", waiting), func(b *testing.B) {
			w := newWorld(f)
			w.mode.strategy = capacity.BestEffortFIFO
			w.mode.preemption = true
			for i := range 1000 {
				n := testNode(fmt.Sprintf("n%04d", i), 32, fmt.Sprintf("z%d", i%3))
				w.mode.tracker.SetNode(n)
				for j := range 10 {
					p := testPod("", fmt.Sprintf("running-%d-%d", i, j), 2500, "")
					p.Spec.NodeName, p.Status.Phase = n.Name, corev1.PodRunning
					w.mode.tracker.SetUnmanagedPod(p)
				}
			}
			for g := range waiting {
				w.offerGang(fmt.Sprintf("w%04d", g), 8, 16000)
			}
			w.mode.admitCycle() // parks the waiting gangs
			w.clk.SetTime(w.clk.Now().Add(time.Second))
			pg, pods := askedGang("ask", 8, 1000, 0)
			var took []time.Duration
			b.ReportAllocs()
			for b.Loop() {
				start := time.Now()
				got := w.mode.WhatIf(pg, pods, 8, w.clk.Now())
				took = append(took, time.Since(start))
				if !got.Verdict.Admit || got.Position != waiting+1 {
					b.Fatalf("what-if: admit %v at %d of %d (%s)", got.Verdict.Admit, got.Position, got.Waiting, got.Verdict.Message)
				}
			}
			slices.Sort(took)
			b.ReportMetric(ms(took[len(took)/2]), "p50-ms")
			b.ReportMetric(ms(took[len(took)*99/100]), "p99-ms")
		})
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
