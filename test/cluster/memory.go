package cluster

// Memory returns the resident set size of each running process of the
// cluster by its name, now and at its peak since it started (the kernel's
// high-water mark), in bytes. Where the platform does not say, the maps are
// empty. A restarted component's peak starts again from its restart.
func (c *Cluster) Memory() (now, peak map[string]int64) {
	c.mu.Lock()
	procs := append([]*process(nil), c.procs...)
	c.mu.Unlock()
	now, peak = map[string]int64{}, map[string]int64{}
	for _, p := range procs {
		if p.exited() {
			continue
		}
		if rss, hwm, ok := processMemory(p.cmd.Process.Pid); ok {
			now[p.name] += rss
			peak[p.name] = max(peak[p.name], hwm)
		}
	}
	return now, peak
}
