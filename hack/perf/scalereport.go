package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// print writes the scale table: one column per level, and each figure of
// Muster next to the raw pipeline's of the same level.
func (r *scaleReport) print(out io.Writer, kubeVersion string) {
	if len(r.levels) == 0 {
		return
	}
	fmt.Fprintf(out, "\nMuster scale: Kubernetes v%s; gangs of %d; probes: %d gangs that fit at once, offered at %.0f/s; bursts: %d such gangs at once\n\n",
		kubeVersion, r.gangSize, r.probes, probeRate, r.burstGangs)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	row := func(name string, cell func(l scaleLevel) string) {
		cells := make([]string, len(r.levels))
		for i, l := range r.levels {
			cells[i] = cell(l)
		}
		fmt.Fprintf(w, "%s\t%s\n", name, strings.Join(cells, "\t"))
	}
	none := r.levels[0]
	pp := func(ds []time.Duration) string {
		return fmt.Sprintf("%s / %s", ms(percentile(ds, 50)), ms(percentile(ds, 99)))
	}
	p99 := func(ds []time.Duration) float64 { return percentile(ds, 99).Seconds() }
	row("measure", func(l scaleLevel) string { return l.name })
	row("-------", func(l scaleLevel) string { return strings.Repeat("-", len(l.name)) })
	row("nodes", func(l scaleLevel) string { return fmt.Sprint(l.nodes) })
	row("probe release p50 / p99", func(l scaleLevel) string { return pp(l.probes) })
	row("  raw pipeline p50 / p99", func(l scaleLevel) string { return pp(l.rawProbes) })
	row("  p99 x raw", func(l scaleLevel) string { return fmt.Sprintf("%.2f", ratio(p99(l.probes), p99(l.rawProbes))) })
	row("  p99 x none waiting", func(l scaleLevel) string { return fmt.Sprintf("%.2f", ratio(p99(l.probes), p99(none.probes))) })
	row("  Muster writes per probe pod", func(l scaleLevel) string {
		return fmt.Sprintf("%.2f", l.probeWrites/float64(max(l.probePods, 1)))
	})
	row("admissions/s (gangs)", func(l scaleLevel) string { return fmt.Sprintf("%.1f", l.admitted) })
	row("  raw pipeline", func(l scaleLevel) string { return fmt.Sprintf("%.1f", l.rawAdmitted) })
	row("  x raw", func(l scaleLevel) string { return fmt.Sprintf("%.2f", ratio(l.admitted, l.rawAdmitted)) })
	row("muster-apiserver CPU, idle", func(l scaleLevel) string {
		return fmt.Sprintf("%.1f%% of a core", 100*ratio(l.cpu.Seconds(), l.window.Seconds()))
	})
	row("  raw pipeline", func(scaleLevel) string { return "0 (no Muster)" })
	row("muster-apiserver RSS", func(l scaleLevel) string { return fmt.Sprintf("%d MiB", l.rss>>20) })
	row("  pods in the cluster", func(l scaleLevel) string { return fmt.Sprint(l.pods) })
	row("  KiB per pod above start", func(l scaleLevel) string {
		return fmt.Sprintf("%.1f", float64(l.rss-r.rssStart)/1024/float64(max(l.pods, 1)))
	})
	row("  KiB per pod added since the first level", func(l scaleLevel) string {
		if l.pods <= none.pods {
			return "-"
		}
		return fmt.Sprintf("%.1f", float64(l.rss-none.rss)/1024/float64(l.pods-none.pods))
	})
	_ = w.Flush()
	fmt.Fprintf(out, "\nmuster-apiserver RSS on the empty cluster: %d MiB. Release latency: last pod created -> last gate removed. "+
		"Raw pipeline: the same pods, unlabelled, gated by the driver, which removes the gates itself once a gang's last pod exists. "+
		"Idle CPU: over %s while nothing changes but node heartbeats.\n", r.rssStart>>20, r.levels[0].window)
	fmt.Fprintf(out, "\nrun took %s\n", r.elapsed.Round(time.Second))
}
