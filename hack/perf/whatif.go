package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/test/cluster"
)

// The what-if phase (issue 37): how long a WhatIfReview for a gang of
// --gang-size takes through the API, kube-apiserver's aggregator included,
// on --whatif-nodes nodes, while the latency phase's load runs again:
// gangs offered at --rate, each created, admitted, run and accounted.
// The nodes added for it carry a taint that only the what-if's pods
// tolerate, so the load lands where it did in the latency phase and the
// what-if weighs every node.

const (
	whatIfNS    = "perf-whatif"
	whatIfTaint = "perf.muster.dev/whatif"
	// whatIfPerSec is below the per-caller limit (--whatif-qps 5), which
	// a probe past it would measure instead of the answer.
	whatIfPerSec = 4
)

type whatIfResult struct {
	nodes   int
	gangs   int
	answers []time.Duration
	// gets are GETs of a PodGroup through the same path, one beside each
	// what-if: what any request through kube-apiserver to Muster took
	// meanwhile.
	gets []time.Duration
	// inMuster is the p50 and p99 of muster_whatif_duration_seconds over
	// the phase: the time in Muster alone, as the bucket bounds give it.
	inMuster [2]float64
	// admitted counts the answers that said the gang would run now: on
	// idle nodes of its own, every answer should.
	admitted int
	errors   int
	firstErr error
}

func (d *driver) measureWhatIf(ctx context.Context) (*whatIfResult, groupPods, error) {
	res := &whatIfResult{nodes: d.cfg.nodes, gangs: d.cfg.gangs}
	if add := d.cfg.whatIfNodes - d.cfg.nodes; add > 0 {
		logf("what-if: adding %d nodes", add)
		if _, err := d.c.AddNodes(ctx, cluster.NodeSpec{Prefix: "whatif", Count: add, CPU: "64", Memory: "256Gi",
			Taints: []corev1.Taint{{Key: whatIfTaint, Value: "true", Effect: corev1.TaintEffectNoSchedule}}}); err != nil {
			return nil, nil, err
		}
		res.nodes = d.cfg.whatIfNodes
	}
	if err := d.createNamespace(ctx, whatIfNS); err != nil {
		return nil, nil, err
	}
	review, err := d.whatIfReview()
	if err != nil {
		return nil, nil, err
	}
	// The API's view of the nodes lags AddNodes by a watch event: let the
	// leader see them before measuring on them.
	if err := sleep(ctx, 5*time.Second); err != nil {
		return nil, nil, err
	}

	logf("what-if: %d gangs offered at %.1f/s, a what-if for a gang of %d on %d nodes %d times a second meanwhile", d.cfg.gangs, d.cfg.rate, d.cfg.gangSize, res.nodes, whatIfPerSec)
	var runs []gangRun
	offered := make(chan error, 1)
	go func() {
		var err error
		runs, _, err = d.offer(ctx, d.cfg.gangs, d.cfg.rate, "w", func(ctx context.Context, name string, r *gangRun) error {
			return d.runGangIn(ctx, whatIfNS, name, d.cfg.runFor.String(), r)
		})
		offered <- err
	}()
	before, err := d.scrapeWhatIf(ctx)
	if err != nil {
		return nil, nil, err
	}
	tick := time.NewTicker(time.Second / whatIfPerSec)
	defer tick.Stop()
	// The load lasts until its last pod is accounted: the what-ifs go on
	// until then. accounted stays nil, and blocks, until every gang is
	// offered.
	var accounted chan error
	groups := groupPods{}
probe:
	for {
		select {
		case err := <-offered:
			if err != nil {
				return nil, nil, err
			}
			var uids []types.UID
			for i, r := range runs {
				uids = append(uids, r.uids...)
				groups[fmt.Sprintf("%s/w%03d", whatIfNS, i)] = r.uids
			}
			accounted = make(chan error, 1)
			go func() { accounted <- d.waitPods(ctx, "accounted (what-if)", uids, 10*time.Minute, isAccounted) }()
		case err := <-accounted:
			if err != nil {
				return nil, nil, err
			}
			break probe
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-tick.C:
			d.probeWhatIf(ctx, review, res)
		}
	}
	after, err := d.scrapeWhatIf(ctx)
	if err != nil {
		return nil, nil, err
	}
	res.inMuster = [2]float64{after.less(before).quantile(0.5), after.less(before).quantile(0.99)}
	d.cpu.mark(fmt.Sprintf("what-if: %d answers on %d nodes under load", len(res.answers), res.nodes))
	return res, groups, nil
}

// probeWhatIf asks the what-if once, and GETs a PodGroup through the same
// path beside it.
func (d *driver) probeWhatIf(ctx context.Context, review *v1alpha1.WhatIfReview, res *whatIfResult) {
	start := time.Now()
	r, err := d.muster.SchedulingV1alpha1().WhatIfReviews(whatIfNS).Create(ctx, review, metav1.CreateOptions{})
	took := time.Since(start)
	if err != nil {
		res.errors++
		if res.firstErr == nil {
			res.firstErr = err
		}
		return
	}
	res.answers = append(res.answers, took)
	if r.Status.Admitted {
		res.admitted++
	}
	start = time.Now()
	if _, err := d.muster.SchedulingV1alpha1().PodGroups(whatIfNS).Get(ctx, "probe", metav1.GetOptions{}); apierrors.IsNotFound(err) {
		res.gets = append(res.gets, time.Since(start))
	}
}

// whatIfReview asks about a gang of --gang-size pods of 8 CPU each, with
// its PodGroup, that only the nodes added for the phase take.
func (d *driver) whatIfReview() (*v1alpha1.WhatIfReview, error) {
	list := &corev1.List{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}}
	for j := range d.cfg.gangSize {
		p := newPod(whatIfNS, fmt.Sprintf("probe-%d", j), "probe", "1h")
		p.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}
		p.Spec.Tolerations = []corev1.Toleration{{Key: whatIfTaint, Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
		list.Items = append(list.Items, runtime.RawExtension{Object: p})
	}
	raw, err := json.Marshal(list)
	if err != nil {
		return nil, err
	}
	pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "probe"}, Spec: v1alpha1.PodGroupSpec{
		SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: int32(d.cfg.gangSize)}},
	}}
	return &v1alpha1.WhatIfReview{Spec: v1alpha1.WhatIfReviewSpec{Object: runtime.RawExtension{Raw: raw}, PodGroup: pg}}, nil
}

// histogram is a Prometheus histogram's cumulative buckets: upper bound to
// count.
type histogram map[float64]float64

// scrapeWhatIf reads muster_whatif_duration_seconds of the reviews the
// leader answered itself.
func (d *driver) scrapeWhatIf(ctx context.Context) (histogram, error) {
	body, err := d.scrapeMetrics(ctx)
	if err != nil {
		return nil, err
	}
	h := histogram{}
	const prefix = `muster_whatif_duration_seconds_bucket{answered="here",le="`
	for _, line := range strings.Split(string(body), "\n") {
		rest, ok := strings.CutPrefix(line, prefix)
		if !ok {
			continue
		}
		le, count, ok := strings.Cut(rest, `"} `)
		if !ok {
			continue
		}
		bound, err1 := strconv.ParseFloat(le, 64)
		n, err2 := strconv.ParseFloat(count, 64)
		if err1 == nil && err2 == nil {
			h[bound] = n
		}
	}
	return h, nil
}

// less is h with o's counts taken away.
func (h histogram) less(o histogram) histogram {
	out := histogram{}
	for b, n := range h {
		out[b] = n - o[b]
	}
	return out
}

// quantile is the upper bound of the bucket that holds the q-quantile, in
// seconds; +Inf past the last bound, 0 for no observations.
func (h histogram) quantile(q float64) float64 {
	bounds := slices.Sorted(maps.Keys(h))
	if len(bounds) == 0 || h[bounds[len(bounds)-1]] == 0 {
		return 0
	}
	total := h[bounds[len(bounds)-1]]
	for _, b := range bounds {
		if h[b] >= q*total {
			return b
		}
	}
	return bounds[len(bounds)-1]
}
