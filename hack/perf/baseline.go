package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/pkg/jsonpatch"
)

// baseline holds the raw rates of the cluster with no Muster in the path.
type baseline struct {
	pods          int
	createRate    float64       // pods created per second
	ungateRate    float64       // gates removed per second
	finalizerRate float64       // finalizers removed per second
	finalizerTime time.Duration // to remove all the pods' finalizers
	runningSpan   time.Duration // from the first gate removal to the last pod Running
}

// measureBaseline creates cfg.burstPods unlabelled pods shaped as Muster's
// (one scheduling gate, one finalizer), removes every gate, lets them run
// and finish, and removes every finalizer, each step as fast as the driver's
// concurrency allows and timed from the first request to the last answer:
// the same patches Muster sends, from a client that pays no webhook.
func (d *driver) measureBaseline(ctx context.Context) (*baseline, error) {
	n := d.cfg.burstPods
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		p := newPod(rawNamespace, fmt.Sprintf("raw-%05d", i), "", "1s")
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: holdGate}}
		p.Finalizers = []string{holdFinalizer}
		pods[i] = p
	}
	logf("baseline: creating %d unlabelled pods", n)
	uids, took, err := d.createPods(ctx, pods)
	if err != nil {
		return nil, err
	}
	b := &baseline{pods: n, createRate: rate(n, took)}
	d.cpu.mark("raw: create")

	logf("baseline: removing %d gates", n)
	start := time.Now()
	if took, err = d.patchAll(ctx, rawNamespace, pods, uids, func(i int) []jsonpatch.Op {
		return jsonpatch.RemoveItem(uids[i], "/spec/schedulingGates", 0, "/name", holdGate)
	}); err != nil {
		return nil, err
	}
	b.ungateRate = rate(n, took)
	d.cpu.mark("raw: remove gates")
	if err := d.waitPods(ctx, "finished (baseline)", uids, 10*time.Minute, isFinished); err != nil {
		return nil, err
	}
	times := d.rec.snapshot(uids)
	running := make([]time.Time, len(times))
	for i, t := range times {
		running[i] = t.running
	}
	_, lastRunning := span(running)
	b.runningSpan = lastRunning.Sub(start)

	d.cpu.mark("raw: pods bind, run, finish")
	logf("baseline: removing %d finalizers", n)
	if took, err = d.patchAll(ctx, rawNamespace, pods, uids, func(i int) []jsonpatch.Op {
		return jsonpatch.RemoveItem(uids[i], "/metadata/finalizers", 0, "", holdFinalizer)
	}); err != nil {
		return nil, err
	}
	b.finalizerRate, b.finalizerTime = rate(n, took), took
	d.cpu.mark("raw: remove finalizers")
	logf("baseline: create %.0f/s, remove a gate %.0f/s, remove a finalizer %.0f/s", b.createRate, b.ungateRate, b.finalizerRate)
	err = d.deleteAll(ctx, rawNamespace)
	d.cpu.mark("raw: delete pods")
	return b, err
}

// patchAll sends one JSON patch to each pod and returns how long all took.
func (d *driver) patchAll(ctx context.Context, ns string, pods []*corev1.Pod, uids []types.UID, ops func(i int) []jsonpatch.Op) (time.Duration, error) {
	start := time.Now()
	err := d.parallel(ctx, len(pods), func(ctx context.Context, i int) error {
		_, err := d.kube.CoreV1().Pods(ns).Patch(ctx, pods[i].Name, types.JSONPatchType, jsonpatch.Marshal(ops(i)), metav1.PatchOptions{})
		if err != nil {
			return fmt.Errorf("patching pod %s: %w", pods[i].Name, err)
		}
		return nil
	})
	return time.Since(start), err
}
