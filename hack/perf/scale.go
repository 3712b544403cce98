package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/test/cluster"
)

// scaleConfig is what `perf scale` adds to the driver's config.
type scaleConfig struct {
	// levels are the backlog depths measured in turn, deepest last.
	levels []int
	// burstGangs gangs that fit are offered at once, for admissions/s.
	burstGangs int
	// bigNodes and bigPods make the last level: that many nodes, with that
	// many pods of gangs running on them and no backlog.
	bigNodes, bigPods int
	// profileDir, when set, gets muster-apiserver's heap profile at the end
	// of each level's idle window, and its CPU profile over the first 15 s
	// of each level's burst.
	profileDir string
}

// Namespaces of the scale run. Muster creates at most 1,000 PodGroups from
// pods in one namespace, so the backlog has one of its own.
const (
	scaleFitNS     = "scale-fit"
	scaleBacklogNS = "scale-backlog"
	scaleFillerNS  = "scale-filler"
	scaleRunNS     = "scale-running"
)

// scaleLevel is what one level of the scale run measured, through Muster
// and through the raw pipeline, on the same cluster at the same moment.
type scaleLevel struct {
	name           string
	nodes, waiting int
	// probes and rawProbes are the release latencies of gangs that fit at
	// once, offered at probeRate.
	probes, rawProbes []time.Duration
	// admitted and rawAdmitted are gangs released per second when
	// burstGangs gangs that fit arrive at once.
	admitted, rawAdmitted float64
	// cpu is muster-apiserver's CPU over window while nothing changes.
	cpu, window time.Duration
	// probeWrites are Muster's API writes while the probes ran, and
	// probePods the probes' pods.
	probeWrites float64
	probePods   int
	// rss is muster-apiserver's resident memory with pods pods in the
	// cluster.
	rss  int64
	pods int
}

// scaleReport is the whole run.
type scaleReport struct {
	gangSize, probes, burstGangs int
	// rssStart is muster-apiserver's memory on the empty cluster.
	rssStart int64
	levels   []scaleLevel
	elapsed  time.Duration
}

// runScale runs the scale scenario of issue 36 on one cluster: a filler
// that holds most of every node; then, for each backlog depth, gangs that
// could fit the idle cluster but not now wait, and the level measures
// muster-apiserver's CPU and memory while nothing changes, and the release
// latency and admissions per second of gangs that fit, next to the raw
// pipeline's; last, the cluster grows to bigNodes with bigPods running and
// the same is measured again.
func (d *driver) runScale(ctx context.Context, sc scaleConfig) (*scaleReport, error) {
	began := time.Now()
	rssStart, _ := d.c.Memory()
	rep := &scaleReport{gangSize: d.cfg.gangSize, probes: d.cfg.idleProbes, burstGangs: sc.burstGangs, rssStart: rssStart[musterProcess]}
	for _, ns := range []string{scaleFitNS, scaleBacklogNS, scaleFillerNS, scaleRunNS} {
		if err := d.createNamespace(ctx, ns); err != nil {
			return nil, err
		}
	}
	if err := d.fillNodes(ctx); err != nil {
		return nil, err
	}
	queued := 0
	for _, waiting := range sc.levels {
		if err := d.growBacklog(ctx, queued, waiting); err != nil {
			return nil, err
		}
		queued = max(queued, waiting)
		l, err := d.measureLevel(ctx, sc, fmt.Sprintf("%d waiting", queued), fmt.Sprintf("l%d-", queued), queued)
		if err != nil {
			return nil, err
		}
		rep.levels = append(rep.levels, *l)
	}
	if sc.bigNodes > 0 {
		l, err := d.measureBig(ctx, sc)
		if err != nil {
			return nil, err
		}
		rep.levels = append(rep.levels, *l)
	}
	rep.elapsed = time.Since(began)
	return rep, nil
}

// fillNodes runs one filler pod on every node, holding fillerShare of its
// cpu.
func (d *driver) fillNodes(ctx context.Context) error {
	var filler []*corev1.Pod
	for i := range d.cfg.nodes {
		p := d.sized(d.labelledPod(scaleFillerNS, fmt.Sprintf("filler-%d", i), "filler", "1h"), fillerShare)
		p.Annotations[scheduling.MinCountAnnotation] = fmt.Sprint(d.cfg.nodes)
		filler = append(filler, p)
	}
	logf("scale: a filler on each of the %d nodes", d.cfg.nodes)
	uids, _, err := d.createPods(ctx, filler)
	if err != nil {
		return err
	}
	err = d.waitPods(ctx, "the filler to run", uids, 2*time.Minute, isUngated)
	d.cpu.mark("scale: filler")
	return err
}

// sized sets p's cpu request to share of a node's.
func (d *driver) sized(p *corev1.Pod, share float64) *corev1.Pod {
	cpu := resource.MustParse(d.cfg.nodeCPU)
	p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(float64(cpu.MilliValue())*share), resource.DecimalSI)
	return p
}

// growBacklog adds gangs from to to-1 of the backlog: each pod asks for
// backlogShare of a node, so each gang fits the idle cluster and none
// fits now. It returns once every backlog gang says why it waits.
func (d *driver) growBacklog(ctx context.Context, from, to int) error {
	if to <= from {
		return nil
	}
	var backlog []*corev1.Pod
	for g := from; g < to; g++ {
		for i := range d.cfg.gangSize {
			p := d.sized(d.labelledPod(scaleBacklogNS, fmt.Sprintf("w%04d-%d", g, i), fmt.Sprintf("w%04d", g), "1h"), backlogShare)
			p.Annotations[scheduling.MinCountAnnotation] = fmt.Sprint(d.cfg.gangSize)
			backlog = append(backlog, p)
		}
	}
	logf("scale: the backlog grows from %d to %d gangs", from, to)
	if _, _, err := d.createPods(ctx, backlog); err != nil {
		return err
	}
	err := d.waitWaiting(ctx, scaleBacklogNS, "w", to)
	d.cpu.mark(fmt.Sprintf("scale: backlog grows to %d", to))
	return err
}

// measureLevel measures one level: once the work of the last change has
// settled, muster-apiserver's CPU over the window and its memory; then
// probes and a burst through the raw pipeline and through Muster. It
// deletes the probes' and bursts' pods after.
func (d *driver) measureLevel(ctx context.Context, sc scaleConfig, name, prefix string, waiting int) (*scaleLevel, error) {
	l := &scaleLevel{name: name, nodes: d.cfg.nodes, waiting: waiting, window: d.cfg.idleWindow}
	if err := sleep(ctx, idleSettle); err != nil {
		return nil, err
	}
	d.cpu.mark("scale: " + name + ": settle")
	before := d.c.CPUTimes()[musterProcess]
	if err := sleep(ctx, d.cfg.idleWindow); err != nil {
		return nil, err
	}
	l.cpu = d.c.CPUTimes()[musterProcess] - before
	d.cpu.mark("scale: " + name + ": idle window")
	rss, _ := d.c.Memory()
	l.rss = rss[musterProcess]
	var err error
	if l.pods, err = d.livePods(ctx); err != nil {
		return nil, err
	}
	if err := d.heapProfile(ctx, sc.profileDir, name); err != nil {
		return nil, err
	}
	logf("scale: %s: muster-apiserver %.1f%% of a core, RSS %d MiB with %d pods", name, 100*l.cpu.Seconds()/l.window.Seconds(), l.rss>>20, l.pods)

	raw := func(ctx context.Context, name string, r *gangRun) error {
		return d.runRawGang(ctx, rawNamespace, name, "1h", r)
	}
	through := func(ctx context.Context, name string, r *gangRun) error {
		return d.runGangIn(ctx, scaleFitNS, name, "1h", r)
	}
	if l.rawProbes, err = d.probeWith(ctx, prefix+"p", raw); err != nil {
		return nil, err
	}
	d.cpu.mark("scale: " + name + ": raw probes")
	callsBefore, err := d.scrapeCalls(ctx)
	if err != nil {
		return nil, err
	}
	if l.probes, err = d.probeWith(ctx, prefix+"p", through); err != nil {
		return nil, err
	}
	callsAfter, err := d.scrapeCalls(ctx)
	if err != nil {
		return nil, err
	}
	l.probeWrites, l.probePods = writes(callsAfter.Minus(callsBefore)), len(l.probes)*d.cfg.gangSize
	d.cpu.mark("scale: " + name + ": probes")
	if l.rawAdmitted, err = d.admitBurst(ctx, sc.burstGangs, prefix+"b", raw); err != nil {
		return nil, err
	}
	d.cpu.mark("scale: " + name + ": raw burst")
	profiled := d.cpuProfile(ctx, sc.profileDir, name, 15*time.Second)
	if l.admitted, err = d.admitBurst(ctx, sc.burstGangs, prefix+"b", through); err != nil {
		return nil, err
	}
	if err := <-profiled; err != nil {
		return nil, err
	}
	d.cpu.mark("scale: " + name + ": burst")
	logf("scale: %s: probe p99 %s (raw %s); %.1f gangs/s admitted (raw %.1f)", name,
		ms(percentile(l.probes, 99)), ms(percentile(l.rawProbes, 99)), l.admitted, l.rawAdmitted)
	for _, ns := range []string{rawNamespace, scaleFitNS} {
		if err := d.deleteAll(ctx, ns); err != nil {
			return nil, err
		}
	}
	d.cpu.mark("scale: " + name + ": delete")
	return l, nil
}

// admitBurst offers n gangs that fit at once, made by run with the
// driver's concurrency, and returns the gangs released per second: n over
// the time from the first create to the last gate removed.
func (d *driver) admitBurst(ctx context.Context, n int, prefix string, run func(ctx context.Context, name string, r *gangRun) error) (float64, error) {
	runs := make([]gangRun, n)
	start := time.Now()
	if err := d.gangsAtOnce(ctx, n, func(ctx context.Context, i int) error {
		return run(ctx, fmt.Sprintf("%s%03d", prefix, i), &runs[i])
	}); err != nil {
		return 0, err
	}
	var uids []types.UID
	for _, r := range runs {
		uids = append(uids, r.uids...)
	}
	if err := d.waitPods(ctx, "the burst to be released ("+prefix+")", uids, 5*time.Minute, isUngated); err != nil {
		return 0, err
	}
	_, last := span(d.ungatedTimes(uids))
	return rate(n, last.Sub(start)), nil
}

// measureBig empties the cluster, grows it to bigNodes, runs bigPods pods
// in gangs on it, and measures a level with no backlog.
func (d *driver) measureBig(ctx context.Context, sc scaleConfig) (*scaleLevel, error) {
	for _, ns := range []string{scaleBacklogNS, scaleFillerNS} {
		if err := d.deleteAll(ctx, ns); err != nil {
			return nil, err
		}
	}
	d.cpu.mark("scale: delete the backlog and filler")
	if add := sc.bigNodes - d.cfg.nodes; add > 0 {
		logf("scale: adding %d nodes", add)
		if _, err := d.c.AddNodes(ctx, cluster.NodeSpec{Prefix: "scale", Count: add}); err != nil {
			return nil, err
		}
	}
	d.cpu.mark("scale: add nodes")
	gangs := sc.bigPods / d.cfg.gangSize
	logf("scale: %d gangs of %d that keep running", gangs, d.cfg.gangSize)
	runs := make([]gangRun, gangs)
	if err := d.gangsAtOnce(ctx, gangs, func(ctx context.Context, i int) error {
		return d.runGangIn(ctx, scaleRunNS, fmt.Sprintf("r%05d", i), "1h", &runs[i])
	}); err != nil {
		return nil, err
	}
	var uids []types.UID
	for _, r := range runs {
		uids = append(uids, r.uids...)
	}
	if err := d.waitPods(ctx, "the running gangs to run", uids, 15*time.Minute, func(t podTimes) bool { return !t.running.IsZero() }); err != nil {
		return nil, err
	}
	d.cpu.mark("scale: running gangs")
	nodes := d.cfg.nodes
	d.cfg.nodes = max(sc.bigNodes, nodes)
	defer func() { d.cfg.nodes = nodes }()
	return d.measureLevel(ctx, sc, fmt.Sprintf("%d nodes, %d running", d.cfg.nodes, len(uids)), "big-", 0)
}

// gangsAtOnce makes n gangs with build, as many at a time as keep the
// driver's concurrency in flight: each gang creates its pods at once.
func (d *driver) gangsAtOnce(ctx context.Context, n int, build func(ctx context.Context, i int) error) error {
	return parallelN(ctx, max(1, d.cfg.concurrency/d.cfg.gangSize), n, build)
}

// livePods counts the cluster's pods not being deleted.
func (d *driver) livePods(ctx context.Context) (int, error) {
	list, err := d.kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return 0, fmt.Errorf("listing pods: %w", err)
	}
	n := 0
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			n++
		}
	}
	return n, nil
}

// cpuProfile starts saving muster-apiserver's CPU profile over the next
// span (/debug/pprof/profile) in dir as cpu-<level>.pb.gz, when dir is
// set; the channel gets the outcome.
func (d *driver) cpuProfile(ctx context.Context, dir, level string, span time.Duration) <-chan error {
	done := make(chan error, 1)
	if dir == "" {
		done <- nil
		return done
	}
	go func() {
		done <- d.saveProfile(ctx, dir, "cpu-"+sanitize(level)+".pb.gz", "/debug/pprof/profile", fmt.Sprintf("seconds=%d", int(span.Seconds())))
	}()
	return done
}

// saveProfile reads one of muster-apiserver's /debug/pprof profiles and
// writes it in dir.
func (d *driver) saveProfile(ctx context.Context, dir, file, path, query string) error {
	cfg, err := d.c.MusterConfig(d.c.MusterURL)
	if err != nil {
		return err
	}
	cfg.Timeout = 2 * time.Minute
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	req := client.Discovery().RESTClient().Get().AbsPath(path)
	if k, v, ok := strings.Cut(query, "="); ok {
		req = req.Param(k, v)
	}
	data, err := req.DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("reading muster-apiserver's %s: %w", path, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	name := filepath.Join(dir, file)
	logf("scale: profile in %s", name)
	return os.WriteFile(name, data, 0o644)
}

// heapProfile saves muster-apiserver's heap profile (/debug/pprof/heap) in
// dir as heap-<level>.pb.gz, when dir is set.
func (d *driver) heapProfile(ctx context.Context, dir, level string) error {
	if dir == "" {
		return nil
	}
	return d.saveProfile(ctx, dir, "heap-"+sanitize(level)+".pb.gz", "/debug/pprof/heap", "")
}

// sanitize keeps letters and digits of s, and makes the rest dashes.
func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			b[i] = '-'
		}
	}
	return string(b)
}
