package main

import (
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// podTimes are the moments the driver saw one pod reach each step.
type podTimes struct {
	created  time.Time // the driver's create call returned
	ungated  time.Time // no scheduling gate left
	bound    time.Time // spec.nodeName set
	running  time.Time // phase Running
	finished time.Time // phase Succeeded or Failed
	freed    time.Time // none of the recorder's finalizers left
	phase    corev1.PodPhase
}

// recorder keeps podTimes for every pod it is told about, from a pod
// informer's events. Event time is the driver's watch time: it lags the API
// server by the watch's delivery, the same for Muster and for the baseline.
type recorder struct {
	finalizers []string

	mu   sync.Mutex
	pods map[types.UID]*podTimes
}

func newRecorder(finalizers ...string) *recorder {
	return &recorder{finalizers: finalizers, pods: map[types.UID]*podTimes{}}
}

// handler returns the informer's event handler.
func (r *recorder) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { r.observe(obj) },
		UpdateFunc: func(_, obj any) { r.observe(obj) },
	}
}

func (r *recorder) created(uid types.UID, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entry(uid).created = at
}

func (r *recorder) entry(uid types.UID) *podTimes {
	t, ok := r.pods[uid]
	if !ok {
		t = &podTimes{}
		r.pods[uid] = t
	}
	return t
}

func (r *recorder) observe(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.entry(pod.UID)
	if t.ungated.IsZero() && len(pod.Spec.SchedulingGates) == 0 {
		t.ungated = now
	}
	if t.bound.IsZero() && pod.Spec.NodeName != "" {
		t.bound = now
	}
	if t.running.IsZero() && pod.Status.Phase == corev1.PodRunning {
		t.running = now
	}
	if t.finished.IsZero() && scheduling.IsTerminal(pod) {
		t.finished = now
		t.phase = pod.Status.Phase
	}
	if t.freed.IsZero() && !slices.ContainsFunc(pod.Finalizers, func(f string) bool { return slices.Contains(r.finalizers, f) }) {
		t.freed = now
	}
}

// snapshot copies the times of the given pods.
func (r *recorder) snapshot(uids []types.UID) []podTimes {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]podTimes, 0, len(uids))
	for _, uid := range uids {
		if t, ok := r.pods[uid]; ok {
			out = append(out, *t)
		} else {
			out = append(out, podTimes{})
		}
	}
	return out
}

// count returns how many of the pods satisfy done.
func (r *recorder) count(uids []types.UID, done func(podTimes) bool) int {
	n := 0
	for _, t := range r.snapshot(uids) {
		if done(t) {
			n++
		}
	}
	return n
}
