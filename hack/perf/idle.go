package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"k8s.io/apimachinery/pkg/api/resource"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// idle is the idle-backlog phase (issue 36): gangs that would fit the
// idle cluster wait behind a filler that holds most of every node, and
// nothing changes but the nodes' heartbeats. It measures what the waiting
// costs muster-apiserver.
type idle struct {
	gangs, nodes int
	window       time.Duration
	// cpu is muster-apiserver's CPU time over window.
	cpu time.Duration
	// alone and behind are the release latencies of probe gangs that fit
	// at once, offered before the backlog and while it waits.
	alone, behind []time.Duration
	// rssBefore and rssIdle are muster-apiserver's resident memory as the
	// phase begins and at the end of the window, with pods more pods in
	// the cluster.
	rssBefore, rssIdle int64
	pods               int
}

// perPod is muster-apiserver's memory growth over the phase per pod the
// phase added, in bytes.
func (i *idle) perPod() float64 { return float64(i.rssIdle-i.rssBefore) / float64(max(i.pods, 1)) }

// share is the share of one core muster-apiserver used.
func (i *idle) share() float64 { return i.cpu.Seconds() / i.window.Seconds() }

// The filler holds fillerShare of every node's cpu, and each pod of a
// waiting gang asks for backlogShare: a gang fits an idle node set, and
// none fits now.
const (
	fillerShare  = 0.75
	backlogShare = 0.5
	// idleSettle lets the work that the backlog's creation started (its
	// events, at the client's rate) end before the window opens, once
	// every gang of the backlog says why it waits.
	idleSettle = 20 * time.Second
)

// measureIdle runs the idle-backlog phase: one filler pod per node, probe
// gangs, then cfg.idleGangs gangs of cfg.gangSize, muster-apiserver's CPU
// over cfg.idleWindow once they settle, and probe gangs again. It deletes
// the namespace's pods after.
func (d *driver) measureIdle(ctx context.Context) (*idle, error) {
	// The backlog has a namespace of its own: Muster creates at most
	// 1,000 PodGroups from pods in one namespace
	// (--max-podgroups-per-namespace).
	const ns, backlogNS = "perf-idle", "perf-backlog"
	for _, n := range []string{ns, backlogNS} {
		if err := d.createNamespace(ctx, n); err != nil {
			return nil, err
		}
	}
	nodes, cpu := d.cfg.nodes, resource.MustParse(d.cfg.nodeCPU)
	share := func(f float64) resource.Quantity {
		return *resource.NewMilliQuantity(int64(float64(cpu.MilliValue())*f), resource.DecimalSI)
	}
	sized := func(p *corev1.Pod, q resource.Quantity) *corev1.Pod {
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = q
		return p
	}
	rssBefore, _ := d.c.Memory()
	var filler []*corev1.Pod
	for i := range nodes {
		p := sized(d.labelledPod(ns, fmt.Sprintf("filler-%d", i), "filler", "1h"), share(fillerShare))
		p.Annotations[scheduling.MinCountAnnotation] = fmt.Sprint(nodes)
		filler = append(filler, p)
	}
	uids, _, err := d.createPods(ctx, filler)
	if err != nil {
		return nil, err
	}
	if err := d.waitPods(ctx, "the idle phase's filler to run", uids, 2*time.Minute, isUngated); err != nil {
		return nil, err
	}
	res := &idle{gangs: d.cfg.idleGangs, nodes: nodes, window: d.cfg.idleWindow}
	if res.alone, err = d.probe(ctx, ns, "alone"); err != nil {
		return nil, err
	}
	d.cpu.mark("idle: probes, no backlog")
	var backlog []*corev1.Pod
	for g := range d.cfg.idleGangs {
		for i := range d.cfg.gangSize {
			p := sized(d.labelledPod(backlogNS, fmt.Sprintf("w%04d-%d", g, i), fmt.Sprintf("w%04d", g), "1h"), share(backlogShare))
			p.Annotations[scheduling.MinCountAnnotation] = fmt.Sprint(d.cfg.gangSize)
			backlog = append(backlog, p)
		}
	}
	if _, _, err := d.createPods(ctx, backlog); err != nil {
		return nil, err
	}
	if err := d.waitWaiting(ctx, backlogNS, "w", d.cfg.idleGangs); err != nil {
		return nil, err
	}
	if err := sleep(ctx, idleSettle); err != nil {
		return nil, err
	}
	d.cpu.mark("idle: filler and backlog created")
	before := d.c.CPUTimes()[musterProcess]
	// The window in tenths, so that the log shows whether the cost decays
	// (work the backlog's creation left) or holds (work it keeps making).
	last := before
	for i := range 10 {
		if err := sleep(ctx, d.cfg.idleWindow/10); err != nil {
			return nil, err
		}
		now := d.c.CPUTimes()[musterProcess]
		logf("idle: tenth %d of the window: muster-apiserver %.1f%% of a core", i+1, 100*(now-last).Seconds()/(d.cfg.idleWindow/10).Seconds())
		last = now
	}
	res.cpu = last - before
	rss, _ := d.c.Memory()
	res.rssBefore, res.rssIdle = rssBefore[musterProcess], rss[musterProcess]
	res.pods = len(filler) + len(backlog) + len(res.alone)*d.cfg.gangSize
	d.cpu.mark("idle: backlog waits")
	if res.behind, err = d.probe(ctx, ns, "behind"); err != nil {
		return nil, err
	}
	d.cpu.mark("idle: probes behind the backlog")
	for _, n := range []string{ns, backlogNS} {
		if err := d.deleteAll(ctx, n); err != nil {
			return nil, err
		}
	}
	d.cpu.mark("idle: delete")
	return res, nil
}

// musterProcess is muster-apiserver's process name in the cluster's CPU
// times.
const musterProcess = "muster-apiserver"

// probeRate is the pace of the probe gangs of the idle-backlog phase, as
// in issue 36's scenario.
const probeRate = 5.0

// probe offers cfg.idleProbes gangs of cfg.gangSize small pods in ns at
// probeRate gangs a second, each of which fits at once, and returns each
// one's release latency: its last pod created to its last gate removed.
func (d *driver) probe(ctx context.Context, ns, prefix string) ([]time.Duration, error) {
	return d.probeWith(ctx, prefix, func(ctx context.Context, name string, r *gangRun) error {
		return d.runGangIn(ctx, ns, name, "1h", r)
	})
}

// probeWith is probe with the gangs made by run: through Muster, or by the
// raw pipeline.
func (d *driver) probeWith(ctx context.Context, prefix string, run func(ctx context.Context, name string, r *gangRun) error) ([]time.Duration, error) {
	if d.cfg.idleProbes == 0 {
		return nil, nil
	}
	runs, _, err := d.offer(ctx, d.cfg.idleProbes, probeRate, prefix, run)
	if err != nil {
		return nil, err
	}
	return d.releaseLatencies(ctx, "the probe gangs to be released ("+prefix+")", runs)
}

// offer makes n gangs named prefix000, prefix001, ... with run, perSec
// gangs a second, and returns them with how long the offering took.
func (d *driver) offer(ctx context.Context, n int, perSec float64, prefix string, run func(ctx context.Context, name string, r *gangRun) error) ([]gangRun, time.Duration, error) {
	runs := make([]gangRun, n)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Duration(float64(time.Second) / perSec))
	defer tick.Stop()
	start := time.Now()
	for i := range n {
		if i > 0 {
			select {
			case <-tick.C:
			case <-ctx.Done():
				wg.Wait()
				return nil, 0, ctx.Err()
			}
		}
		wg.Go(func() {
			if err := run(ctx, fmt.Sprintf("%s%03d", prefix, i), &runs[i]); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return nil, 0, err
	}
	return runs, took, nil
}

// releaseLatencies waits until every pod of runs is ungated and returns
// each gang's release latency: its last pod created to its last gate
// removed.
func (d *driver) releaseLatencies(ctx context.Context, what string, runs []gangRun) ([]time.Duration, error) {
	var uids []types.UID
	for _, r := range runs {
		uids = append(uids, r.uids...)
	}
	if err := d.waitPods(ctx, what, uids, 5*time.Minute, isUngated); err != nil {
		return nil, err
	}
	out := make([]time.Duration, 0, len(runs))
	for _, r := range runs {
		_, last := span(d.ungatedTimes(r.uids))
		out = append(out, last.Sub(r.lastCreated))
	}
	return out, nil
}

// ungatedTimes are the instants the pods lost their last gate.
func (d *driver) ungatedTimes(uids []types.UID) []time.Time {
	times := d.rec.snapshot(uids)
	ungated := make([]time.Time, len(times))
	for i, t := range times {
		ungated[i] = t.ungated
	}
	return ungated
}

// waitWaiting waits until n PodGroups in ns whose names start with prefix
// say Admitted=False with reason InsufficientCapacity: the controller has
// placed and recorded the whole backlog.
func (d *driver) waitWaiting(ctx context.Context, ns, prefix string, n int) error {
	logf("idle: waiting for %d gangs to say %s", n, scheduling.ReasonInsufficientCapacity)
	return wait.PollUntilContextTimeout(ctx, time.Second, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := d.muster.SchedulingV1alpha1().PodGroups(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		waiting := 0
		for _, pg := range list.Items {
			c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.ConditionAdmitted)
			if strings.HasPrefix(pg.Name, prefix) && c != nil && c.Status == metav1.ConditionFalse && c.Reason == scheduling.ReasonInsufficientCapacity {
				waiting++
			}
		}
		return waiting >= n, nil
	})
}
