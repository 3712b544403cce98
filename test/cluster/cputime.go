package cluster

import (
	"os"
	"time"
)

// CPUTimes returns the CPU time (user and system) that each running process
// of the cluster has used since it started, by its name (etcd,
// kube-apiserver, kube-scheduler, kwok, muster-apiserver, ...), and the
// calling process's own under "driver". A restarted component's count
// starts again from zero. Where the platform does not say, the map is empty.
// make perf takes the difference of two of these to say where a phase's CPU
// went.
func (c *Cluster) CPUTimes() map[string]time.Duration {
	c.mu.Lock()
	procs := append([]*process(nil), c.procs...)
	c.mu.Unlock()
	out := map[string]time.Duration{}
	for _, p := range procs {
		if p.exited() {
			continue
		}
		if d, ok := processCPU(p.cmd.Process.Pid); ok {
			out[p.name] += d
		}
	}
	if d, ok := processCPU(os.Getpid()); ok {
		out["driver"] = d
	}
	return out
}
