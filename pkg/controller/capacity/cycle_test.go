package capacity

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAdmit(t *testing.T) {
	t0 := time.Unix(1000, 0)
	gang := func(key string, prio int32, age int, n int, cpu string) Candidate {
		return Candidate{Key: gk(key), Priority: prio, Created: t0.Add(time.Duration(age) * time.Second), Pods: pods(key, n, cpu), Need: n}
	}
	affine := func(key string, age int, n int, cpu string, opts ...podOpt) Candidate {
		return Candidate{Key: gk(key), Created: t0.Add(time.Duration(age) * time.Second), Pods: pods(key, n, cpu, opts...), Need: n}
	}
	joiner := func(key string, n int, cpu string) Candidate {
		return Candidate{Key: gk(key), Created: t0, Pods: pods(key, n, cpu)}
	}
	joinerAt := func(key string, prio int32, n int, cpu string) Candidate {
		c := joiner(key, n, cpu)
		c.Priority = prio
		return c
	}
	fourNodes := []*corev1.Node{node("a", "32", "64Gi"), node("b", "32", "64Gi"), node("c", "32", "64Gi"), node("d", "32", "64Gi")}
	type outcome struct {
		Admit bool
		Pods  int
		Cause Cause
		// Silent: no decision, only a hint that parks the group.
		Silent bool
	}
	tests := []struct {
		name       string
		nodes      []*corev1.Node
		bound      []*corev1.Pod
		candidates []Candidate
		strategy   QueueingStrategy
		want       map[string]outcome
		wantMsg    map[string]string
	}{
		{
			name:       "two gangs that do not fit together: the older runs whole, the other waits whole",
			nodes:      fourNodes,
			candidates: []Candidate{gang("b", 0, 2, 8, "10"), gang("a", 0, 1, 8, "10")},
			want:       map[string]outcome{"a": {Admit: true, Pods: 8}, "b": {Cause: CauseNoRoom}},
			wantMsg:    map[string]string{"b": "needs 8 pods placed at once; 4 fit now: 8 pods requesting cpu 10 each, 4 fit; 4 of 4 nodes refuse the rest: 4 Insufficient cpu (NodeResourcesFit)"},
		},
		{
			name:       "higher priority goes first even when younger",
			nodes:      fourNodes,
			candidates: []Candidate{gang("old", 0, 1, 8, "10"), gang("urgent", 10, 5, 8, "10")},
			want:       map[string]outcome{"urgent": {Admit: true, Pods: 8}, "old": {Cause: CauseNoRoom}},
		},
		{
			name:       "equal priority and age: by name",
			nodes:      fourNodes,
			candidates: []Candidate{gang("y", 0, 1, 8, "10"), gang("x", 0, 1, 8, "10")},
			want:       map[string]outcome{"x": {Admit: true, Pods: 8}, "y": {Cause: CauseNoRoom}},
		},
		{
			name:       "BestEffortFIFO: a smaller gang goes ahead of a larger one that does not fit",
			nodes:      fourNodes,
			bound:      []*corev1.Pod{pod("x", "30", onNode("a"))},
			candidates: []Candidate{gang("big", 0, 1, 13, "8"), gang("small", 0, 2, 2, "8")},
			strategy:   BestEffortFIFO,
			want:       map[string]outcome{"big": {Cause: CauseNoRoom}, "small": {Admit: true, Pods: 2}},
		},
		{
			name:       "StrictFIFO: nothing goes ahead of the head",
			nodes:      fourNodes,
			bound:      []*corev1.Pod{pod("x", "30", onNode("a"))},
			candidates: []Candidate{gang("big", 0, 1, 13, "8"), gang("small", 0, 2, 2, "8")},
			strategy:   StrictFIFO,
			want:       map[string]outcome{"big": {Cause: CauseNoRoom}, "small": {Cause: CauseQueued}},
			wantMsg:    map[string]string{"small": "queued behind PodGroup big, which does not fit yet (StrictFIFO)"},
		},
		{
			name:       "a gang larger than the idle cluster is skipped under StrictFIFO",
			nodes:      fourNodes,
			candidates: []Candidate{gang("huge", 0, 1, 20, "10"), gang("small", 0, 2, 2, "8")},
			strategy:   StrictFIFO,
			want:       map[string]outcome{"huge": {Cause: CauseNeverFits}, "small": {Admit: true, Pods: 2}},
			wantMsg:    map[string]string{"huge": "needs 20 pods placed at once and can never fit: even the idle cluster fits 12"},
		},
		{
			name:       "StrictFIFO: a head whose required pod affinity selects no pod can never fit, and is skipped",
			nodes:      fourNodes,
			candidates: []Candidate{affine("lonely", 1, 2, "1", withPodAffinity("app", "nobody")), gang("small", 0, 2, 2, "8")},
			strategy:   StrictFIFO,
			want:       map[string]outcome{"lonely": {Cause: CauseNeverFits}, "small": {Admit: true, Pods: 2}},
			wantMsg:    map[string]string{"lonely": "needs 2 pods placed at once and can never fit: even the idle cluster but for the pods its required pod affinity selects fits 0"},
		},
		{
			name:  "StrictFIFO: a head whose pod affinity selects a pod that leaves it no room can never fit",
			nodes: fourNodes,
			bound: []*corev1.Pod{pod("db", "30", onNode("a"), withPodLabel("app", "db"))},
			candidates: []Candidate{affine("near-db", 1, 2, "4", withPodAffinity("app", "db")),
				gang("small", 0, 2, 2, "8")},
			strategy: StrictFIFO,
			want:     map[string]outcome{"near-db": {Cause: CauseNeverFits}, "small": {Admit: true, Pods: 2}},
		},
		{
			name:  "StrictFIFO: a head whose pod affinity selects a pod stays the head while other pods hold its room",
			nodes: fourNodes,
			bound: []*corev1.Pod{pod("db", "4", onNode("a"), withPodLabel("app", "db")), pod("filler", "26", onNode("a"))},
			candidates: []Candidate{affine("near-db", 1, 2, "4", withPodAffinity("app", "db")),
				gang("small", 0, 2, 2, "8")},
			strategy: StrictFIFO,
			want:     map[string]outcome{"near-db": {Cause: CauseNoRoom}, "small": {Cause: CauseQueued}},
		},
		{
			name:  "StrictFIFO: pod affinity to another namespace keeps only that namespace's pods",
			nodes: fourNodes,
			bound: []*corev1.Pod{pod("db", "4", onNode("a"), withPodLabel("app", "db"))},
			candidates: []Candidate{affine("near-db", 1, 2, "4", withPodAffinity("app", "db", "elsewhere")),
				gang("small", 0, 2, 2, "8")},
			strategy: StrictFIFO,
			want:     map[string]outcome{"near-db": {Cause: CauseNeverFits}, "small": {Admit: true, Pods: 2}},
		},
		{
			name:       "BestEffortFIFO: a gang with required pod affinity is not judged on the idle cluster: it waits",
			nodes:      fourNodes,
			candidates: []Candidate{affine("lonely", 1, 2, "1", withPodAffinity("app", "nobody")), gang("small", 0, 2, 2, "8")},
			strategy:   BestEffortFIFO,
			want:       map[string]outcome{"lonely": {Cause: CauseNoRoom}, "small": {Admit: true, Pods: 2}},
		},
		{
			name:       "a gang larger than the idle cluster is skipped under BestEffortFIFO",
			nodes:      fourNodes,
			candidates: []Candidate{gang("huge", 0, 1, 20, "10"), gang("small", 0, 2, 2, "8")},
			strategy:   BestEffortFIFO,
			want:       map[string]outcome{"huge": {Cause: CauseNeverFits}, "small": {Admit: true, Pods: 2}},
		},
		{
			name:       "pods of an admitted group go before a gang of equal priority, one by one, as far as they fit",
			nodes:      []*corev1.Node{node("a", "4", "8Gi")},
			candidates: []Candidate{gang("new", 0, 0, 2, "1"), joiner("running", 3, "1")},
			want:       map[string]outcome{"running": {Admit: true, Pods: 3}, "new": {Cause: CauseNoRoom}},
		},
		{
			name:       "pods of an admitted group of lower priority go after a higher-priority gang, in what it leaves",
			nodes:      []*corev1.Node{node("a", "4", "8Gi")},
			candidates: []Candidate{gang("new", 10, 0, 2, "1"), joiner("running", 3, "1")},
			want:       map[string]outcome{"new": {Admit: true, Pods: 2}, "running": {Admit: true, Pods: 2}},
		},
		{
			name:       "pods of an admitted group of higher priority go before a gang",
			nodes:      []*corev1.Node{node("a", "4", "8Gi")},
			candidates: []Candidate{gang("new", 0, 0, 2, "1"), joinerAt("running", 10, 3, "1")},
			want:       map[string]outcome{"running": {Admit: true, Pods: 3}, "new": {Cause: CauseNoRoom}},
		},
		{
			name:       "a lower-priority joiner cannot take what a higher-priority gang needs",
			nodes:      []*corev1.Node{node("a", "4", "8Gi"), node("b", "4", "8Gi")},
			candidates: []Candidate{joinerAt("tenant", -5, 8, "1"), gang("urgent", 5, 0, 8, "1")},
			want:       map[string]outcome{"urgent": {Admit: true, Pods: 8}, "tenant": {Silent: true}},
		},
		{
			name:       "StrictFIFO: a lower-priority joiner waits behind the head",
			nodes:      []*corev1.Node{node("a", "4", "8Gi")},
			bound:      []*corev1.Pod{pod("x", "2", onNode("a"))},
			candidates: []Candidate{gang("head", 10, 0, 3, "1"), joiner("running", 1, "1")},
			strategy:   StrictFIFO,
			want:       map[string]outcome{"head": {Cause: CauseNoRoom}, "running": {Cause: CauseQueued}},
		},
		{
			name:       "StrictFIFO: a joiner of the head's priority goes before it",
			nodes:      []*corev1.Node{node("a", "4", "8Gi")},
			bound:      []*corev1.Pod{pod("x", "2", onNode("a"))},
			candidates: []Candidate{gang("head", 0, 0, 3, "1"), joiner("running", 1, "1")},
			strategy:   StrictFIFO,
			want:       map[string]outcome{"head": {Cause: CauseNoRoom}, "running": {Admit: true, Pods: 1}},
		},
		{
			name:       "pods beyond the need that fit are admitted with the gang",
			nodes:      []*corev1.Node{node("a", "4", "8Gi")},
			candidates: []Candidate{{Key: gk("g"), Pods: pods("g", 6, "1"), Need: 3}},
			want:       map[string]outcome{"g": {Admit: true, Pods: 4}},
		},
		{
			name:       "nothing fits a joiner: no decision, only a hint",
			nodes:      []*corev1.Node{node("a", "1", "8Gi")},
			candidates: []Candidate{joiner("running", 1, "2")},
			want:       map[string]outcome{"running": {Silent: true}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := snapshotOf(tc.nodes, tc.bound...)
			got := map[string]outcome{}
			for _, v := range Admit(s, tc.candidates, Options{Strategy: tc.strategy}) {
				got[v.Key.String()] = outcome{Admit: v.Admit, Pods: len(v.Assignments), Cause: v.Cause, Silent: v.Hint != nil && v.Hint.Silent}
				if want, ok := tc.wantMsg[v.Key.String()]; ok && !strings.HasPrefix(v.Message, want) {
					t.Errorf("%s: message %q, want it to start with %q", v.Key, v.Message, want)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAdmitNeverOverCommits places many gangs in one cycle and checks that
// no node is given more than it has.
func TestAdmitNeverOverCommits(t *testing.T) {
	nodes := []*corev1.Node{node("a", "32", "64Gi"), node("b", "32", "64Gi"), node("c", "16", "64Gi")}
	var cands []Candidate
	for i, n := range []int{3, 5, 2, 7, 4, 1, 6} {
		key := string(rune('a' + i))
		cands = append(cands, Candidate{Key: gk(key), Created: time.Unix(int64(i), 0), Pods: pods(key, n, "6"), Need: n})
	}
	s := snapshotOf(nodes)
	cpu := map[string]int64{}
	for _, v := range Admit(s, cands, Options{Strategy: BestEffortFIFO}) {
		for _, a := range v.Assignments {
			cpu[a.Node] += 6
		}
	}
	for _, n := range nodes {
		if alloc := n.Status.Allocatable.Cpu().Value(); cpu[n.Name] > alloc {
			t.Errorf("node %s given %d cpu, has %d", n.Name, cpu[n.Name], alloc)
		}
	}
	if cpu["a"]+cpu["b"]+cpu["c"] == 0 {
		t.Fatal("nothing was admitted")
	}
}

// withNamespaceSelectorAffinity requires a pod labelled k=v on the same
// node, in the namespaces labelled team=<team>.
func withNamespaceSelectorAffinity(k, v, team string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{k: v}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": team}},
			TopologyKey:       corev1.LabelHostname,
		}}}}
	}
}

// TestStrictFIFOJudgesNamespaceSelectors: under StrictFIFO, a head whose
// required pod affinity selects namespaces by label is judged on the idle
// cluster that keeps the pods of the namespaces its selector matches
// (their labels as the scheduler's filters read them): one that can never
// fit there is skipped, and says so; one that fits once other pods leave
// stays the head.
func TestStrictFIFOJudgesNamespaceSelectors(t *testing.T) {
	ctx := context.Background()
	f, err := startFilters(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "db", Labels: map[string]string{"team": "db"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: map[string]string{"team": "apps"}}})
	if err != nil {
		t.Fatal(err)
	}
	inNS := func(ns string) podOpt { return func(p *corev1.Pod) { p.Namespace = ns } }
	nodes := []*corev1.Node{node("a", "32", "64Gi"), node("b", "32", "64Gi")}
	head := func(team string) Candidate {
		return Candidate{Key: gk("near-db"), Pods: pods("near-db", 2, "4", withNamespaceSelectorAffinity("app", "db", team)), Need: 2}
	}
	small := Candidate{Key: gk("small"), Created: time.Unix(2000, 0), Pods: pods("small", 2, "1"), Need: 2}
	tests := []struct {
		name      string
		bound     []*corev1.Pod
		head      Candidate
		wantHead  Cause
		wantSmall bool // admitted
	}{
		{name: "the only pod its selector reaches leaves it no room: never fits, skipped",
			bound: []*corev1.Pod{pod("db-0", "30", onNode("a"), inNS("db"), withPodLabel("app", "db"))},
			head:  head("db"), wantHead: CauseNeverFits, wantSmall: true},
		{name: "its selector matches no namespace that runs the pod: never fits, skipped",
			bound: []*corev1.Pod{pod("db-0", "1", onNode("a"), inNS("db"), withPodLabel("app", "db"))},
			head:  head("nobody"), wantHead: CauseNeverFits, wantSmall: true},
		{name: "others hold its room beside the pod it needs: it stays the head",
			bound: []*corev1.Pod{pod("db-0", "4", onNode("a"), inNS("db"), withPodLabel("app", "db")), pod("filler", "26", onNode("a"))},
			head:  head("db"), wantHead: CauseNoRoom, wantSmall: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := trackerOf(nodes, tc.bound...).Snapshot(f)
			defer s.Close()
			got := map[string]Verdict{}
			for _, v := range Admit(s, []Candidate{tc.head, small}, Options{Strategy: StrictFIFO}) {
				got[v.Key.Name] = v
			}
			if v := got["near-db"]; v.Admit || v.Cause != tc.wantHead {
				t.Errorf("the head: admitted %v, cause %v (%s), want %v", v.Admit, v.Cause, v.Message, tc.wantHead)
			}
			if v := got["small"]; v.Admit != tc.wantSmall {
				t.Errorf("the gang behind it admitted = %v, want %v (%s)", v.Admit, tc.wantSmall, v.Message)
			}
		})
	}
}
