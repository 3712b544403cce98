package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/muster-dev/muster/test/cluster"
)

// cpuMeter splits the run into phases and records, for each, how much CPU
// every process of the cluster used: on a machine whose cores are all busy,
// that is where a phase's time went.
type cpuMeter struct {
	c      *cluster.Cluster
	at     time.Time
	last   map[string]time.Duration
	phases []cpuPhase
}

// cpuPhase is the CPU each process used during one phase of wall time wall.
type cpuPhase struct {
	name string
	wall time.Duration
	cpu  map[string]time.Duration
}

func newCPUMeter(c *cluster.Cluster) *cpuMeter {
	return &cpuMeter{c: c, at: time.Now(), last: c.CPUTimes()}
}

// mark ends the phase that began at the previous mark, naming it.
func (m *cpuMeter) mark(name string) {
	now, times := time.Now(), m.c.CPUTimes()
	p := cpuPhase{name: name, wall: now.Sub(m.at), cpu: map[string]time.Duration{}}
	for proc, t := range times {
		// A process restarted since the last mark counts from zero.
		if prev, ok := m.last[proc]; ok && prev <= t {
			t -= prev
		}
		p.cpu[proc] = t
	}
	m.phases = append(m.phases, p)
	m.at, m.last = now, times
}

// print writes one row per phase: its wall time, the cores busy on average,
// and each process's share of the CPU used.
func (m *cpuMeter) print(out io.Writer) {
	if len(m.phases) == 0 {
		return
	}
	var procs []string
	for _, p := range m.phases {
		for proc := range p.cpu {
			if !slices.Contains(procs, proc) {
				procs = append(procs, proc)
			}
		}
	}
	slices.Sort(procs)
	fmt.Fprintf(out, "\nCPU by process and phase (CPU seconds, and share of the phase's CPU):\n\n")
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "phase\twall\tcores busy\t%s\n", strings.Join(procs, "\t"))
	for _, p := range m.phases {
		var total time.Duration
		for _, t := range p.cpu {
			total += t
		}
		cells := make([]string, len(procs))
		for i, proc := range procs {
			cells[i] = fmt.Sprintf("%.1fs %2.0f%%", p.cpu[proc].Seconds(), 100*ratio(p.cpu[proc].Seconds(), total.Seconds()))
		}
		fmt.Fprintf(w, "%s\t%s\t%.2f\t%s\n", p.name, secs(p.wall), ratio(total.Seconds(), p.wall.Seconds()), strings.Join(cells, "\t"))
	}
	_ = w.Flush()
}
