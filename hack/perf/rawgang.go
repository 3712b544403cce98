package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/pkg/jsonpatch"
)

// runRawGang is the raw pipeline's gang, the yardstick of a gang through
// Muster: the same pods, unlabelled, created at once with one scheduling
// gate of the driver's own, whose gates the driver removes itself, at once,
// as soon as the last of them is created; each runs for runFor. No Muster is in the path: no
// webhook, no PodGroup, no admission cycle. r gets the pods and the instant
// the last was created, as runGangIn gives them.
func (d *driver) runRawGang(ctx context.Context, ns, name, runFor string, r *gangRun) error {
	g := d.cfg.gangSize
	pods := make([]*corev1.Pod, g)
	for j := range pods {
		p := newPod(ns, fmt.Sprintf("%s-%d", name, j), "", runFor)
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: holdGate}}
		pods[j] = p
	}
	r.uids = make([]types.UID, g)
	if err := eachAtOnce(g, func(j int) error {
		uids, _, err := d.createPods(ctx, pods[j:j+1])
		if err != nil {
			return err
		}
		r.uids[j] = uids[0]
		return nil
	}); err != nil {
		return err
	}
	r.lastCreated = time.Now()
	return eachAtOnce(g, func(j int) error {
		ops := jsonpatch.RemoveItem(r.uids[j], "/spec/schedulingGates", 0, "/name", holdGate)
		_, err := d.kube.CoreV1().Pods(ns).Patch(ctx, pods[j].Name, types.JSONPatchType, jsonpatch.Marshal(ops), metav1.PatchOptions{})
		if err != nil {
			return fmt.Errorf("removing the gate of pod %s/%s: %w", ns, pods[j].Name, err)
		}
		return nil
	})
}

// eachAtOnce runs fn(0) … fn(n-1) each in its own goroutine, as a
// framework's controller creates a gang's pods, and returns the first error.
func eachAtOnce(n int, fn func(j int) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for j := range n {
		wg.Go(func() {
			if err := fn(j); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return first
}
