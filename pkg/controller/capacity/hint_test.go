package capacity

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

func withAntiAffinity(k, v string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}, TopologyKey: "kubernetes.io/hostname"}},
		}}
	}
}

// TestTrackerChanges: the tracker records as changes only what may give
// room, and SnapshotChanges hands them over once.
func TestTrackerChanges(t *testing.T) {
	nodes := []*corev1.Node{node("a", "4", "8Gi"), node("b", "4", "8Gi")}
	key := gk("g")
	running := func(name, cpu, n string, opts ...podOpt) *corev1.Pod {
		p := pod(name, cpu, append([]podOpt{onNode(n), phase(corev1.PodRunning), version(1)}, opts...)...)
		p.Labels = map[string]string{scheduling.PodGroupLabel: "g"}
		return p
	}
	prio := func(v int32) podOpt { return func(p *corev1.Pod) { p.Spec.Priority = &v } }
	tests := []struct {
		name string
		do   func(tr *Tracker)
		want Changes
	}{
		{"nothing", func(*Tracker) {}, Changes{LowestHolder: math.MaxInt32}},
		{"a managed pod leaves", func(tr *Tracker) { tr.RemoveManagedPod("uid-m") },
			Changes{Freed: map[string]bool{"a": true}, LowestHolder: math.MaxInt32}},
		{"a managed pod's status changes: nothing freed", func(tr *Tracker) {
			p := running("m", "1", "a", version(2))
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
			tr.SetManagedPod(key, p, false)
		}, Changes{LowestHolder: 0}},
		{"a managed pod ends", func(tr *Tracker) {
			tr.SetManagedPod(key, running("m", "1", "a", version(2), phase(corev1.PodSucceeded)), false)
		},
			Changes{Freed: map[string]bool{"a": true}, LowestHolder: math.MaxInt32}},
		{"an unmanaged pod binds, of priority -3", func(tr *Tracker) { tr.SetUnmanagedPod(pod("u2", "1", onNode("b"), prio(-3))) },
			Changes{LowestHolder: -3}},
		{"an unmanaged pod's status changes: nothing freed", func(tr *Tracker) {
			p := pod("u", "1", onNode("b"), withAntiAffinity("app", "x"))
			p.Status.Phase = corev1.PodRunning
			tr.SetUnmanagedPod(p)
		}, Changes{LowestHolder: 0}},
		{"an unmanaged pod with anti-affinity leaves: room anywhere", func(tr *Tracker) { tr.RemoveUnmanagedPod("uid-u") },
			Changes{Freed: map[string]bool{"b": true}, Anywhere: true, LowestHolder: math.MaxInt32}},
		{"an unmanaged pod shrinks", func(tr *Tracker) { tr.SetUnmanagedPod(pod("u", "500m", onNode("b"), withAntiAffinity("app", "x"))) },
			Changes{Freed: map[string]bool{"b": true}, Anywhere: true, LowestHolder: 0}},
		{"a heartbeat: nothing", func(tr *Tracker) {
			n := node("a", "4", "8Gi")
			n.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(time.Unix(50, 0))
			tr.SetNode(n)
		}, Changes{LowestHolder: math.MaxInt32}},
		{"a node gains a label", func(tr *Tracker) { tr.SetNode(node("a", "4", "8Gi", withLabel("zone", "z"))) },
			Changes{Freed: map[string]bool{"a": true}, Nodes: true, LowestHolder: math.MaxInt32}},
		{"a node is added", func(tr *Tracker) { tr.SetNode(node("c", "4", "8Gi")) },
			Changes{Freed: map[string]bool{"c": true}, Nodes: true, LowestHolder: math.MaxInt32}},
		{"a node is removed", func(tr *Tracker) { tr.RemoveNode("b") },
			Changes{Nodes: true, LowestHolder: math.MaxInt32}},
		{"a group is recorded admitted, with spec.priority -7", func(tr *Tracker) {
			tr.SetGroupState(key, &GroupState{Admitted: true, SpecPriority: ptrTo(int32(-7))})
		}, Changes{LowestHolder: -7}},
		{"a capacity-request pod binds", func(tr *Tracker) {
			p := pod("req", "1", onNode("b"))
			p.Labels = map[string]string{scheduling.CapacityRequestLabel: "g"}
			p.Spec.PriorityClassName = scheduling.CapacityRequestPriorityClass
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "PodGroup", Name: "g", Controller: ptrTo(true)}}
			tr.SetUnmanagedPod(p)
		}, Changes{LowestHolder: 0, Requested: map[scheduling.GroupKey]bool{scheduling.NewGroupKey("ns", "g"): true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := trackerOf(nodes)
			tr.SetManagedPod(key, running("m", "1", "a"), false)
			u := pod("u", "1", onNode("b"), withAntiAffinity("app", "x"))
			tr.SetUnmanagedPod(u)
			tr.SnapshotChanges(nil) // what setting up changed
			tt.do(tr)
			_, got := tr.SnapshotChanges(nil)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("changes (-want +got):\n%s", diff)
			}
			if _, again := tr.SnapshotChanges(nil); !cmp.Equal(again, noChanges()) {
				t.Errorf("changes handed over twice: %+v", again)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestHintFor: which gangs that do not fit get a hint, and what it holds.
func TestHintFor(t *testing.T) {
	claim := func(p *corev1.Pod) {
		p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptrTo("c")}}
	}
	spread := func(p *corev1.Pod) {
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule}}
	}
	pvc := func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}}}
	}
	nsAnti := func(p *corev1.Pod) {
		withAntiAffinity("app", "x")(p)
		p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].NamespaceSelector = &metav1.LabelSelector{}
	}
	gpu := withRequest("example.com/gpu", "1")
	never := func(p *corev1.Pod) { pp := corev1.PreemptNever; p.Spec.PreemptionPolicy = &pp }
	type got struct {
		Hint    bool
		Shapes  int
		AnyRoom bool
		Below   *int32
		Silent  bool
	}
	gang := func(ps []*corev1.Pod) Candidate {
		return Candidate{Key: gk("g"), Priority: 5, Pods: ps, Need: len(ps), Preempt: true}
	}
	tests := []struct {
		name  string
		c     Candidate
		opts  Options
		own   bool
		tried bool
		want  got
	}{
		{"alike pods: one shape", gang(pods("g", 4, "2")), Options{}, false, false, got{Hint: true, Shapes: 1}},
		{"two shapes", gang(append(pods("g", 2, "2"), pods("h", 2, "1")...)), Options{}, false, false, got{Hint: true, Shapes: 2}},
		{"copies count as a shape", Candidate{Key: gk("g"), Pods: pods("g", 1, "2"), Copies: []Copies{{Name: "w", Template: pod("t", "3"), Count: 4}}, Need: 5},
			Options{}, false, false, got{Hint: true, Shapes: 2}},
		{"anti-affinity: any room", gang(pods("g", 2, "2", withAntiAffinity("app", "x"))), Options{}, false, false, got{Hint: true, Shapes: 1, AnyRoom: true}},
		{"an extended resource: any room", gang(pods("g", 2, "2", gpu)), Options{}, false, false, got{Hint: true, Shapes: 1, AnyRoom: true}},
		{"required pod affinity: none", gang(pods("g", 2, "2", withPodAffinity("app", "x"))), Options{}, false, false, got{}},
		{"spread constraints: none", gang(pods("g", 2, "2", spread)), Options{}, false, false, got{}},
		{"resource claims: none", gang(pods("g", 2, "2", claim)), Options{}, false, false, got{}},
		{"a claim of a volume: none", gang(pods("g", 2, "2", pvc)), Options{}, false, false, got{}},
		{"anti-affinity by namespace labels: none", gang(pods("g", 2, "2", nsAnti)), Options{}, false, false, got{}},
		{"a preemption in flight: none", func() Candidate { c := gang(pods("g", 2, "2")); c.Preempting = []string{"ns/v"}; return c }(), Options{}, false, false, got{}},
		{"its own capacity request: none", gang(pods("g", 2, "2")), Options{}, true, false, got{}},
		{"preemption tried: victims of lower priority help", gang(pods("g", 2, "2")), Options{Victims: func() Pool { return Pool{} }}, false, true,
			got{Hint: true, Shapes: 1, Below: ptrTo(int32(5))}},
		{"preemptionPolicy Never: no victim helps", func() Candidate { c := gang(pods("g", 2, "2", never)); c.Preempt = false; return c }(),
			Options{Victims: func() Pool { return Pool{} }}, false, true, got{Hint: true, Shapes: 1}},
		{"an admitted group's pods: silent", Candidate{Key: gk("g"), Pods: pods("g", 2, "2")}, Options{}, false, false, got{Hint: true, Shapes: 1, Silent: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pre := &preemption{opts: tt.opts}
			h := hintFor(tt.c, pre, tt.own, tt.tried)
			var g got
			if h != nil {
				g = got{Hint: true, Shapes: len(h.Shapes), AnyRoom: h.AnyRoom, Below: h.PreemptsBelow, Silent: h.Silent}
			}
			if diff := cmp.Diff(tt.want, g); diff != "" {
				t.Errorf("hint (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHintLookHelps: a parked gang is let go only by changes that may let
// it fit.
func TestHintLookHelps(t *testing.T) {
	// a has 1 CPU free, b has 3; c is not in the snapshot.
	s := snapshotOf([]*corev1.Node{node("a", "4", "8Gi"), node("b", "4", "8Gi")},
		pod("x", "3", onNode("a")), pod("y", "1", onNode("b")))
	now := time.Unix(1000, 0)
	two := &Hint{Shapes: []*corev1.Pod{pod("p", "2")}, sigs: []string{fmt.Sprint(PodRequests(pod("p", "2")))}}
	anyRoom := &Hint{Shapes: two.Shapes, sigs: two.sigs, AnyRoom: true}
	below := &Hint{Shapes: two.Shapes, sigs: two.sigs, PreemptsBelow: ptrTo(int32(5))}
	until := &Hint{Shapes: two.Shapes, sigs: two.sigs, Until: now.Add(time.Second)}
	untilNow := &Hint{Shapes: two.Shapes, sigs: two.sigs, Until: now}
	freed := func(nodes ...string) Changes {
		ch := noChanges()
		ch.Freed = map[string]bool{}
		for _, n := range nodes {
			ch.Freed[n] = true
		}
		return ch
	}
	with := func(ch Changes, f func(*Changes)) Changes { f(&ch); return ch }
	tests := []struct {
		name string
		hint *Hint
		ch   Changes
		want bool
	}{
		{"nothing changed", two, noChanges(), false},
		{"room freed where the pod still does not fit", two, freed("a"), false},
		{"room freed where it fits", two, freed("b"), true},
		{"a node the snapshot does not offer", two, freed("c"), false},
		{"any room, anywhere", anyRoom, freed("a"), true},
		{"any room, but none given", anyRoom, noChanges(), false},
		{"a pod with anti-affinity left", two, with(freed("a"), func(c *Changes) { c.Anywhere = true }), true},
		{"a node changed", two, with(noChanges(), func(c *Changes) { c.Nodes = true }), true},
		{"a holder of lower priority: a possible victim", below, with(noChanges(), func(c *Changes) { c.LowestHolder = 4 }), true},
		{"a holder of equal priority: no victim", below, with(noChanges(), func(c *Changes) { c.LowestHolder = 5 }), false},
		{"spared victims not yet eligible", until, noChanges(), false},
		{"spared victims eligible now", untilNow, noChanges(), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NewHintLook(tt.ch, s, now).Helps(tt.hint); got != tt.want {
				t.Errorf("Helps = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestAdmitKeepsParkedVerdicts: a parked gang is not placed; its verdict
// is given again in its place, and closes a StrictFIFO queue if it did.
// While a preemption is in flight, parked gangs are placed again and no
// verdict carries a hint.
func TestAdmitKeepsParkedVerdicts(t *testing.T) {
	nodes := []*corev1.Node{node("a", "8", "8Gi")}
	stale := &Verdict{Key: gk("p"), Cause: CauseNoRoom, Message: "parked", Hint: &Hint{Head: true}}
	parked := Candidate{Key: gk("p"), Pods: pods("p", 2, "1"), Need: 2, Parked: stale}
	behind := Candidate{Key: gk("q"), Created: time.Unix(5, 0), Pods: pods("q", 2, "1"), Need: 2}
	preempting := Candidate{Key: gk("r"), Priority: 9, Pods: pods("r", 1, "1"), Need: 1, Preempting: []string{"ns/v"}}
	type out struct {
		Admit   bool
		Cause   Cause
		Message string
		Hint    bool
	}
	tests := []struct {
		name     string
		strategy QueueingStrategy
		cands    []Candidate
		want     map[string]out
	}{
		{"best effort: the parked verdict stands, the gang behind is placed", BestEffortFIFO, []Candidate{parked, behind},
			map[string]out{"p": {Cause: CauseNoRoom, Message: "parked", Hint: true}, "q": {Admit: true}}},
		{"strict: the parked head closes the queue", StrictFIFO, []Candidate{parked, behind},
			map[string]out{"p": {Cause: CauseNoRoom, Message: "parked", Hint: true}, "q": {Cause: CauseQueued, Message: "queued behind PodGroup " + gk("p").String() + ", which does not fit yet (StrictFIFO)"}}},
		{"a preemption in flight: everything is placed, nothing hinted", BestEffortFIFO, []Candidate{parked, behind, preempting},
			map[string]out{"p": {Admit: true}, "q": {Admit: true}, "r": {Admit: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[string]out{}
			for _, v := range Admit(snapshotOf(nodes), tt.cands, Options{Strategy: tt.strategy}) {
				o := out{Admit: v.Admit, Cause: v.Cause, Hint: v.Hint != nil}
				if !v.Admit {
					o.Message = v.Message
				}
				got[v.Key.Name] = o
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
		})
	}
}
