package capacity

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// requestFor makes a capacity-request pod of group, as Muster makes them.
func requestFor(group string) podOpt {
	return func(p *corev1.Pod) {
		labelledFor(group)(p)
		p.Spec.PriorityClassName = scheduling.CapacityRequestPriorityClass
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "scheduling.muster.dev/v1alpha1", Kind: "PodGroup", Name: group, UID: "uid-" + types.UID(group), Controller: ptr.To(true)}}
	}
}

// labelledFor only labels a pod as a request of group, as anyone may.
func labelledFor(group string) podOpt {
	return func(p *corev1.Pod) {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[scheduling.CapacityRequestLabel] = group
	}
}

func TestAdmitWithCapacityRequests(t *testing.T) {
	t0 := time.Unix(1000, 0)
	gang := func(key string, prio int32, age, n int, cpu string) Candidate {
		return Candidate{Key: gk("ns/" + key), Priority: prio, Created: t0.Add(time.Duration(age) * time.Second), Pods: pods(key, n, cpu), Need: n}
	}
	// Two nodes an autoscaler added, each held by a capacity-request pod
	// of group "want", and a third, old node with room for 10 CPUs.
	nodes := []*corev1.Node{node("new-1", "32", "64Gi"), node("new-2", "32", "64Gi"), node("old", "32", "64Gi")}
	requests := []*corev1.Pod{
		pod("cr-0", "30", onNode("new-1"), requestFor("want")),
		pod("cr-1", "30", onNode("new-2"), requestFor("want")),
		pod("busy", "22", onNode("old")),
	}
	tests := []struct {
		name        string
		bound       []*corev1.Pod
		candidates  []Candidate
		strategy    QueueingStrategy
		autoscaling bool
		want        map[string]string // key -> "admit" or the reason
	}{
		{
			name:       "a gang fits on the room its own requests hold",
			bound:      requests,
			candidates: []Candidate{gang("want", 0, 1, 2, "30")},
			want:       map[string]string{"ns/want": "admit"},
		},
		{
			name:       "another gang, even of higher priority, does not take that room",
			bound:      requests,
			candidates: []Candidate{gang("other", 100, 1, 2, "30")},
			want:       map[string]string{"ns/other": string(CauseNoRoom)},
		},
		{
			name:       "a gang that does not fit even with its requests gives their room back to the next",
			bound:      requests,
			candidates: []Candidate{gang("want", 10, 1, 3, "30"), gang("small", 0, 2, 1, "10")},
			want:       map[string]string{"ns/want": string(CauseNoRoom), "ns/small": "admit"},
		},
		{
			name:  "the next gang after one placed on its requests sees their room taken",
			bound: requests,
			candidates: []Candidate{
				gang("want", 10, 1, 2, "30"), gang("later", 0, 2, 1, "20"),
			},
			want: map[string]string{"ns/want": "admit", "ns/later": string(CauseNoRoom)},
		},
		{
			name:       "a gang of one fits the old node's free room beside the requests",
			bound:      requests,
			candidates: []Candidate{gang("one", 0, 1, 1, "10")},
			want:       map[string]string{"ns/one": "admit"},
		},
		{
			name:        "StrictFIFO with autoscaling: a gang larger than the idle cluster keeps the head",
			bound:       requests[2:],
			candidates:  []Candidate{gang("huge", 10, 1, 4, "40"), gang("small", 0, 2, 1, "1")},
			strategy:    StrictFIFO,
			autoscaling: true,
			want:        map[string]string{"ns/huge": string(CauseNeverFits), "ns/small": string(CauseQueued)},
		},
		{
			name:       "StrictFIFO without autoscaling: that gang can never fit and is skipped",
			bound:      requests[2:],
			candidates: []Candidate{gang("huge", 10, 1, 4, "40"), gang("small", 0, 2, 1, "1")},
			strategy:   StrictFIFO,
			want:       map[string]string{"ns/huge": string(CauseNeverFits), "ns/small": "admit"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := trackerOf(nodes, tc.bound...)
			s := tr.Snapshot(defaultFilters())
			got := map[string]string{}
			for _, v := range Admit(s, tc.candidates, Options{Strategy: tc.strategy, Requests: tr.Requests, Autoscaling: tc.autoscaling}) {
				if v.Admit {
					got[v.Key.String()] = "admit"
					if v.Key.String() == "ns/want" {
						for _, a := range v.Assignments {
							if a.Node == "old" {
								t.Errorf("pod %s placed on the old node, which has no room for it", a.Pod.Name)
							}
						}
					}
				} else {
					got[v.Key.String()] = string(v.Cause)
				}
			}
			for k, w := range tc.want {
				if got[k] != w {
					t.Errorf("%s: got %q, want %q (all: %v)", k, got[k], w, got)
				}
			}
		})
	}
}

func TestTrackerRequests(t *testing.T) {
	nodes := []*corev1.Node{node("a", "32", "64Gi")}
	tests := []struct {
		name      string
		pods      []*corev1.Pod
		remove    []string
		replace   bool
		wantHeld  int  // holdings of ns/g's requests
		wantVicts int  // unmanaged victims (capacity-request pods are never)
		wantNil   bool // Requests returns nil
	}{
		{name: "bound requests are held by their group", pods: []*corev1.Pod{pod("r0", "1", onNode("a"), requestFor("g")), pod("r1", "1", onNode("a"), requestFor("g"))}, wantHeld: 2},
		{name: "a pending request holds nothing", pods: []*corev1.Pod{pod("r0", "1", requestFor("g"))}, wantNil: true},
		{name: "another group's requests are not ours", pods: []*corev1.Pod{pod("r0", "1", onNode("a"), requestFor("h"))}, wantNil: true},
		{name: "a deleted request is forgotten", pods: []*corev1.Pod{pod("r0", "1", onNode("a"), requestFor("g"))}, remove: []string{"r0"}, wantNil: true},
		{name: "a relist keeps them", pods: []*corev1.Pod{pod("r0", "1", onNode("a"), requestFor("g")), pod("x", "1", onNode("a"))}, replace: true, wantHeld: 1, wantVicts: 1},
		{name: "requests are never victims, other pods are", pods: []*corev1.Pod{pod("r0", "1", onNode("a"), requestFor("g")), pod("x", "1", onNode("a"))}, wantHeld: 1, wantVicts: 1},
		{name: "a pod only labelled as a request is not one: it is a victim like any", pods: []*corev1.Pod{pod("fake", "1", onNode("a"), labelledFor("g"))}, wantNil: true, wantVicts: 1},
		{name: "nor is one of another class", pods: []*corev1.Pod{pod("fake", "1", onNode("a"), requestFor("g"), func(p *corev1.Pod) { p.Spec.PriorityClassName = "high" })}, wantNil: true, wantVicts: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := trackerOf(nodes)
			if tc.replace {
				tr.ReplaceUnmanagedPods(tc.pods)
			} else {
				for _, p := range tc.pods {
					tr.SetUnmanagedPod(p)
				}
			}
			for _, name := range tc.remove {
				tr.RemoveUnmanagedPod(pod(name, "1").UID)
			}
			v := tr.Requests(gk("ns/g"))
			if tc.wantNil != (v == nil) {
				t.Fatalf("Requests: got %v, want nil %v", v, tc.wantNil)
			}
			if v != nil && v.Pods() != tc.wantHeld {
				t.Errorf("Requests holds %d pods, want %d", v.Pods(), tc.wantHeld)
			}
			if got := len(tr.Victims(true).Eligible); got != tc.wantVicts {
				t.Errorf("victims: got %d, want %d", got, tc.wantVicts)
			}
		})
	}
}
