package main

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// idle is the idle-backlog phase (issue 36): gangs that would fit the
// idle cluster wait behind a filler that holds most of every node, and
// nothing changes but the nodes' heartbeats. It measures what the waiting
// costs muster-apiserver.
type idle struct {
	gangs, nodes int
	window       time.Duration
	// cpu is muster-apiserver's CPU time over window.
	cpu time.Duration
}

// share is the share of one core muster-apiserver used.
func (i *idle) share() float64 { return i.cpu.Seconds() / i.window.Seconds() }

// The filler holds fillerShare of every node's cpu, and each pod of a
// waiting gang asks for backlogShare: a gang fits an idle node set, and
// none fits now.
const (
	fillerShare  = 0.75
	backlogShare = 0.5
	// idleSettle lets the cycles that the backlog's creation started end
	// before the window opens.
	idleSettle = 20 * time.Second
)

// measureIdle runs the idle-backlog phase: one filler pod per node, then
// cfg.idleGangs gangs of cfg.gangSize, then muster-apiserver's CPU over
// cfg.idleWindow once they settle. It deletes the namespace's pods after.
func (d *driver) measureIdle(ctx context.Context) (*idle, error) {
	const ns = "perf-idle"
	if err := d.createNamespace(ctx, ns); err != nil {
		return nil, err
	}
	nodes, cpu := d.cfg.nodes, resource.MustParse(d.cfg.nodeCPU)
	share := func(f float64) resource.Quantity {
		return *resource.NewMilliQuantity(int64(float64(cpu.MilliValue())*f), resource.DecimalSI)
	}
	sized := func(p *corev1.Pod, q resource.Quantity) *corev1.Pod {
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = q
		return p
	}
	var filler []*corev1.Pod
	for i := range nodes {
		p := sized(d.labelledPod(ns, fmt.Sprintf("filler-%d", i), "filler", "1h"), share(fillerShare))
		p.Annotations[scheduling.MinCountAnnotation] = fmt.Sprint(nodes)
		filler = append(filler, p)
	}
	uids, _, err := d.createPods(ctx, filler)
	if err != nil {
		return nil, err
	}
	if err := d.waitPods(ctx, "the idle phase's filler to run", uids, 2*time.Minute, isUngated); err != nil {
		return nil, err
	}
	var backlog []*corev1.Pod
	for g := range d.cfg.idleGangs {
		for i := range d.cfg.gangSize {
			p := sized(d.labelledPod(ns, fmt.Sprintf("w%04d-%d", g, i), fmt.Sprintf("w%04d", g), "1h"), share(backlogShare))
			p.Annotations[scheduling.MinCountAnnotation] = fmt.Sprint(d.cfg.gangSize)
			backlog = append(backlog, p)
		}
	}
	if _, _, err := d.createPods(ctx, backlog); err != nil {
		return nil, err
	}
	if err := sleep(ctx, idleSettle); err != nil {
		return nil, err
	}
	d.cpu.mark("idle: filler and backlog created")
	before := d.c.CPUTimes()[musterProcess]
	if err := sleep(ctx, d.cfg.idleWindow); err != nil {
		return nil, err
	}
	used := d.c.CPUTimes()[musterProcess] - before
	d.cpu.mark("idle: backlog waits")
	if err := d.deleteAll(ctx, ns); err != nil {
		return nil, err
	}
	d.cpu.mark("idle: delete")
	return &idle{gangs: d.cfg.idleGangs, nodes: nodes, window: d.cfg.idleWindow, cpu: used}, nil
}

// musterProcess is muster-apiserver's process name in the cluster's CPU
// times.
const musterProcess = "muster-apiserver"
