package chaos

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// leaderKiller is R1: it finds the replica whose controller holds the Lease,
// lets it lead for a few seconds, kills it with SIGKILL and starts it again,
// over and over, so that the Lease changes hands for the whole run.
type leaderKiller struct {
	// dwell is the shortest and longest time a leader leads before it is
	// killed.
	minDwell, maxDwell time.Duration

	mu        sync.Mutex
	kills     int
	failovers []time.Duration // from a kill to the next leader seen
	// leaderless are the same spans, as windows: from each kill to the next
	// leader seen, while no controller acted.
	leaderless []window
	errors     []string
}

// window is a span of time.
type window struct{ from, to time.Time }

// overlap is how much of [from, to] falls within windows.
func overlap(windows []window, from, to time.Time) time.Duration {
	var d time.Duration
	for _, w := range windows {
		start, end := w.from, w.to
		if from.After(start) {
			start = from
		}
		if to.Before(end) {
			end = to
		}
		if end.After(start) {
			d += end.Sub(start)
		}
	}
	return d
}

// run kills leaders until ctx ends, then leaves both replicas running.
func (k *leaderKiller) run(ctx context.Context) {
	var killedAt time.Time
	restarting := map[int]chan struct{}{}
	for ctx.Err() == nil {
		leader := k.waitLeader(ctx)
		if leader < 0 {
			break
		}
		if !killedAt.IsZero() {
			k.mu.Lock()
			k.failovers = append(k.failovers, time.Since(killedAt))
			k.leaderless = append(k.leaderless, window{killedAt, time.Now()})
			k.mu.Unlock()
		}
		dwell := k.minDwell + time.Duration(rand.Int64N(int64(k.maxDwell-k.minDwell)+1))
		select {
		case <-time.After(dwell):
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		// Never kill the last live replica: wait for the other to be back.
		for i, done := range restarting {
			<-done
			delete(restarting, i)
		}
		if now, err := env.MusterLeader(ctx); err != nil || now != leader {
			continue // the Lease moved on its own; find the leader again
		}
		env.KillMusterReplica(leader)
		killedAt = time.Now()
		k.mu.Lock()
		k.kills++
		k.mu.Unlock()
		done := make(chan struct{})
		restarting[leader] = done
		go func(i int) {
			defer close(done)
			k.restart(i)
		}(leader)
	}
	for _, done := range restarting {
		<-done
	}
}

// waitLeader polls until a live replica holds the Lease, or ctx ends (-1).
func (k *leaderKiller) waitLeader(ctx context.Context) int {
	for {
		if i, err := env.MusterLeader(ctx); err == nil && i >= 0 {
			return i
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return -1
		}
	}
}

// restart starts a killed replica again, retrying while the control plane
// is itself restarting; it does not give up with the run's context, so
// that the run ends with two replicas.
func (k *leaderKiller) restart(i int) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for {
		err := env.RestartMusterReplica(ctx, i)
		if err == nil {
			return
		}
		k.mu.Lock()
		k.errors = append(k.errors, err.Error())
		k.mu.Unlock()
		klog.InfoS("Restarting a killed replica failed; retrying", "replica", i, "err", err)
		if ctx.Err() != nil {
			return
		}
		time.Sleep(time.Second)
	}
}
