package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/jsonpatch"
)

// burst holds what Muster did with cfg.burstPods pods arriving at once.
type burst struct {
	pods        int
	createRate  float64       // labelled pods created per second
	ungateRate  float64       // pods Muster released per second, from one backlog
	accountRate float64       // finished pods Muster accounted per second
	accountTime time.Duration // from the first pod finished to the last finalizer removed
	finishSpan  time.Duration // from the first pod finished to the last: how fast kwok ended them
	lateStarts  int           // pods that were not Running yet when all were to finish
}

// measureBurst creates cfg.burstPods labelled pods in gangs whose PodGroups
// hold a group gate, so nothing is released while the create rate is
// timed; then lifts every group gate at once, so Muster releases one
// backlog as fast as it can; the pods all finish at one instant, so Muster
// accounts one backlog too.
func (d *driver) measureBurst(ctx context.Context, b *baseline) (*burst, groupPods, error) {
	n, g := d.cfg.burstPods, d.cfg.gangSize
	gangs := n / g
	logf("burst: creating %d held PodGroups", gangs)
	if err := d.parallel(ctx, gangs, func(ctx context.Context, i int) error {
		return d.createGroup(ctx, burstNS, gangName(i), g, holdGate)
	}); err != nil {
		return nil, nil, err
	}

	// Every pod finishes at one instant, late enough that all are running
	// by then: twice what the baseline took to create, release and start
	// as many pods, and a margin.
	createEstimate := time.Duration(float64(n) / b.createRate * float64(time.Second))
	finishAt := time.Now().Add(2*(createEstimate+b.runningSpan) + 15*time.Second).Truncate(time.Second)
	d.cpu.mark("burst: create groups")
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = d.labelledPod(burstNS, fmt.Sprintf("%s-%d", gangName(i/g), i%g), gangName(i/g), finishAt.UTC().Format(time.RFC3339))
	}
	logf("burst: creating %d labelled pods in %d gangs of %d; they finish at %s", n, gangs, g, finishAt.Format("15:04:05"))
	uids, took, err := d.createPods(ctx, pods)
	if err != nil {
		return nil, nil, err
	}
	r := &burst{pods: n, createRate: rate(n, took)}
	d.cpu.mark("burst: create labelled pods")

	logf("burst: lifting %d group gates", gangs)
	start := time.Now()
	lift := jsonpatch.Marshal([]jsonpatch.Op{
		jsonpatch.Test("/spec/schedulingGates/0/name", holdGate),
		jsonpatch.Remove("/spec/schedulingGates/0"),
	})
	if err := d.parallel(ctx, gangs, func(ctx context.Context, i int) error {
		_, err := d.muster.SchedulingV1alpha1().PodGroups(burstNS).Patch(ctx, gangName(i), types.JSONPatchType, lift, metav1.PatchOptions{})
		return err
	}); err != nil {
		return nil, nil, fmt.Errorf("lifting group gates: %w", err)
	}
	if err := d.waitPods(ctx, "released (burst)", uids, 10*time.Minute, isUngated); err != nil {
		return nil, nil, err
	}
	times := d.rec.snapshot(uids)
	ungated := make([]time.Time, len(times))
	for i, t := range times {
		ungated[i] = t.ungated
	}
	_, lastUngated := span(ungated)
	r.ungateRate = rate(n, lastUngated.Sub(start))
	d.cpu.mark("burst: release")

	// Up to the instant every pod finishes, the pods bind and run.
	if err := sleep(ctx, time.Until(finishAt)); err != nil {
		return nil, nil, err
	}
	d.cpu.mark("burst: pods bind and run")
	if err := d.waitPods(ctx, "accounted (burst)", uids, 15*time.Minute, isAccounted); err != nil {
		return nil, nil, err
	}
	times = d.rec.snapshot(uids)
	finished, freed := make([]time.Time, len(times)), make([]time.Time, len(times))
	for i, t := range times {
		finished[i], freed[i] = t.finished, t.freed
		if t.running.IsZero() || t.running.After(finishAt) {
			r.lateStarts++
		}
	}
	firstFinished, lastFinished := span(finished)
	_, lastFreed := span(freed)
	r.accountTime = lastFreed.Sub(firstFinished)
	r.finishSpan = lastFinished.Sub(firstFinished)
	r.accountRate = rate(n, r.accountTime)
	d.cpu.mark("burst: pods finish, accounting")
	logf("burst: create %.0f/s, release %.0f/s, account %.0f/s", r.createRate, r.ungateRate, r.accountRate)
	groups := groupPods{}
	for i, uid := range uids {
		key := burstNS + "/" + gangName(i/g)
		groups[key] = append(groups[key], uid)
	}
	err = d.deleteAll(ctx, burstNS)
	d.cpu.mark("burst: delete pods")
	return r, groups, err
}

// gangName names gang i.
func gangName(i int) string { return fmt.Sprintf("g%05d", i) }

// createGroup creates a gang PodGroup of minCount with the given group gates.
func (d *driver) createGroup(ctx context.Context, ns, name string, minCount int, gates ...string) error {
	pg := &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.PodGroupSpec{SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{
			Gang: &v1alpha1.GangSchedulingPolicy{MinCount: int32(minCount)},
		}},
	}
	for _, g := range gates {
		pg.Spec.SchedulingGates = append(pg.Spec.SchedulingGates, v1alpha1.PodGroupSchedulingGate{Name: g})
	}
	if _, err := d.muster.SchedulingV1alpha1().PodGroups(ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating PodGroup %s/%s: %w", ns, name, err)
	}
	return nil
}
