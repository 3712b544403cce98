package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// groupPods are the pods the driver created, by namespace/name of their
// PodGroup.
type groupPods map[string][]types.UID

// report is everything the table shows.
type report struct {
	base    *baseline
	burst   *burst
	lat     *latency
	idle    *idle
	sweep   []sweepPoint
	whatIf  *whatIfResult
	calls   apiCalls
	pods    int // labelled pods Muster handled while calls were counted
	exact   exactness
	retries int64
	elapsed time.Duration
}

// exactness is the end-of-run audit.
type exactness struct {
	groups, wrong   int
	firstWrong      string
	finalizersLeft  int
	terminatingLeft int
}

func (e exactness) ok() bool { return e.wrong == 0 && e.finalizersLeft == 0 && e.terminatingLeft == 0 }

// run runs the phases in order: baseline, burst, latency, idle backlog,
// rate sweep, audit.
func (d *driver) run(ctx context.Context) (*report, error) {
	began := time.Now()
	rep := &report{}
	var err error
	if rep.base, err = d.measureBaseline(ctx); err != nil {
		return nil, err
	}
	before, err := d.scrapeCalls(ctx)
	if err != nil {
		return nil, err
	}
	burstGroups, latGroups := groupPods{}, groupPods{}
	if rep.burst, burstGroups, err = d.measureBurst(ctx, rep.base); err != nil {
		return nil, err
	}
	if rep.lat, latGroups, err = d.measureLatency(ctx); err != nil {
		return nil, err
	}
	after, err := d.scrapeCalls(ctx)
	if err != nil {
		return nil, err
	}
	rep.calls = after.Minus(before)
	rep.pods = rep.burst.pods + rep.lat.pods
	if d.cfg.idleGangs > 0 {
		if rep.idle, err = d.measureIdle(ctx); err != nil {
			return nil, err
		}
	}
	sweepGroups := groupPods{}
	if rep.sweep, sweepGroups, err = d.measureSweep(ctx); err != nil {
		return nil, err
	}
	whatIfGroups := groupPods{}
	if d.cfg.whatIfNodes > 0 {
		if rep.whatIf, whatIfGroups, err = d.measureWhatIf(ctx); err != nil {
			return nil, err
		}
	}
	if rep.exact, err = d.audit(ctx, burstGroups, latGroups, sweepGroups, whatIfGroups); err != nil {
		return nil, err
	}
	rep.elapsed = time.Since(began)
	rep.retries = d.retries.Load()
	if !rep.exact.ok() {
		return rep, fmt.Errorf("counts are not exact: %d of %d groups wrong (first: %s), %d pods keep Muster's finalizer, %d stuck Terminating",
			rep.exact.wrong, rep.exact.groups, rep.exact.firstWrong, rep.exact.finalizersLeft, rep.exact.terminatingLeft)
	}
	return rep, nil
}

// audit checks, once the controller has settled, that every group's
// succeeded and failed equal what its pods did, and that no pod keeps
// Muster's finalizer or is stuck Terminating.
func (d *driver) audit(ctx context.Context, sets ...groupPods) (exactness, error) {
	want := map[string][2]int32{}
	for _, set := range sets {
		for key, uids := range set {
			var w [2]int32
			for _, t := range d.rec.snapshot(uids) {
				switch t.phase {
				case corev1.PodSucceeded:
					w[0]++
				case corev1.PodFailed:
					w[1]++
				}
			}
			want[key] = w
		}
	}
	var e exactness
	err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		e = exactness{groups: len(want)}
		for _, ns := range []string{burstNS, rateNS, sweepNS} {
			list, err := d.muster.SchedulingV1alpha1().PodGroups(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, nil
			}
			for _, pg := range list.Items {
				w, ok := want[ns+"/"+pg.Name]
				if !ok {
					continue
				}
				if got := [2]int32{pg.Status.Succeeded, pg.Status.Failed}; got != w {
					if e.wrong == 0 {
						e.firstWrong = fmt.Sprintf("%s/%s succeeded/failed %d/%d, pods did %d/%d", ns, pg.Name, got[0], got[1], w[0], w[1])
					}
					e.wrong++
				}
			}
		}
		pods, err := d.kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, p := range pods.Items {
			if scheduling.HasTrackingFinalizer(&p) {
				e.finalizersLeft++
			}
			if p.DeletionTimestamp != nil {
				e.terminatingLeft++
			}
		}
		return e.ok(), nil
	})
	if err != nil && !wait.Interrupted(err) {
		return e, err
	}
	return e, nil
}
