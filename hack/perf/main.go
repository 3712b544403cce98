// Command perf is Muster's load driver (`make perf`). It brings up the local
// cluster, measures in the same run the raw rates a client reaches with no
// Muster in the path (create a pod, remove a gate, remove a finalizer), then
// drives gangs of plain labelled pods through Muster and prints one table:
// create rate, release and bind latency, release and accounting throughput,
// Muster's API calls per pod, and whether every count came out exact.
//
// It is a benchmark: it asserts nothing about speed. It exits non-zero only
// when the run itself breaks or the counts are not exact.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"github.com/muster-dev/muster/test/cluster"
)

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// config is what the flags set.
type config struct {
	gangSize    int
	gangs       int
	rate        float64
	runFor      time.Duration
	burstPods   int
	concurrency int
	timeout     time.Duration
	// prepared creates labelled pods with Muster's gate, finalizer and
	// managed label already on, as a framework may, so that the mutating
	// webhook's match condition skips the call.
	prepared bool
	// idleGangs wait for idleWindow in the idle-backlog phase; nodes and
	// nodeCPU are the cluster's, which that phase fills.
	idleGangs  int
	idleWindow time.Duration
	// idleProbes gangs that fit at once are offered before the backlog
	// and behind it.
	idleProbes int
	nodes      int
	nodeCPU    string
	// sweepRates are offered in turn for sweepFor each, through the raw
	// pipeline and through Muster.
	sweepRates []float64
	sweepFor   time.Duration
	// whatIfNodes is how many nodes the what-if phase measures on (0: no
	// such phase).
	whatIfNodes int
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "perf: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		cfg       config
		sc        scaleConfig
		levels    string
		rates     string
		opts      cluster.Options
		musterArg stringList
		keep      bool
	)
	// `perf scale` is `make scale`: issue 36's scenario, its own defaults.
	args, scale := os.Args[1:], len(os.Args) > 1 && os.Args[1] == "scale"
	nodes, nodePods, window := 20, 1000, time.Minute
	if scale {
		args, nodes, nodePods, window = args[1:], 50, 250, 30*time.Second
	}
	klog.InitFlags(nil)
	flag.IntVar(&cfg.gangSize, "gang-size", 8, "pods per gang")
	flag.IntVar(&cfg.gangs, "gangs", 200, "gangs offered at --rate in the latency phase")
	flag.Float64Var(&cfg.rate, "rate", 20, "offered gangs per second in the latency phase")
	flag.DurationVar(&cfg.runFor, "run-for", 2*time.Second, "how long each pod of the latency phase runs")
	flag.IntVar(&cfg.burstPods, "burst-pods", 10000, "pods of the throughput phase, and of the raw baseline: created at once, released as one backlog, finishing at one instant")
	flag.IntVar(&cfg.idleGangs, "idle-gangs", 200, "gangs that wait, and could fit the idle cluster, in the idle-backlog phase (0: no such phase)")
	flag.DurationVar(&cfg.idleWindow, "idle-window", window, "how long the idle-backlog phase (and each level of `scale`) measures muster-apiserver's CPU")
	flag.IntVar(&cfg.idleProbes, "idle-probes", 60, "gangs that fit at once, offered at 5/s before the idle phase's backlog and behind it, whose release latency is printed")
	flag.IntVar(&cfg.concurrency, "concurrency", 32, "the driver's requests in flight at once")
	flag.DurationVar(&cfg.timeout, "timeout", 30*time.Minute, "bound on the whole run")
	flag.BoolVar(&cfg.prepared, "prepared", false, "create labelled pods already prepared (gate, finalizer, managed label), as a framework that skips the mutating webhook does; the table is meant for the default, unprepared")
	flag.IntVar(&opts.Nodes, "nodes", nodes, "kwok fake nodes")
	flag.IntVar(&opts.NodePods, "node-pods", nodePods, "pod capacity of each node")
	flag.StringVar(&rates, "sweep-rates", "2,5,10,15,20,30", "gangs per second offered in turn in the rate sweep, through the raw pipeline and through Muster (empty: no sweep)")
	flag.DurationVar(&cfg.sweepFor, "sweep-for", 6*time.Second, "how long each rate of the sweep is offered")
	flag.IntVar(&cfg.whatIfNodes, "whatif-nodes", 1000, "nodes of the what-if phase, which asks what-ifs while the latency phase's load runs again (0: no such phase)")
	flag.StringVar(&levels, "levels", "0,200,1000", "scale: the backlog depths measured in turn, in gangs")
	flag.IntVar(&sc.burstGangs, "burst-gangs", 200, "scale: gangs that fit offered at once at each level, for admissions per second")
	flag.IntVar(&sc.bigNodes, "big-nodes", 500, "scale: the nodes of the last level (0: no such level)")
	flag.IntVar(&sc.bigPods, "big-pods", 10000, "scale: the pods of gangs running in the last level")
	flag.StringVar(&sc.profileDir, "profile-dir", "", "scale: save muster-apiserver's heap profile at each level, and its CPU profile over the first 15 s of each burst, in this directory")
	flag.StringVar(&opts.BinDir, "bin-dir", "", "directory with the cluster tools (default $MUSTER_BIN_DIR, else bin/)")
	flag.StringVar(&opts.MusterBinary, "muster-binary", "", "muster-apiserver to run (default $MUSTER_BINARY, else <bin-dir>/muster-apiserver)")
	flag.Var(&musterArg, "muster-arg", "extra flag for muster-apiserver (repeatable); the table is meant for the defaults")
	flag.BoolVar(&keep, "keep", false, "keep the cluster's work dir (logs) after the run")
	flag.BoolVar(&opts.PreparePolicy, "prepare-policy", false, "install the MutatingAdmissionPolicy that prepares new pods in kube-apiserver (1.36+), as the chart's preparePolicy.enabled does, instead of leaving it to the mutating webhook")
	flag.CommandLine.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: perf [scale] [flags]\n\n  perf        make perf: rates and latencies against the raw API rates\n  perf scale  make scale: gangs that fit behind a backlog of 0, 200 and 1,000, and on %d nodes, against the raw pipeline\n\n", 500)
		flag.PrintDefaults()
	}
	if err := flag.CommandLine.Parse(args); err != nil {
		return err
	}
	if rates != "" && !scale {
		var err error
		if cfg.sweepRates, err = parseRates(rates); err != nil {
			return err
		}
	}
	if scale {
		var err error
		if sc.levels, err = parseLevels(levels); err != nil {
			return err
		}
		if sc.burstGangs < 1 || sc.bigPods < 0 || sc.bigNodes > 1000 {
			return errors.New("--burst-gangs must be positive, --big-pods not negative, and --big-nodes at most 1000")
		}
		cfg.idleProbes = max(cfg.idleProbes, 1)
	}
	if cfg.whatIfNodes > 1000 {
		return errors.New("--whatif-nodes is at most 1000")
	}
	if cfg.gangSize < 1 || cfg.gangs < 1 || cfg.rate <= 0 || cfg.burstPods < cfg.gangSize || cfg.concurrency < 1 {
		return errors.New("--gang-size, --gangs, --rate and --concurrency must be positive, and --burst-pods at least --gang-size")
	}
	cfg.burstPods -= cfg.burstPods % cfg.gangSize
	if cfg.idleGangs > 1000 {
		return errors.New("--idle-gangs is at most 1000: the backlog is one namespace, where Muster creates at most 1,000 PodGroups from pods")
	}

	if opts.BinDir == "" {
		dir, err := cluster.DefaultBinDir()
		if err != nil {
			return err
		}
		opts.BinDir = dir
	}
	if opts.MusterBinary == "" {
		opts.MusterBinary = cluster.DefaultMusterBinary(opts.BinDir)
	}
	opts.NodeCPU = "1000"
	opts.NodeMemory = "4Ti"
	opts.MusterArgs = musterArg
	cfg.nodes, cfg.nodeCPU = opts.Nodes, opts.NodeCPU
	opts.MusterManifests = cluster.DefaultMusterManifests()
	if missing := opts.MissingBinaries(); len(missing) > 0 {
		return fmt.Errorf("missing %s: run `make perf`, which builds them", strings.Join(missing, ", "))
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()

	logf("starting the local cluster: %d nodes of %d pods", opts.Nodes, opts.NodePods)
	c, err := cluster.Start(ctx, opts)
	if err != nil {
		return err
	}
	defer func() {
		c.Stop()
		if keep {
			logf("work dir kept: %s", c.WorkDir)
		} else {
			_ = os.RemoveAll(c.WorkDir)
		}
	}()
	logf("cluster up: Kubernetes v%s, Muster at %s", c.KubeVersion, c.MusterURL)

	d, err := newDriver(ctx, c, cfg)
	if err != nil {
		return err
	}
	defer d.stop()
	if scale {
		rep, err := d.runScale(ctx, sc)
		if rep != nil {
			rep.print(os.Stdout, c.KubeVersion.String())
			d.cpu.print(os.Stdout)
		}
		return err
	}
	rep, err := d.run(ctx)
	if rep != nil {
		rep.print(os.Stdout, cfg, c)
		printSweep(os.Stdout, rep.sweep, cfg.gangSize, cfg.runFor)
		d.cpu.print(os.Stdout)
	}
	return err
}

// parseLevels reads --levels: backlog depths, each at most 1,000 (one
// namespace, where Muster creates at most 1,000 PodGroups from pods), in
// strictly rising order.
func parseLevels(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		var n int
		if _, err := fmt.Sscan(strings.TrimSpace(f), &n); err != nil || n < 0 || n > 1000 {
			return nil, fmt.Errorf("--levels: %q is not a backlog depth from 0 to 1000", f)
		}
		if len(out) > 0 && n <= out[len(out)-1] {
			return nil, fmt.Errorf("--levels: %d comes after %d: each level is deeper than the last", n, out[len(out)-1])
		}
		out = append(out, n)
	}
	return out, nil
}

// parseRates reads --sweep-rates: positive gangs per second.
func parseRates(s string) ([]float64, error) {
	var out []float64
	for f := range strings.SplitSeq(s, ",") {
		var v float64
		if _, err := fmt.Sscan(strings.TrimSpace(f), &v); err != nil || v <= 0 {
			return nil, fmt.Errorf("--sweep-rates: %q is not a positive rate", f)
		}
		out = append(out, v)
	}
	return out, nil
}

// logf prints a progress line on stderr, so the table on stdout stays clean.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}
