package capacity

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	schedfw "k8s.io/kubernetes/pkg/scheduler/framework"
)

// antiAffinityKeys are the label keys that running pods' required
// anti-affinity terms select on; nil if any term selects on no key
// (everything), and every label matters. They are found once per
// snapshot, from every node, and grow as pods with such terms are placed
// on it (noteAntiAffinity); pods that leave are not taken out. A key too
// many only keeps apart pods that could have shared a PreFilter; a key
// missing would let a pod share one that its labels make wrong.
func (p *placer) antiAffinityKeys() map[string]bool {
	s := p.s
	if s.antiAll {
		return nil
	}
	if s.antiKeys != nil {
		return s.antiKeys
	}
	nis, _ := nodeInfoLister{s.filters.lister}.HavePodsWithRequiredAntiAffinityList()
	s.antiKeys = map[string]bool{}
	for _, ni := range nis {
		for _, pi := range ni.GetPodsWithRequiredAntiAffinity() {
			if !s.addAntiKeys(pi) {
				return nil
			}
		}
	}
	return s.antiKeys
}

// addAntiKeys adds the keys of pi's required anti-affinity terms to the
// snapshot's; false once a term selects on no key.
func (s *Snapshot) addAntiKeys(pi fwk.PodInfo) bool {
	for _, term := range pi.GetRequiredAntiAffinityTerms() {
		reqs, selectable := term.Selector.Requirements()
		if !selectable || len(reqs) == 0 {
			s.antiAll, s.antiKeys = true, nil
			return false
		}
		for _, r := range reqs {
			s.antiKeys[r.Key()] = true
		}
	}
	return true
}

// noteAntiAffinity keeps antiAffinityKeys whole once pod, placed on the
// snapshot, has required anti-affinity terms.
func (s *Snapshot) noteAntiAffinity(pod *corev1.Pod) {
	if s.antiKeys == nil || s.antiAll {
		return // not found yet: they will be found with pod
	}
	if a := pod.Spec.Affinity; a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) == 0 {
		return
	}
	if pi, err := schedfw.NewPodInfo(pod); err == nil {
		s.addAntiKeys(pi)
	} else {
		s.antiAll, s.antiKeys = true, nil
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
