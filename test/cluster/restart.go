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
	if err := c.Kill(name); err != nil {
		return times, err
	}
	times.Killed = time.Now()
	started, err := c.StartAgain(ctx, name)
	times.Started = started
	if err != nil {
		return times, err
	}
	times.Ready = time.Now()
	return times, nil
}

// Kill kills a component with SIGKILL, as a crash would, and leaves it
// down until StartAgain, so that a test can act during the outage.
func (c *Cluster) Kill(name string) error {
	c.mu.Lock()
	comp := c.components[name]
	c.mu.Unlock()
	if comp == nil {
		return fmt.Errorf("no component %q in this cluster", name)
	}
	old := comp.proc
	_ = syscall.Kill(-old.cmd.Process.Pid, syscall.SIGKILL)
	<-old.done
	c.untrack(old)
	return nil
}

// StartAgain starts a component that Kill stopped on its old ports with its
// old data, and waits until it is ready. It returns when it started it.
func (c *Cluster) StartAgain(ctx context.Context, name string) (time.Time, error) {
	c.mu.Lock()
	comp := c.components[name]
	c.mu.Unlock()
	if comp == nil {
		return time.Time{}, fmt.Errorf("no component %q in this cluster", name)
	}
	p, err := comp.start(comp.ports)
	if err != nil {
		return time.Time{}, fmt.Errorf("restarting %s: %w", name, err)
	}
	started := time.Now()
	c.mu.Lock()
	comp.proc = p
	c.mu.Unlock()
	c.track(p)
	if err := comp.ready(ctx, p, comp.ports); err != nil {
		p.stop()
		c.untrack(p)
		return started, fmt.Errorf("restarting %s: %w", name, err)
	}
	return started, nil
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
