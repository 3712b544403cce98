package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// sweepNS holds the sweep's gangs through Muster; the raw pipeline's go
// to rawNamespace.
const sweepNS = "perf-sweep"

// heldP99 is the release latency a rate must keep at p99 to count as held
// (issue 36: the API server's pace is the goal, 250 ms).
const heldP99 = 250 * time.Millisecond

// sweepPoint is one offered rate, through Muster and through the raw
// pipeline, one after the other on the same cluster.
type sweepPoint struct {
	rate  float64 // gangs offered per second
	gangs int
	// achieved and rawAchieved are the gangs per second the driver
	// managed to offer: below rate when creating pods is the limit.
	achieved, rawAchieved float64
	release, rawRelease   []time.Duration
	// ungated and rawUngated are pods ungated per second: every pod of the
	// step over the time from the first create to the last gate removed.
	ungated, rawUngated float64
}

// measureSweep offers gangs at each of the rates for cfg.sweepFor, first
// through the raw pipeline and then through Muster, and deletes each
// step's pods before the next. Every pod runs for cfg.runFor.
func (d *driver) measureSweep(ctx context.Context) ([]sweepPoint, groupPods, error) {
	groups := groupPods{}
	if len(d.cfg.sweepRates) == 0 {
		return nil, groups, nil
	}
	if err := d.createNamespace(ctx, sweepNS); err != nil {
		return nil, nil, err
	}
	runFor := d.cfg.runFor.String()
	raw := func(ctx context.Context, name string, r *gangRun) error {
		return d.runRawGang(ctx, rawNamespace, name, runFor, r)
	}
	through := func(ctx context.Context, name string, r *gangRun) error {
		return d.runGangIn(ctx, sweepNS, name, runFor, r)
	}
	var out []sweepPoint
	for i, perSec := range d.cfg.sweepRates {
		n := max(1, int(perSec*d.cfg.sweepFor.Seconds()))
		p := sweepPoint{rate: perSec, gangs: n}
		prefix := fmt.Sprintf("s%d-", i)
		logf("sweep: %d gangs at %.0f/s, raw pipeline then Muster", n, perSec)
		var (
			runs []gangRun
			err  error
		)
		if p.rawRelease, p.rawAchieved, p.rawUngated, _, err = d.sweepStep(ctx, n, perSec, prefix, raw); err != nil {
			return nil, nil, err
		}
		d.cpu.mark(fmt.Sprintf("sweep: raw %.0f/s", perSec))
		if p.release, p.achieved, p.ungated, runs, err = d.sweepStep(ctx, n, perSec, prefix, through); err != nil {
			return nil, nil, err
		}
		for j, r := range runs {
			groups[fmt.Sprintf("%s/%s%03d", sweepNS, prefix, j)] = r.uids
		}
		d.cpu.mark(fmt.Sprintf("sweep: Muster %.0f/s", perSec))
		logf("sweep: %.0f/s: p99 %s (raw %s), ungated %.0f/s (raw %.0f/s)", perSec,
			ms(percentile(p.release, 99)), ms(percentile(p.rawRelease, 99)), p.ungated, p.rawUngated)
		// The pods end, and Muster counts them, before they go: a pod
		// deleted while it runs would end as neither.
		var uids []types.UID
		for _, r := range runs {
			uids = append(uids, r.uids...)
		}
		if err := d.waitPods(ctx, "accounted (sweep)", uids, 5*time.Minute, isAccounted); err != nil {
			return nil, nil, err
		}
		for _, ns := range []string{rawNamespace, sweepNS} {
			if err := d.deleteAll(ctx, ns); err != nil {
				return nil, nil, err
			}
		}
		d.cpu.mark(fmt.Sprintf("sweep: pods end, delete %.0f/s", perSec))
		out = append(out, p)
	}
	return out, groups, nil
}

// sweepStep offers n gangs made by run at perSec, and returns their
// release latencies, the rate achieved, the pods ungated per second, and
// the gangs.
func (d *driver) sweepStep(ctx context.Context, n int, perSec float64, prefix string, run func(ctx context.Context, name string, r *gangRun) error) ([]time.Duration, float64, float64, []gangRun, error) {
	start := time.Now()
	runs, took, err := d.offer(ctx, n, perSec, prefix, run)
	if err != nil {
		return nil, 0, 0, nil, err
	}
	release, err := d.releaseLatencies(ctx, "the sweep's gangs to be released ("+prefix+")", runs)
	if err != nil {
		return nil, 0, 0, nil, err
	}
	var uids []types.UID
	for _, r := range runs {
		uids = append(uids, r.uids...)
	}
	_, last := span(d.ungatedTimes(uids))
	return release, rate(n, took), rate(len(uids), last.Sub(start)), runs, nil
}

// held is the highest rate whose release p99 is within heldP99 and that
// the driver offered at 90% of it or more, or 0 for none; release and
// achieved pick Muster's figures or the raw pipeline's.
func held(points []sweepPoint, release func(sweepPoint) []time.Duration, achieved func(sweepPoint) float64) float64 {
	best := 0.0
	for _, p := range points {
		if percentile(release(p), 99) <= heldP99 && achieved(p) >= 0.9*p.rate && p.rate > best {
			best = p.rate
		}
	}
	return best
}

// printSweep writes the sweep's table and the highest rates held.
func printSweep(out io.Writer, points []sweepPoint, gangSize int, runFor time.Duration) {
	if len(points) == 0 {
		return
	}
	fmt.Fprintf(out, "\nRate sweep: gangs of %d that fit, pods run %s; each rate offered through the raw pipeline, then through Muster:\n\n", gangSize, runFor)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "gangs/s offered\tachieved (raw)\trelease p50 / p99\traw p50 / p99\tp99 x raw\tungated pods/s\traw\tx raw\n")
	for _, p := range points {
		fmt.Fprintf(w, "%.0f\t%.1f (%.1f)\t%s / %s\t%s / %s\t%.2f\t%.0f\t%.0f\t%.2f\n", p.rate, p.achieved, p.rawAchieved,
			ms(percentile(p.release, 50)), ms(percentile(p.release, 99)),
			ms(percentile(p.rawRelease, 50)), ms(percentile(p.rawRelease, 99)),
			ratio(percentile(p.release, 99).Seconds(), percentile(p.rawRelease, 99).Seconds()),
			p.ungated, p.rawUngated, ratio(p.ungated, p.rawUngated))
	}
	_ = w.Flush()
	muster := held(points, func(p sweepPoint) []time.Duration { return p.release }, func(p sweepPoint) float64 { return p.achieved })
	raw := held(points, func(p sweepPoint) []time.Duration { return p.rawRelease }, func(p sweepPoint) float64 { return p.rawAchieved })
	fmt.Fprintf(out, "\nhighest rate held at release p99 <= %s (and offered at 90%% of it): Muster %.0f gangs/s, raw pipeline %.0f gangs/s: %.2f x raw\n",
		ms(heldP99), muster, raw, ratio(muster, raw))
}
