package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// latency holds what gangs offered at a steady rate saw.
type latency struct {
	gangs, pods       int
	offered, achieved float64 // gangs per second
	release, bind     []time.Duration
	accountLag        []time.Duration
}

// gangRun is one gang of the latency phase.
type gangRun struct {
	uids        []types.UID
	lastCreated time.Time
}

// measureLatency offers cfg.gangs gangs at cfg.rate gangs per second. Each
// gang's PodGroup is created first, then its pods at once. Release latency
// is from the gang's last pod created to its last gate removed; bind
// latency to its last pod bound; accounting lag from each pod finished to
// its finalizer removed.
func (d *driver) measureLatency(ctx context.Context) (*latency, groupPods, error) {
	n, g := d.cfg.gangs, d.cfg.gangSize
	logf("latency: offering %d gangs of %d at %.1f gangs/s", n, g, d.cfg.rate)
	runs := make([]gangRun, n)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Duration(float64(time.Second) / d.cfg.rate))
	start := time.Now()
	for i := range n {
		if i > 0 {
			select {
			case <-tick.C:
			case <-ctx.Done():
				tick.Stop()
				return nil, nil, ctx.Err()
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := d.runGang(ctx, i, &runs[i]); err != nil {
				errs <- err
			}
		}()
	}
	tick.Stop()
	wg.Wait()
	offeredFor := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return nil, nil, err
	}

	var uids []types.UID
	for _, r := range runs {
		uids = append(uids, r.uids...)
	}
	if err := d.waitPods(ctx, "accounted (latency)", uids, 10*time.Minute, isAccounted); err != nil {
		return nil, nil, err
	}
	d.cpu.mark(fmt.Sprintf("latency: %d gangs at %.0f/s", n, d.cfg.rate))
	l := &latency{gangs: n, pods: len(uids), offered: d.cfg.rate, achieved: rate(n, offeredFor)}
	for _, r := range runs {
		times := d.rec.snapshot(r.uids)
		ungated, bound := make([]time.Time, len(times)), make([]time.Time, len(times))
		for i, t := range times {
			ungated[i], bound[i] = t.ungated, t.bound
			l.accountLag = append(l.accountLag, t.freed.Sub(t.finished))
		}
		_, lastUngated := span(ungated)
		_, lastBound := span(bound)
		l.release = append(l.release, lastUngated.Sub(r.lastCreated))
		l.bind = append(l.bind, lastBound.Sub(r.lastCreated))
	}
	groups := groupPods{}
	for i, r := range runs {
		groups[rateNS+"/"+gangName(i)] = r.uids
	}
	return l, groups, nil
}

// runGang creates gang i's PodGroup and then its pods, all at once.
func (d *driver) runGang(ctx context.Context, i int, r *gangRun) error {
	return d.runGangIn(ctx, rateNS, gangName(i), d.cfg.runFor.String(), r)
}

// runGangIn creates gang name's PodGroup in ns and then its pods, all at
// once, each running for runFor.
func (d *driver) runGangIn(ctx context.Context, ns, name, runFor string, r *gangRun) error {
	g := d.cfg.gangSize
	if err := d.createGroup(ctx, ns, name, g); err != nil {
		return err
	}
	pods := make([]*corev1.Pod, g)
	for j := range pods {
		pods[j] = d.labelledPod(ns, fmt.Sprintf("%s-%d", name, j), name, runFor)
	}
	r.uids = make([]types.UID, g)
	var mu sync.Mutex
	return eachAtOnce(g, func(j int) error {
		uids, _, err := d.createPods(ctx, pods[j:j+1])
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		r.uids[j] = uids[0]
		if now := time.Now(); now.After(r.lastCreated) {
			r.lastCreated = now
		}
		return nil
	})
}
