package cluster

import (
	"context"
	"fmt"
	"syscall"
	"time"
)

// Names of the components Restart can restart.
const (
	EtcdComponent          = "etcd"
	MusterEtcdComponent    = "muster-etcd"
	KubeAPIServerComponent = "kube-apiserver"
	// KwokComponent is the fake kubelets. kwok v0.8.0 drops a stage whose
	// status patch failed, where a kubelet would retry it, so after the
	// control plane restarts a pod can stay where that patch left it until
	// kwok is restarted and lists the pods again.
	KwokComponent = "kwok"
)

// component is a process the harness can kill and start again on the same
// ports, so that every client configured with its address reconnects.
type component struct {
	ports []int
	start func(ports []int) (*process, error)
	ready func(ctx context.Context, p *process, ports []int) error
	proc  *process
}

// RestartTimes says when a restart killed the old process, started the new
// one and found it ready.
type RestartTimes struct {
	Killed, Started, Ready time.Time
}

// register records a started process as a component that Restart can
// restart, and tracks it so that Stop ends it.
func (c *Cluster) register(name string, p *process, ports []int, start func([]int) (*process, error), ready func(context.Context, *process, []int) error) {
	c.track(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.components == nil {
		c.components = map[string]*component{}
	}
	c.components[name] = &component{ports: ports, start: start, ready: ready, proc: p}
}

// Restart kills a component (EtcdComponent, MusterEtcdComponent,
// KubeAPIServerComponent or KwokComponent) with SIGKILL, as a crash would, starts it again
// on its old ports with its old data, and waits until it is ready.
func (c *Cluster) Restart(ctx context.Context, name string) (RestartTimes, error) {
	var times RestartTimes
	c.mu.Lock()
	comp := c.components[name]
	c.mu.Unlock()
	if comp == nil {
		return times, fmt.Errorf("no component %q in this cluster", name)
	}
	old := comp.proc
	_ = syscall.Kill(-old.cmd.Process.Pid, syscall.SIGKILL)
	<-old.done
	times.Killed = time.Now()
	c.untrack(old)

	p, err := comp.start(comp.ports)
	if err != nil {
		return times, fmt.Errorf("restarting %s: %w", name, err)
	}
	times.Started = time.Now()
	c.mu.Lock()
	comp.proc = p
	c.mu.Unlock()
	c.track(p)
	if err := comp.ready(ctx, p, comp.ports); err != nil {
		p.stop()
		c.untrack(p)
		return times, fmt.Errorf("restarting %s: %w", name, err)
	}
	times.Ready = time.Now()
	return times, nil
}

// untrack forgets a process that was killed on purpose, so that Exited
// does not report it.
func (c *Cluster) untrack(p *process) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, q := range c.procs {
		if q == p {
			c.procs = append(c.procs[:i], c.procs[i+1:]...)
			return
		}
	}
}
