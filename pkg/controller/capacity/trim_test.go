package capacity

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// paddedAntiAffinity gives a pod required anti-affinity to pods labelled
// app=<value> on the same node, in every namespace, for each value; pad
// makes each term that many bytes larger (a long match expression value
// list), as a tenant may.
func paddedAntiAffinity(pad int, values ...string) podOpt {
	return func(p *corev1.Pod) {
		var terms []corev1.PodAffinityTerm
		for _, v := range values {
			sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": v}}
			if pad > 0 {
				sel.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "pad", Operator: metav1.LabelSelectorOpNotIn, Values: []string{strings.Repeat("x", pad)}}}
			}
			terms = append(terms, corev1.PodAffinityTerm{LabelSelector: sel, NamespaceSelector: &metav1.LabelSelector{}, TopologyKey: corev1.LabelHostname})
		}
		if p.Spec.Affinity == nil {
			p.Spec.Affinity = &corev1.Affinity{}
		}
		p.Spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: terms}
	}
}

// manyLabels gives a pod n labels of the longest value.
func manyLabels(n int) podOpt {
	return func(p *corev1.Pod) {
		for i := range n {
			withPodLabel(fmt.Sprintf("example.com/label-%04d", i), strings.Repeat("v", 63))(p)
		}
	}
}

// TestHolderPodKeepsWhatFiltersRead: a pod that is not Muster's keeps its
// labels and its required pod anti-affinity, the two things kube-scheduler's
// filters read of a pod already placed, each within its bound; its pod
// affinity and preferred terms, which no filter reads, go. Past the
// anti-affinity bound, terms that refuse every pod on each of its topology
// keys stand in, so placement stays at least as strict as the scheduler.
func TestHolderPodKeepsWhatFiltersRead(t *testing.T) {
	preferred := func(p *corev1.Pod) {
		p.Spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = []corev1.WeightedPodAffinityTerm{{Weight: 1,
			PodAffinityTerm: corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{}, TopologyKey: corev1.LabelHostname}}}
		p.Spec.Affinity.PodAffinity = &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{}, TopologyKey: corev1.LabelHostname}}}
	}
	tests := []struct {
		name        string
		pod         *corev1.Pod
		wantLabels  int
		wantTerms   int
		matchAll    bool // the kept terms select every pod
		wantNoOther bool // no pod affinity nor preferred term is kept
	}{
		{name: "small labels and anti-affinity are kept whole",
			pod: pod("u", "1", withPodLabel("app", "db"), paddedAntiAffinity(0, "web", "cache")), wantLabels: 1, wantTerms: 2},
		{name: "pod affinity and preferred terms go: no filter reads them of a placed pod",
			pod: pod("u", "1", paddedAntiAffinity(0, "web"), preferred), wantTerms: 1, wantNoOther: true},
		{name: "labels past the bound are kept in key order up to it",
			pod: pod("u", "1", manyLabels(300)), wantLabels: MaxUnmanagedLabelBytes / (len("example.com/label-0000") + 63)},
		{name: "the capacity-request label is kept first, whatever the others",
			pod:        pod("u", "1", manyLabels(300), withPodLabel(scheduling.CapacityRequestLabel, "g")),
			wantLabels: 1 + (MaxUnmanagedLabelBytes-len(scheduling.CapacityRequestLabel)-1)/(len("example.com/label-0000")+63)},
		{name: "anti-affinity past the bound becomes one term per topology key that refuses every pod",
			pod: pod("u", "1", paddedAntiAffinity(MaxUnmanagedAntiAffinityBytes/4, "a", "b", "c", "d", "e")), wantTerms: 1, matchAll: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := holderPod(tc.pod)
			if len(h.Labels) != tc.wantLabels {
				t.Errorf("kept %d labels, want %d", len(h.Labels), tc.wantLabels)
			}
			size := 0
			for k, v := range h.Labels {
				size += len(k) + len(v)
			}
			if size > MaxUnmanagedLabelBytes {
				t.Errorf("kept %d bytes of labels, more than %d", size, MaxUnmanagedLabelBytes)
			}
			if v, ok := tc.pod.Labels[scheduling.CapacityRequestLabel]; ok && h.Labels[scheduling.CapacityRequestLabel] != v {
				t.Errorf("the capacity-request label was dropped")
			}
			var terms []corev1.PodAffinityTerm
			if a := h.Spec.Affinity; a != nil {
				if tc.wantNoOther && (a.PodAffinity != nil || len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0) {
					t.Errorf("kept affinity %+v, want required anti-affinity alone", a)
				}
				terms = a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
			}
			if len(terms) != tc.wantTerms {
				t.Fatalf("kept %d anti-affinity terms, want %d", len(terms), tc.wantTerms)
			}
			kept := 0
			for _, term := range terms {
				kept += term.Size()
				all := term.LabelSelector != nil && len(term.LabelSelector.MatchLabels)+len(term.LabelSelector.MatchExpressions) == 0 &&
					term.NamespaceSelector != nil && len(term.NamespaceSelector.MatchLabels)+len(term.NamespaceSelector.MatchExpressions) == 0
				if all != tc.matchAll {
					t.Errorf("term %+v selects every pod = %v, want %v", term, all, tc.matchAll)
				}
			}
			if kept > MaxUnmanagedAntiAffinityBytes {
				t.Errorf("kept %d bytes of anti-affinity, more than %d", kept, MaxUnmanagedAntiAffinityBytes)
			}
		})
	}
}

// TestTrimmedHolderRefusesWhatTheSchedulerRefuses runs the scheduler's
// filters: a pod that is not Muster's, with required anti-affinity to
// app=web, refuses a gang's web pod on its node whether its terms are kept
// whole or, past the bound, stood in for; and its required pod affinity,
// which no filter reads of a placed pod, refuses nothing.
func TestTrimmedHolderRefusesWhatTheSchedulerRefuses(t *testing.T) {
	web := func() []*corev1.Pod { return []*corev1.Pod{pod("web-0", "1", withPodLabel("app", "web"))} }
	tests := []struct {
		name   string
		holder *corev1.Pod
		placed int
	}{
		{name: "anti-affinity within the bound refuses the web pod", holder: pod("u", "1", onNode("a"), paddedAntiAffinity(0, "web"))},
		{name: "anti-affinity past the bound still refuses it", holder: pod("u", "1", onNode("a"), paddedAntiAffinity(MaxUnmanagedAntiAffinityBytes/2, "web", "x", "y"))},
		{name: "pod affinity of a placed pod refuses nothing", holder: pod("u", "1", onNode("a"), withPodAffinity("app", "nobody")), placed: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := snapshotOf([]*corev1.Node{node("a", "8", "16Gi")}, tc.holder)
			defer s.Close()
			r := s.Place(web())
			defer s.Discard(r)
			if r.Placed() != tc.placed {
				t.Errorf("placed %d web pods beside the holder, want %d: %s", r.Placed(), tc.placed, r.Short)
			}
		})
	}
}

// heapNow is the live heap after two collections.
func heapNow() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestUnmanagedPodsKeepBoundedBytes: bound pods without the group label,
// each decoded apart (as the reflector delivers them) with 1 MiB of labels
// and 512 KiB of required anti-affinity, cost the tracker no more than the
// bounds and a few KiB each, once the decoded pods are gone.
func TestUnmanagedPodsKeepBoundedBytes(t *testing.T) {
	const n = 20
	inputs := make([][]byte, n)
	for i := range n {
		p := pod(fmt.Sprintf("fat-%d", i), "10m", onNode("a"), manyLabels(1<<20/85), paddedAntiAffinity(1<<10, make([]string, 512)...))
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		inputs[i] = b
	}
	tr := trackerOf([]*corev1.Node{node("a", "64", "64Gi")})
	before := heapNow()
	for _, b := range inputs {
		var p corev1.Pod
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
		tr.SetUnmanagedPod(&p)
	}
	after := heapNow()
	runtime.KeepAlive(tr)
	runtime.KeepAlive(inputs)
	per := int64(after) - int64(before)
	per /= n
	const limit = 4 * (MaxUnmanagedLabelBytes + MaxUnmanagedAntiAffinityBytes)
	t.Logf("%d pods of 1 MiB labels and 512 KiB anti-affinity each: %d KiB kept a pod (bound %d KiB)", n, per>>10, limit>>10)
	if per > limit {
		t.Errorf("the tracker keeps %d KiB of each pod, more than %d KiB", per>>10, limit>>10)
	}
}
