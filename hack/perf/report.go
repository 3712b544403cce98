package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/muster-dev/muster/pkg/controller/apicalls"
	"github.com/muster-dev/muster/test/cluster"
)

// print writes the table: one row per measure, with the baseline it is
// compared with.
func (r *report) print(out io.Writer, cfg config, c *cluster.Cluster) {
	prepared := ""
	if cfg.prepared {
		prepared = "; labelled pods created already prepared (--prepared)"
	}
	fmt.Fprintf(out, "\nMuster perf: Kubernetes v%s, %d-pod gangs; burst %d pods; %d gangs offered at %.0f/s, pods run %s; driver concurrency %d%s\n\n",
		c.KubeVersion, cfg.gangSize, r.base.pods, r.lat.gangs, r.lat.offered, cfg.runFor, cfg.concurrency, prepared)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	row := func(name, value, compare string) { fmt.Fprintf(w, "%s\t%s\t%s\n", name, value, compare) }
	row("measure", "value", "against the raw rate (no Muster in the path)")
	row("-------", "-----", "---------------------------------------------")
	row("labelled pod create rate", perSec(r.burst.createRate), fmt.Sprintf("%.2f x raw create %s", ratio(r.burst.createRate, r.base.createRate), perSec(r.base.createRate)))
	row("release latency p50 / p90 / p99", fmt.Sprintf("%s / %s / %s", ms(percentile(r.lat.release, 50)), ms(percentile(r.lat.release, 90)), ms(percentile(r.lat.release, 99))),
		fmt.Sprintf("last pod created -> last gate removed, %d gangs at %.1f/s achieved", r.lat.gangs, r.lat.achieved))
	row("bind latency p99", ms(percentile(r.lat.bind, 99)), "last pod created -> last pod bound")
	row("ungated pods/s (one backlog)", perSec(r.burst.ungateRate), fmt.Sprintf("%.2f x raw gate removal %s", ratio(r.burst.ungateRate, r.base.ungateRate), perSec(r.base.ungateRate)))
	row("accounting lag p50 / p99", fmt.Sprintf("%s / %s", ms(percentile(r.lat.accountLag, 50)), ms(percentile(r.lat.accountLag, 99))), "pod finished -> finalizer removed")
	row("accounted pods/s (one backlog)", perSec(r.burst.accountRate), fmt.Sprintf("%.2f x raw finalizer removal %s", ratio(r.burst.accountRate, r.base.finalizerRate), perSec(r.base.finalizerRate)))
	row(fmt.Sprintf("accounting %d finished pods", r.burst.pods), secs(r.burst.accountTime), fmt.Sprintf("%.2f x raw time %s to remove %d finalizers", ratio(r.burst.accountTime.Seconds(), r.base.finalizerTime.Seconds()), secs(r.base.finalizerTime), r.base.pods))
	row("  of which kwok ending the pods", secs(r.burst.finishSpan), "first pod finished -> last pod finished: the backlog cannot be accounted faster")
	if i := r.idle; i != nil {
		row(fmt.Sprintf("muster-apiserver CPU, %d gangs waiting", i.gangs), fmt.Sprintf("%.1f%% of a core", 100*i.share()),
			fmt.Sprintf("%s of CPU over %s; they fit the idle %d nodes, not now, and nothing changes but node heartbeats", secs(i.cpu), i.window, i.nodes))
		pp := func(l []time.Duration) string {
			return fmt.Sprintf("%s / %s", ms(percentile(l, 50)), ms(percentile(l, 99)))
		}
		row("muster-apiserver RSS, backlog waiting", fmt.Sprintf("%d MiB", i.rssIdle>>20),
			fmt.Sprintf("%d MiB as the phase began: %.1f KiB more per pod of the %d it added", i.rssBefore>>20, i.perPod()/1024, i.pods))
		if len(i.alone) > 0 {
			row("probe release p50 / p99, none waiting", pp(i.alone), fmt.Sprintf("%d gangs that fit at once, at 5/s: last pod created -> last gate removed", len(i.alone)))
			row(fmt.Sprintf("probe release p50 / p99, %d waiting", i.gangs), pp(i.behind),
				fmt.Sprintf("the same behind the backlog: p99 %.2f x that with none waiting", ratio(percentile(i.behind, 99).Seconds(), percentile(i.alone, 99).Seconds())))
		}
	}
	if wi := r.whatIf; wi != nil {
		errs := ""
		if wi.errors > 0 {
			errs = fmt.Sprintf("; %d failed, first: %v", wi.errors, wi.firstErr)
		}
		row(fmt.Sprintf("what-if p50 / p99 / max, gang of %d on %d nodes", cfg.gangSize, wi.nodes),
			fmt.Sprintf("%s / %s / %s", ms(percentile(wi.answers, 50)), ms(percentile(wi.answers, 99)), ms(percentile(wi.answers, 100))),
			fmt.Sprintf("%d answers (%d: would run now) through kube-apiserver at %d/s while %d gangs were offered at %.0f/s%s",
				len(wi.answers), wi.admitted, whatIfPerSec, wi.gangs, cfg.rate, errs))
		row("  a PodGroup GET meanwhile, p50 / p99", fmt.Sprintf("%s / %s", ms(percentile(wi.gets, 50)), ms(percentile(wi.gets, 99))),
			"the same path (client, kube-apiserver's aggregator, Muster), the request itself next to nothing")
		row("  of the what-if, in Muster p50 / p99", fmt.Sprintf("<= %s / <= %s", msf(wi.inMuster[0]), msf(wi.inMuster[1])),
			"muster_whatif_duration_seconds (bucket bounds): the translation and the cycle, on the leader")
	}
	row("API writes per pod", fmt.Sprintf("%.2f", writes(r.calls)/float64(r.pods)), fmt.Sprintf("all of Muster's writes over %d labelled pods", r.pods))
	keys := make([]apicalls.Key, 0, len(r.calls))
	for k := range r.calls {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b apicalls.Key) int {
		return strings.Compare(a.Client+a.Resource+a.Verb, b.Client+b.Resource+b.Verb)
	})
	for _, k := range keys {
		row(fmt.Sprintf("  %s %s %s", k.Client, k.Verb, k.Resource), fmt.Sprintf("%.3f", r.calls[k]/float64(r.pods)), fmt.Sprintf("per pod (%.0f calls)", r.calls[k]))
	}
	exact := "yes"
	if !r.exact.ok() {
		exact = "NO"
	}
	row("exact at the end", exact, fmt.Sprintf("%d groups: %d with wrong counts; %d pods keep Muster's finalizer; %d stuck Terminating",
		r.exact.groups, r.exact.wrong, r.exact.finalizersLeft, r.exact.terminatingLeft))
	row("pod creates retried", fmt.Sprint(r.retries), "the API server failed them (e.g. a webhook call timed out)")
	if r.burst.lateStarts > 0 {
		row("note", fmt.Sprintf("%d late", r.burst.lateStarts), "burst pods started after the instant all were to finish: the accounting backlog was smaller")
	}
	_ = w.Flush()
	fmt.Fprintf(out, "\nrun took %s\n", r.elapsed.Round(time.Second))
}

func perSec(v float64) string     { return fmt.Sprintf("%.0f/s", v) }
func ms(d time.Duration) string   { return fmt.Sprintf("%dms", d.Milliseconds()) }
func msf(secs float64) string     { return fmt.Sprintf("%.1fms", secs*1000) }
func secs(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }
