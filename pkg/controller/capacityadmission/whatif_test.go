package capacityadmission

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/controller/admission"
	"github.com/muster-dev/muster/pkg/controller/autoscaling"
	"github.com/muster-dev/muster/pkg/controller/capacity"
)

// TestWhatIfIsWhatAdmissionDoes: on a cluster that does not change between
// the question and the submission, a what-if's answer is what admission
// then decides for the same gang: the same verdict, the same node for
// each pod, the same victims, the same message. The what-if changes
// nothing: asked twice, it answers the same, and the gang submitted after
// it meets the room the what-if saw.
func TestWhatIfIsWhatAdmissionDoes(t *testing.T) {
	f := testFilters(t)
	tests := []struct {
		name string
		// nodes of 4 CPU; running holds milli CPU on each, unmanaged.
		// added nodes come after the waiting gangs' last cycle, and no
		// cycle has run since: room a gang ahead may take.
		nodes, added int
		running      int64
		// admitted are gangs already admitted, running one pod a node from
		// the first node on; waiting are gangs that wait, offered in order.
		admitted []gang
		waiting  []gang
		strategy capacity.QueueingStrategy
		// ask is the gang asked about, then submitted.
		ask gang
		// want is the verdict expected; wantPosition its place.
		wantAdmit    bool
		wantCause    capacity.Cause
		wantVictims  []string
		wantPosition int
		wantWaiting  int
		wantAhead    []string
	}{
		{
			name: "fits at once", nodes: 4, running: 2000,
			ask:       gang{"ask", 3, 1500, 0},
			wantAdmit: true, wantPosition: 1, wantWaiting: 1,
		},
		{
			name: "does not fit: a gang ahead of it takes the room that came", added: 4,
			waiting:   []gang{{"first", 4, 3000, 0}},
			ask:       gang{"ask", 2, 2000, 0},
			wantCause: capacity.CauseNoRoom, wantPosition: 2, wantWaiting: 2, wantAhead: []string{"first"},
		},
		{
			name: "fits beside a waiting gang that does not fit", nodes: 4, running: 2000,
			waiting:   []gang{{"big", 4, 4000, 0}},
			ask:       gang{"ask", 4, 1000, 0},
			wantAdmit: true, wantPosition: 2, wantWaiting: 2, wantAhead: []string{"big"},
		},
		{
			name: "goes ahead of gangs of lower priority", added: 2,
			waiting:   []gang{{"low-1", 2, 3000, 0}, {"low-2", 2, 3000, 0}},
			ask:       gang{"ask", 2, 3000, 10},
			wantAdmit: true, wantPosition: 1, wantWaiting: 3,
		},
		{
			name: "behind two gangs of its priority, in their order", added: 2,
			waiting:   []gang{{"low-1", 2, 3000, 0}, {"low-2", 2, 3000, 0}},
			ask:       gang{"ask", 2, 3000, 0},
			wantCause: capacity.CauseNoRoom, wantPosition: 3, wantWaiting: 3, wantAhead: []string{"low-1", "low-2"},
		},
		{
			name: "preempts a gang of lower priority", nodes: 2,
			admitted:  []gang{{"victim", 2, 3000, 0}},
			ask:       gang{"ask", 2, 3000, 100},
			wantCause: capacity.CausePreempting, wantVictims: []string{"ns/victim"}, wantPosition: 1, wantWaiting: 1,
		},
		{
			name: "StrictFIFO: queued behind a head that does not fit now", nodes: 2, running: 2000, strategy: capacity.StrictFIFO,
			waiting:   []gang{{"head", 2, 3000, 0}},
			ask:       gang{"ask", 1, 1000, 0},
			wantCause: capacity.CauseQueued, wantPosition: 2, wantWaiting: 2, wantAhead: []string{"head"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(f)
			w.mode.strategy = tt.strategy
			if w.mode.strategy == "" {
				w.mode.strategy = capacity.BestEffortFIFO
			}
			w.mode.preemption = true
			addNodes := func(from, n int) {
				for i := from; i < from+n; i++ {
					node := testNode(fmt.Sprintf("n%d", i), 4, "a")
					w.mode.setNode(node)
					if tt.running > 0 {
						p := testPod("", fmt.Sprintf("running-%d", i), tt.running, "")
						p.Spec.NodeName, p.Status.Phase = node.Name, corev1.PodRunning
						w.mode.tracker.SetUnmanagedPod(p)
					}
				}
			}
			addNodes(0, tt.nodes)
			for _, g := range tt.admitted {
				key := scheduling.GroupKey{Namespace: "ns", Name: g.name}
				for i := range g.pods {
					p := testPod(g.name, fmt.Sprintf("%s-%d", g.name, i), g.milli, "")
					p.Spec.SchedulingGates, p.Spec.NodeName, p.Status.Phase = nil, fmt.Sprintf("n%d", i), corev1.PodRunning
					p.Spec.Priority = new(g.priority)
					w.mode.tracker.SetManagedPod(key, p, false)
				}
				w.mode.tracker.SetGroupState(key, &capacity.GroupState{UID: types.UID("uid-" + g.name), Admitted: true, Since: w.clk.Now().Add(-time.Hour)})
			}
			for _, g := range tt.waiting {
				w.clk.SetTime(w.clk.Now().Add(time.Second))
				submit(w, g.name, g.pods, g.milli, g.priority)
			}
			w.mode.admitCycle()
			for _, g := range tt.waiting {
				if _, admitted := w.mode.queue.decision(scheduling.GroupKey{Namespace: "ns", Name: g.name}); admitted {
					t.Fatalf("fixture: waiting gang %s was admitted", g.name)
				}
			}
			addNodes(tt.nodes, tt.added)
			w.clk.SetTime(w.clk.Now().Add(time.Second))
			now := w.clk.Now()

			pg, pods := askedGang(tt.ask.name, tt.ask.pods, tt.ask.milli, tt.ask.priority)
			got := w.mode.WhatIf(pg, pods, int32(tt.ask.pods), now)
			again := w.mode.WhatIf(pg, pods, int32(tt.ask.pods), now)
			if summary(again.Verdict) != summary(got.Verdict) {
				t.Errorf("asked twice, the what-if answered\n %s\nthen\n %s", summary(got.Verdict), summary(again.Verdict))
			}
			if got.Verdict.Admit != tt.wantAdmit || got.Verdict.Cause != tt.wantCause {
				t.Errorf("what-if: admit %v, cause %q (%s); want admit %v, cause %q", got.Verdict.Admit, got.Verdict.Cause, got.Verdict.Message, tt.wantAdmit, tt.wantCause)
			}
			if v := victimKeys(got.Verdict); !slices.Equal(v, tt.wantVictims) {
				t.Errorf("what-if victims %v, want %v", v, tt.wantVictims)
			}
			if got.Position != tt.wantPosition || got.Waiting != tt.wantWaiting || len(got.Ahead) != got.Position-1 {
				t.Errorf("what-if: position %d of %d, %d ahead; want %d of %d", got.Position, got.Waiting, len(got.Ahead), tt.wantPosition, tt.wantWaiting)
			}
			var ahead []string
			for _, k := range got.Ahead {
				ahead = append(ahead, k.Name)
			}
			if !slices.Equal(ahead, tt.wantAhead) {
				t.Errorf("what-if: ahead %v, want %v", ahead, tt.wantAhead)
			}

			// Then the same gang is created, and admission runs its cycle.
			key := submitAt(w, tt.ask.name, tt.ask.pods, tt.ask.milli, tt.ask.priority, now)
			w.mode.admitCycle()
			real, ok := w.mode.queue.decision(key)
			if !ok {
				o, _ := w.mode.queue.waitReason(key)
				real = capacity.Verdict{Key: key, Cause: o.Cause, Message: o.Message, Victims: o.Victims}
			}
			if summary(real) != summary(got.Verdict) {
				t.Errorf("the what-if said\n %s\nadmission then did\n %s", summary(got.Verdict), summary(real))
			}
		})
	}
}

// gang is a gang a what-if test creates or asks about: pods of milli CPU
// each, of a priority.
type gang struct {
	name     string
	pods     int
	milli    int64
	priority int32
}

// askedGang is a gang's group and pods as a what-if is given them: not
// created, so with no UID and no creation time.
func askedGang(name string, n int, milli int64, priority int32) (*v1alpha1.PodGroup, []*corev1.Pod) {
	pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		p := testPod(name, fmt.Sprintf("%s-%d", name, i), milli, "")
		p.UID = ""
		p.Spec.Priority = new(priority)
		pods[i] = p
	}
	return pg, pods
}

// submit creates a gang now, as the group's sync offers it.
func submit(w *world, name string, n int, milli int64, priority int32) scheduling.GroupKey {
	return submitAt(w, name, n, milli, priority, w.clk.Now())
}

func submitAt(w *world, name string, n int, milli int64, priority int32, created time.Time) scheduling.GroupKey {
	pg, pods := askedGang(name, n, milli, priority)
	return submitGang(w, pg, pods, created)
}

// submitGang creates the gang pg and pods at created, as the group's sync
// offers it.
func submitGang(w *world, pg *v1alpha1.PodGroup, pods []*corev1.Pod, created time.Time) scheduling.GroupKey {
	pg.UID, pg.CreationTimestamp = types.UID("uid-"+pg.Namespace+"-"+pg.Name), metav1.NewTime(created)
	key := scheduling.GroupKey{Namespace: pg.Namespace, Name: pg.Name}
	for _, p := range pods {
		p.UID = types.UID("uid-" + p.Namespace + "-" + p.Name)
		p.ResourceVersion = w.nextRV()
		w.mode.tracker.SetManagedPod(key, p, true)
	}
	w.pods[key] = pods
	g := admission.Group{Key: key, PodGroup: pg, Pods: pods, Gated: pods, Present: int32(len(pods)), Active: int32(len(pods))}
	w.mode.AdmitGang(g, int32(len(pods)), 0, created)
	return key
}

// askedIn is askedGang in namespace ns.
func askedIn(ns string, g gang) (*v1alpha1.PodGroup, []*corev1.Pod) {
	pg, pods := askedGang(g.name, g.pods, g.milli, g.priority)
	pg.Namespace = ns
	for _, p := range pods {
		p.Namespace = ns
	}
	return pg, pods
}

// TestWhatIfAsksAsPlanDoes: with an autoscaler, a what-if says what the
// gang would ask of it, and the plan after the gang is created asks just
// that: room for its pods, or nothing, and why.
func TestWhatIfAsksAsPlanDoes(t *testing.T) {
	f := testFilters(t)
	tests := []struct {
		name string
		// nodes of 4 CPU; ahead are gangs of 4 pods of 3 CPU in namespace
		// ns, created first, each asking for room.
		nodes, ahead int
		ask          gang
		namespace    string
		wantAsks     bool
		wantWhy      string
	}{
		{name: "a gang that does not fit asks for its pods", nodes: 1, ask: gang{"ask", 2, 3000, 0}, namespace: "ns", wantAsks: true},
		{name: "it fits: nothing to ask", nodes: 2, ask: gang{"ask", 2, 3000, 0}, namespace: "ns", wantWhy: "it fits"},
		{name: "behind a gang of its namespace that holds the share", nodes: 1, ahead: 1, ask: gang{"ask", 2, 3000, 0}, namespace: "ns",
			wantWhy: "gangs of its namespace ahead of it asked for 4 of the 4 pods"},
		{name: "a gang of another namespace asks beside it", nodes: 1, ahead: 1, ask: gang{"ask", 2, 3000, 0}, namespace: "other", wantAsks: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(f)
			w.mode.strategy = capacity.BestEffortFIFO
			req := &fakeRequester{states: map[scheduling.GroupKey]autoscaling.State{}}
			opts := defaultAutoscaling(req)
			opts.MaxPods = 4
			w.mode.autoscale = newAutoscaler(opts, false, discardAnnounce, w.clk, noMetrics{}, func() {})
			defer w.mode.autoscale.work.ShutDown()
			for i := range tt.nodes {
				w.mode.setNode(testNode(fmt.Sprintf("n%d", i), 4, "a"))
			}
			for i := range tt.ahead {
				submit(w, fmt.Sprintf("first-%d", i), 4, 3000, 0)
			}
			w.mode.admitCycle()
			w.clk.SetTime(w.clk.Now().Add(time.Second))
			now := w.clk.Now()

			pg, pods := askedIn(tt.namespace, tt.ask)
			got := w.mode.WhatIf(pg, pods, int32(tt.ask.pods), now).Ask
			if got == nil {
				t.Fatal("what-if with an autoscaler said nothing of it")
			}
			if got.Asks != tt.wantAsks || !strings.Contains(got.Why, tt.wantWhy) || (got.Asks && got.Pods != int32(tt.ask.pods)) {
				t.Errorf("what-if: asks %v for %d pods (%q); want asks %v, saying %q", got.Asks, got.Pods, got.Why, tt.wantAsks, tt.wantWhy)
			}

			pg, pods = askedIn(tt.namespace, tt.ask)
			key := submitGang(w, pg, pods, now)
			w.mode.admitCycle()
			w.mode.autoscale.mu.Lock()
			d, wanted := w.mode.autoscale.want[key]
			w.mode.autoscale.mu.Unlock()
			if wanted != got.Asks || (wanted && d.Pods() != got.Pods) {
				t.Errorf("the what-if said asks %v for %d pods; the plan then wanted %v (%d pods)", got.Asks, got.Pods, wanted, d.Pods())
			}
		})
	}
}

// summary is a verdict as the test compares it: the pods by name, not
// UID, since the what-if's pods have none of their own.
func summary(v capacity.Verdict) string {
	var places []string
	for _, a := range v.Assignments {
		places = append(places, a.Pod.Name+"@"+a.Node)
	}
	slices.Sort(places)
	return fmt.Sprintf("admit=%v cause=%q victims=%v places=%v message=%q", v.Admit, v.Cause, victimKeys(v), places, v.Message)
}

func victimKeys(v capacity.Verdict) []string {
	var out []string
	for _, x := range v.Victims {
		out = append(out, x.Key)
	}
	slices.Sort(out)
	return out
}

// TestWhatIfBesideCycles: what-ifs run on API requests while the leader's
// cycles run; each must read the queue and the tracker under their locks
// and leave them as they were (go test -race).
func TestWhatIfBesideCycles(t *testing.T) {
	w := newWorld(testFilters(t))
	w.mode.strategy = capacity.BestEffortFIFO
	w.mode.preemption = true
	for i := range 8 {
		w.mode.setNode(testNode(fmt.Sprintf("n%d", i), 4, "a"))
	}
	for i := range 20 {
		submit(w, fmt.Sprintf("w%02d", i), 4, 3000, 0)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 50 {
			w.mode.admitCycle()
		}
	}()
	pg, pods := askedGang("ask", 2, 1000, 5)
	for range 50 {
		if got := w.mode.WhatIf(pg, pods, 2, w.clk.Now()); got.Waiting < 1 || got.Position < 1 || got.Position > got.Waiting {
			t.Fatalf("what-if: position %d of %d", got.Position, got.Waiting)
		}
	}
	<-done
}
