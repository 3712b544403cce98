package capacity

import (
	"fmt"
	"maps"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	schedfw "k8s.io/kubernetes/pkg/scheduler/framework"
)

// antiKeys are label keys that required anti-affinity terms select on. A
// key too many only keeps apart pods that could have shared a PreFilter; a
// key missing would let a pod share one that its labels make wrong. So the
// set only grows: the tracker adds the keys of every pod it holds, and
// each snapshot starts from a copy and adds the pods placed on it.
type antiKeys struct {
	keys map[string]bool
	// all: some term selects on no key, and every label matters.
	all bool
}

// add adds the keys of pi's required anti-affinity terms.
func (a *antiKeys) add(pi fwk.PodInfo) {
	if a.all {
		return
	}
	for _, term := range pi.GetRequiredAntiAffinityTerms() {
		reqs, selectable := term.Selector.Requirements()
		if !selectable || len(reqs) == 0 {
			a.all, a.keys = true, nil
			return
		}
		if a.keys == nil {
			a.keys = map[string]bool{}
		}
		for _, r := range reqs {
			a.keys[r.Key()] = true
		}
		if len(a.keys) > maxAntiKeys {
			// Tenants choose the keys: past the bound, every label
			// matters, which is right and only slower.
			a.all, a.keys = true, nil
			return
		}
	}
}

// maxAntiKeys bounds the keys kept, which only grow.
const maxAntiKeys = 1024

func (a antiKeys) clone() antiKeys {
	return antiKeys{keys: maps.Clone(a.keys), all: a.all}
}

// antiAffinityKeys are the label keys that running pods' required
// anti-affinity terms select on, and those of pods placed in the cycle;
// nil if any term selects on no key (everything), and every label matters.
func (p *placer) antiAffinityKeys() map[string]bool {
	a := &p.s.anti
	if a.all {
		return nil
	}
	if a.keys == nil {
		a.keys = map[string]bool{}
	}
	return a.keys
}

// noteAntiAffinity keeps antiAffinityKeys whole once pod, placed on the
// snapshot, has required anti-affinity terms.
func (s *Snapshot) noteAntiAffinity(pod *corev1.Pod) {
	if a := pod.Spec.Affinity; a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) == 0 {
		return
	}
	if pi, err := schedfw.NewPodInfo(pod); err == nil {
		s.anti.add(pi)
	} else {
		s.anti.all, s.anti.keys = true, nil
	}
}

// relevantLabels is a pod's namespace and its labels under keys, as a map
// key (all labels when keys is nil).
func relevantLabels(p *corev1.Pod, keys map[string]bool) string {
	names := make([]string, 0, len(p.Labels))
	for k := range p.Labels {
		if keys == nil || keys[k] {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString(p.Namespace)
	for _, k := range names {
		fmt.Fprintf(&b, "\x00%s=%s", k, p.Labels[k])
	}
	return b.String()
}
