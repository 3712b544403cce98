package abuse

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/test/cluster"
)

// What the suite holds Muster to while mallory attacks.
const (
	// timedGangs is how many gangs the well-behaved tenant times in each
	// phase; the median of each phase is compared.
	timedGangs = 21
	// maxSlowdown bounds the well-behaved tenant's median release latency
	// under attack, as a multiple of the quiet run's.
	maxSlowdown = 2
	// maxMusterRSS bounds muster-apiserver's resident memory at its peak,
	// the whole run included: the chart's memory limit. Its controller
	// admits every tenant's gangs.
	maxMusterRSS = 512 << 20
	// maxWebhookRSS bounds the webhook's process (the chart's
	// muster-webhook, --webhook-only) the same way, at the chart's limit:
	// it serves every labelled pod create in the cluster.
	maxWebhookRSS = 256 << 20
	// killRSS is where the suite kills muster-apiserver to protect the
	// machine (the old code reached 20 GiB on one attack); the run fails.
	killRSS = 4 << 30
	// settle is how long the attacks run before the timed gangs start, so
	// that the controller meets them in their steady state.
	settle = 10 * time.Second
)

// TestAbuse runs the well-behaved tenant's gangs on a quiet cluster, then
// again while mallory tries every attack at once, and checks what the
// well-behaved tenant is owed.
func TestAbuse(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	good := wellBehaved(t, ctx)
	bad := mallory(t, ctx)
	rel, err := watchReleases(ctx, good.ns)
	if err != nil {
		t.Fatal(err)
	}

	quiet := runGangs(ctx, good, rel, "quiet", timedGangs)
	_, quietPeak := memoryOf(musterProcess)
	_, quietWebhookPeak := memoryOf(webhookProcess)

	sampler := sampleMemory(ctx)
	list := selected(t)
	outcomes := launch(ctx, bad, list)
	time.Sleep(settle)
	loaded := runGangs(ctx, good, rel, "attacked", timedGangs)
	for i := range outcomes {
		if o := &outcomes[i]; o.stop != nil {
			o.said += "; meanwhile " + o.stop()
		}
	}
	peak, webhookPeak := sampler()

	// What the attacks must not have caused.
	for i, a := range list {
		o := &outcomes[i]
		if o.err == nil && a.verify != nil {
			o.err = a.verify(ctx, bad)
		}
		if o.err != nil {
			t.Errorf("item %s, %s: %v", a.item, a.name, o.err)
		}
	}
	for _, r := range append(append([]gangResult(nil), quiet...), loaded...) {
		for _, err := range r.failedCreates {
			t.Errorf("well-behaved gang %s: %v", r.group, err)
		}
	}
	quietMedian, loadedMedian := median(latencies(quiet)), median(latencies(loaded))
	bound := maxSlowdown * quietMedian
	if loadedMedian > bound {
		t.Errorf("the well-behaved tenant's median release latency rose from %v quiet to %v under attack: more than %d× (bound %v)",
			quietMedian, loadedMedian, maxSlowdown, bound)
	}
	if peak > maxMusterRSS {
		t.Errorf("muster-apiserver's resident memory peaked at %d MiB under attack: more than the bound, %d MiB", peak>>20, maxMusterRSS>>20)
	}
	if webhookPeak > maxWebhookRSS {
		t.Errorf("the webhook's resident memory peaked at %d MiB under attack: more than the bound, %d MiB", webhookPeak>>20, maxWebhookRSS>>20)
	}
	countErrs := exactCounts(ctx, good, append(append([]gangResult(nil), quiet...), loaded...))
	for _, err := range countErrs {
		t.Error(err)
	}
	stuck := deleteEverything(ctx, good, bad, tenant{ns: bad.loose})
	if stuck != "" {
		t.Errorf("left stuck once every pod was deleted: %s", stuck)
	}

	report(t, list, outcomes, quiet, loaded, memoryPeaks{quietPeak, peak, quietWebhookPeak, webhookPeak}, len(countErrs), stuck)
}

// selected are the attacks -abuse.skip leaves, for finding which one costs
// what; skipping any is a diagnosis, and fails the run.
func selected(t *testing.T) []attack {
	all := attacks()
	if *skipFlag == "" {
		return all
	}
	re, err := regexp.Compile(*skipFlag)
	if err != nil {
		t.Fatalf("-abuse.skip: %v", err)
	}
	var out []attack
	for _, a := range all {
		if re.MatchString(a.name) {
			continue
		}
		out = append(out, a)
	}
	t.Errorf("-abuse.skip=%q: %d of %d attacks run; a run that skips any is a diagnosis, not a pass", *skipFlag, len(out), len(all))
	return out
}

// outcome is what one attack met.
type outcome struct {
	said string
	stop func() string
	err  error
}

// launch starts every attack at once, those marked last after the others,
// and waits until each has been tried.
func launch(ctx context.Context, m tenant, list []attack) []outcome {
	out := make([]outcome, len(list))
	for _, last := range []bool{false, true} {
		var wg sync.WaitGroup
		for i, a := range list {
			if a.last != last {
				continue
			}
			wg.Go(func() {
				said, stop, err := a.launch(ctx, m)
				out[i] = outcome{said: said, stop: stop, err: err}
			})
		}
		wg.Wait()
	}
	return out
}

// The names of the harness's processes of the chart's two Deployments
// (a rolled one's name goes on with "-gen<n>").
const (
	musterProcess  = "muster-apiserver"
	webhookProcess = cluster.WebhookDeployment
)

// memoryOf is the resident memory of the processes whose names start with
// prefix, now and at their highest peak.
func memoryOf(prefix string) (now, peak int64) {
	n, p := env.Memory()
	for name, v := range n {
		if strings.HasPrefix(name, prefix) {
			now += v
			peak = max(peak, p[name])
		}
	}
	return now, peak
}

// memoryPeaks are the two Deployments' peaks, quiet and under attack.
type memoryPeaks struct {
	quiet, attacked, webhookQuiet, webhookAttacked int64
}

// sampleMemory samples muster-apiserver's and the webhook's memory every
// 500ms until the returned func is called, which returns the highest peak
// seen of each. The kernel's high-water mark catches what falls between
// samples; sampling catches a restarted process's.
func sampleMemory(ctx context.Context) func() (muster, webhook int64) {
	var mu sync.Mutex
	var highest, highestWebhook int64
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			now, p := memoryOf(musterProcess)
			wNow, wp := memoryOf(webhookProcess)
			// Far past the bound, the machine itself is at risk, and the
			// run has failed already: stop the process before the kernel
			// stops something else.
			if now > killRSS {
				env.KillMuster()
			}
			if wNow > killRSS {
				env.KillWebhook()
			}
			mu.Lock()
			highest = max(highest, p)
			highestWebhook = max(highestWebhook, wp)
			mu.Unlock()
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() (int64, int64) {
		close(done)
		<-stopped
		_, p := memoryOf(musterProcess)
		_, wp := memoryOf(webhookProcess)
		mu.Lock()
		defer mu.Unlock()
		return max(highest, p), max(highestWebhook, wp)
	}
}

// exactCounts checks that each of the well-behaved tenant's groups counts
// its pods exactly: every pod succeeded, once.
func exactCounts(ctx context.Context, good tenant, runs []gangResult) []error {
	var errs []error
	for _, r := range runs {
		if len(r.failedCreates) > 0 {
			continue
		}
		var got string
		err := waitUntil(ctx, time.Minute, func(ctx context.Context) (bool, error) {
			pg, err := muster.SchedulingV1alpha1().PodGroups(good.ns).Get(ctx, r.group, metav1.GetOptions{})
			if err != nil {
				got = err.Error()
				return false, nil
			}
			got = fmt.Sprintf("succeeded %d, failed %d", pg.Status.Succeeded, pg.Status.Failed)
			return pg.Status.Succeeded == gangSize && pg.Status.Failed == 0, nil
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("well-behaved group %s: %s, want succeeded %d, failed 0", r.group, got, gangSize))
		}
	}
	return errs
}

// deleteEverything deletes every pod of both tenants and says what is left
// a minute later: a pod left is one stuck on a finalizer.
func deleteEverything(ctx context.Context, tenants ...tenant) string {
	for _, tn := range tenants {
		_ = kube.CoreV1().Pods(tn.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	}
	var left []string
	_ = waitUntil(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		left = left[:0]
		for _, tn := range tenants {
			pods, err := kube.CoreV1().Pods(tn.ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, nil
			}
			for _, p := range pods.Items {
				left = append(left, fmt.Sprintf("%s/%s (tracking finalizer %v)", p.Namespace, p.Name, scheduling.HasTrackingFinalizer(&p)))
			}
		}
		return len(left) == 0, nil
	})
	if len(left) > 5 {
		return fmt.Sprintf("%d pods, e.g. %s", len(left), strings.Join(left[:5], ", "))
	}
	return strings.Join(left, ", ")
}

// report prints the suite's figures.
func report(t *testing.T, list []attack, outcomes []outcome, quiet, loaded []gangResult, mem memoryPeaks, countErrs int, stuck string) {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "ITEM\tATTACK\tTHE CLUSTER SAID\tRESULT\n")
	for i, a := range list {
		res := "ok"
		if outcomes[i].err != nil {
			res = "FAIL"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", a.item, a.name, oneLine(outcomes[i].said), res)
	}
	_ = w.Flush()
	ql, ll := latencies(quiet), latencies(loaded)
	fmt.Fprintf(&b, "\nwell-behaved release latency (gang of %d × %s cpu), %d gangs a phase:\n", gangSize, gangCPU, timedGangs)
	fmt.Fprintf(&b, "  quiet:    median %v, all %v\n", median(ql), ql)
	fmt.Fprintf(&b, "  attacked: median %v, all %v\n", median(ll), ll)
	fmt.Fprintf(&b, "  attacked/quiet medians %.2f×; bound %d×, %v\n", ratio(median(ll), median(ql)), maxSlowdown, maxSlowdown*median(ql))
	failed := 0
	for _, r := range append(append([]gangResult(nil), quiet...), loaded...) {
		failed += len(r.failedCreates)
	}
	fmt.Fprintf(&b, "well-behaved labelled pod creates refused: %d of %d\n", failed, 2*timedGangs*gangSize)
	fmt.Fprintf(&b, "muster-apiserver peak resident memory: %d MiB quiet, %d MiB under attack (bound %d MiB)\n", mem.quiet>>20, mem.attacked>>20, maxMusterRSS>>20)
	fmt.Fprintf(&b, "muster-webhook peak resident memory: %d MiB quiet, %d MiB under attack (bound %d MiB)\n", mem.webhookQuiet>>20, mem.webhookAttacked>>20, maxWebhookRSS>>20)
	fmt.Fprintf(&b, "well-behaved groups with wrong counts: %d\n", countErrs)
	if stuck == "" {
		stuck = "none"
	}
	fmt.Fprintf(&b, "pods left a minute after every pod was deleted: %s\n", stuck)
	// Last, so that a log's tail names what failed.
	for i, a := range list {
		if err := outcomes[i].err; err != nil {
			fmt.Fprintf(&b, "FAILED item %s, %s: %v\n", a.item, a.name, err)
		}
	}
	t.Log("\n" + b.String())
}

func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 240 {
		s = s[:240] + "..."
	}
	return s
}
