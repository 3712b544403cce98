package capacityadmission

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/controller/admission"
	"github.com/muster-dev/muster/pkg/controller/autoscaling"
	"github.com/muster-dev/muster/pkg/controller/capacity"
)

// fakeRequester is a Requester over a map: the planner's logic is pure,
// and what a real one creates is tested in package autoscaling and e2e.
type fakeRequester struct {
	mu        sync.Mutex
	states    map[scheduling.GroupKey]autoscaling.State
	requested []string
	withdrawn []string
	fail      error
	// unaskable are the groups whose demand Check refuses, and why.
	unaskable map[string]string
}

func (f *fakeRequester) Kind() string { return autoscaling.KindPods }
func (f *fakeRequester) Check(d autoscaling.Demand) error {
	if why, ok := f.unaskable[d.Name]; ok {
		return errors.New(why)
	}
	return nil
}
func (f *fakeRequester) Start(context.Context, func(scheduling.GroupKey)) func() bool {
	return func() bool { return true }
}
func (f *fakeRequester) Request(_ context.Context, d autoscaling.Demand) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	f.requested = append(f.requested, d.Key().String())
	f.states[d.Key()] = autoscaling.State{Kind: autoscaling.KindPods, Name: "pods", Hash: d.Hash, Since: time.Unix(0, 0), Requested: d.Pods()}
	return nil
}
func (f *fakeRequester) Withdraw(_ context.Context, key scheduling.GroupKey) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.withdrawn = append(f.withdrawn, key.String())
	delete(f.states, key)
	return nil
}
func (f *fakeRequester) State(key scheduling.GroupKey) (autoscaling.State, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, ok := f.states[key]
	return st, ok
}
func (f *fakeRequester) Keys() []scheduling.GroupKey {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []scheduling.GroupKey
	for k := range f.states {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// defaultAutoscaling are the flags' defaults, with req.
func defaultAutoscaling(req autoscaling.Requester) AutoscalingOptions {
	return AutoscalingOptions{Requester: req, Timeout: 10 * time.Minute, MaxPods: 256, Image: scheduling.DefaultCapacityRequestImage}
}

// noMetrics reports nothing.
type noMetrics struct{}

func (noMetrics) Waiting(int)                   {}
func (noMetrics) CycleTook(time.Duration)       {}
func (noMetrics) RequestAdmitted(time.Duration) {}
func (noMetrics) PodsRequested(int32)           {}
func (noMetrics) Requested(string, int32)       {}
func (noMetrics) RequestWithdrawn(string)       {}

// gk is the group key a test writes as "namespace/name".
func gk(s string) scheduling.GroupKey {
	k, err := scheduling.ParseGroupKey(s)
	if err != nil {
		panic(err)
	}
	return k
}

func gpuPods(group string, n int) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("%s-%d", group, i), UID: types.UID(fmt.Sprintf("%s-%d", group, i)),
				Labels: map[string]string{scheduling.PodGroupLabel: group, "app": group}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")},
				Limits:   corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")},
			}}}},
		}
	}
	return out
}

func TestAutoscalerPlan(t *testing.T) {
	t0 := time.Unix(10000, 0)
	timeout := 5 * time.Minute
	// A gang's name is its group's in namespace ns, or namespace/name.
	keyOf := func(name string) scheduling.GroupKey {
		if strings.Contains(name, "/") {
			return gk(name)
		}
		return gk("ns/" + name)
	}
	waiting := func(name string) outcome {
		return outcomeOf(capacity.Verdict{Key: keyOf(name), Cause: capacity.CauseNoRoom, Message: "does not fit"})
	}
	exceeds := func(name string) outcome {
		return outcomeOf(capacity.Verdict{Key: keyOf(name), Cause: capacity.CauseNeverFits, Message: "never fits"})
	}
	type gang struct {
		name string
		pods int
	}
	tests := []struct {
		name     string
		gangs    []gang
		verdicts []outcome
		maxPods  int
		strict   bool
		// states are requests that exist, by group name: Provisioned,
		// age, and "failed" or "stale" (made for other pods).
		states  map[string]string
		backoff map[string]time.Duration // group -> backoff left
		// failing are requests that could not be made, by group: for how
		// long.
		failing map[string]time.Duration
		// unaskable are the groups Check refuses, and why.
		unaskable map[string]string
		// wantWanted are the groups whose request is wanted after the plan.
		wantWanted []string
		// wantReason/wantMsg per group (the verdict after the plan).
		wantReason map[string]string
		wantMsg    map[string]string
		// wantWork are the groups queued for a worker.
		wantWork []string
	}{
		{
			name:       "a gang that does not fit asks for room",
			gangs:      []gang{{"a", 8}},
			verdicts:   []outcome{waiting("a")},
			wantWanted: []string{"a"},
			wantReason: map[string]string{"a": scheduling.ReasonWaitingForNodes},
			wantMsg:    map[string]string{"a": "asking the autoscaler for room for 8 pods (Pods); now: does not fit"},
			wantWork:   []string{"a"},
		},
		{
			name:       "a gang larger than the idle cluster asks too: nodes may be added",
			gangs:      []gang{{"a", 8}},
			verdicts:   []outcome{exceeds("a")},
			wantWanted: []string{"a"},
			wantReason: map[string]string{"a": scheduling.ReasonWaitingForNodes},
			wantWork:   []string{"a"},
		},
		{
			name:       "gangs ask in queue order within the bound, and none behind one that does not fit the bound",
			gangs:      []gang{{"a", 8}, {"b", 4}, {"c", 1}},
			verdicts:   []outcome{waiting("a"), waiting("b"), waiting("c")},
			maxPods:    10,
			wantWanted: []string{"a"},
			wantReason: map[string]string{"a": scheduling.ReasonWaitingForNodes, "b": scheduling.ReasonInsufficientCapacity, "c": scheduling.ReasonInsufficientCapacity},
			wantWork:   []string{"a"},
		},
		{
			name:       "a gang larger than the bound asks alone when it is first, and none behind it asks",
			gangs:      []gang{{"big", 12}, {"b", 1}},
			verdicts:   []outcome{waiting("big"), waiting("b")},
			maxPods:    10,
			wantWanted: []string{"big"},
			wantReason: map[string]string{"big": scheduling.ReasonWaitingForNodes, "b": scheduling.ReasonInsufficientCapacity},
			wantMsg:    map[string]string{"big": "asking the autoscaler for room for 12 pods (Pods); now: does not fit", "b": "does not fit"},
			wantWork:   []string{"big"},
		},
		{
			name:       "a gang larger than the bound waits for the gangs ahead of it that asked, and says so",
			gangs:      []gang{{"a", 4}, {"big", 12}, {"c", 1}},
			verdicts:   []outcome{waiting("a"), waiting("big"), waiting("c")},
			maxPods:    10,
			wantWanted: []string{"a"},
			wantReason: map[string]string{"big": scheduling.ReasonInsufficientCapacity, "c": scheduling.ReasonInsufficientCapacity},
			wantMsg:    map[string]string{"big": "waits to ask the autoscaler for room for 12 pods: gangs of its namespace ahead of it asked for 4 of the 10 pods a namespace asks for at once (--capacity-request-max-pods); now: does not fit"},
			wantWork:   []string{"a"},
		},
		{
			name:       "each namespace has the bound to itself: gangs of another namespace ask beside one that does not fit what is left",
			gangs:      []gang{{"a", 8}, {"b", 4}, {"other/c", 8}, {"other/d", 2}, {"other/e", 1}},
			verdicts:   []outcome{waiting("a"), waiting("b"), waiting("other/c"), waiting("other/d"), waiting("other/e")},
			maxPods:    10,
			wantWanted: []string{"a", "other/c", "other/d"},
			wantReason: map[string]string{"b": scheduling.ReasonInsufficientCapacity, "other/c": scheduling.ReasonWaitingForNodes, "other/d": scheduling.ReasonWaitingForNodes, "other/e": scheduling.ReasonInsufficientCapacity},
			wantWork:   []string{"a", "other/c", "other/d"},
		},
		{
			name:       "a gang larger than the bound asks alone in its namespace only: another namespace's gang behind it asks too",
			gangs:      []gang{{"big", 300}, {"b", 1}, {"other/c", 8}},
			verdicts:   []outcome{waiting("big"), waiting("b"), waiting("other/c")},
			maxPods:    10,
			wantWanted: []string{"big", "other/c"},
			wantReason: map[string]string{"big": scheduling.ReasonWaitingForNodes, "b": scheduling.ReasonInsufficientCapacity, "other/c": scheduling.ReasonWaitingForNodes},
			wantMsg:    map[string]string{"other/c": "asking the autoscaler for room for 8 pods (Pods); now: does not fit"},
			wantWork:   []string{"big", "other/c"},
		},
		{
			name:       "StrictFIFO: only the head asks, whatever the namespace",
			gangs:      []gang{{"a", 8}, {"other/b", 4}},
			verdicts:   []outcome{waiting("a"), waiting("other/b")},
			strict:     true,
			wantWanted: []string{"a"},
			wantWork:   []string{"a"},
		},
		{
			name:       "a gang larger than the bound in its backoff holds no share of it: the gangs behind it ask",
			gangs:      []gang{{"big", 12}, {"b", 4}},
			verdicts:   []outcome{waiting("big"), waiting("b")},
			maxPods:    10,
			backoff:    map[string]time.Duration{"big": time.Minute},
			wantWanted: []string{"b"},
			wantReason: map[string]string{"big": scheduling.ReasonNodesNotProvisioned, "b": scheduling.ReasonWaitingForNodes},
			wantWork:   []string{"b"},
		},
		{
			name:       "a gang the autoscaler cannot be asked for is skipped, says why, and the gangs behind it ask",
			gangs:      []gang{{"odd", 4}, {"b", 4}},
			verdicts:   []outcome{waiting("odd"), waiting("b")},
			unaskable:  map[string]string{"odd": "its pods have 40 distinct shapes"},
			wantWanted: []string{"b"},
			wantReason: map[string]string{"odd": scheduling.ReasonNodesNotProvisioned, "b": scheduling.ReasonWaitingForNodes},
			wantMsg:    map[string]string{"odd": "cannot ask the autoscaler for room for 4 pods with a Pods request: its pods have 40 distinct shapes; now: does not fit"},
			wantWork:   []string{"b"},
		},
		{
			name:       "a request that could not be made for less than the timeout is still wanted, and says why",
			gangs:      []gang{{"a", 8}},
			verdicts:   []outcome{waiting("a")},
			failing:    map[string]time.Duration{"a": time.Minute},
			wantWanted: []string{"a"},
			wantReason: map[string]string{"a": scheduling.ReasonWaitingForNodes},
			wantMsg:    map[string]string{"a": "asking the autoscaler for room for 8 pods (Pods); making it failed: exceeded quota; now: does not fit"},
			wantWork:   []string{"a"},
		},
		{
			name:       "a request that could not be made for the timeout is withdrawn, and the gang behind it asks",
			gangs:      []gang{{"a", 8}, {"b", 8}},
			verdicts:   []outcome{waiting("a"), waiting("b")},
			maxPods:    10,
			failing:    map[string]time.Duration{"a": 5 * time.Minute},
			wantWanted: []string{"b"},
			wantReason: map[string]string{"a": scheduling.ReasonNodesNotProvisioned, "b": scheduling.ReasonWaitingForNodes},
			wantMsg:    map[string]string{"a": "the request for room for 8 pods (Pods) could not be made within 5m0s (--capacity-request-timeout): exceeded quota; request withdrawn; asking again at 1970-01-01T02:47:40Z"},
			wantWork:   []string{"b"},
		},
		{
			name:       "BestEffortFIFO: every waiting gang within the bound asks",
			gangs:      []gang{{"a", 8}, {"b", 4}},
			verdicts:   []outcome{waiting("a"), waiting("b")},
			wantWanted: []string{"a", "b"},
			wantWork:   []string{"a", "b"},
		},
		{
			name:       "StrictFIFO: only the head asks",
			gangs:      []gang{{"a", 8}, {"b", 4}},
			verdicts:   []outcome{exceeds("a"), waiting("b")},
			strict:     true,
			wantWanted: []string{"a"},
			wantWork:   []string{"a"},
		},
		{
			name:  "a gang that preempts, one queued and one admitted ask for nothing",
			gangs: []gang{{"p", 2}, {"q", 2}, {"ok", 2}},
			verdicts: []outcome{
				outcomeOf(capacity.Verdict{Key: gk("ns/p"), Cause: capacity.CausePreempting, Victims: []*capacity.Victim{{Key: "ns/v"}}}),
				outcomeOf(capacity.Verdict{Key: gk("ns/q"), Cause: capacity.CauseQueued}),
				outcomeOf(capacity.Verdict{Key: gk("ns/ok"), Admit: true}),
			},
			wantReason: map[string]string{"q": scheduling.ReasonQueued},
		},
		{
			name:       "an admitted gang's request and an orphan request are withdrawn",
			gangs:      []gang{{"ok", 2}},
			verdicts:   []outcome{outcomeOf(capacity.Verdict{Key: gk("ns/ok"), Admit: true})},
			states:     map[string]string{"ok": "2/2 1m", "gone": "1/1 1m"},
			wantWork:   []string{"gone", "ok"},
			wantWanted: nil,
		},
		{
			name:       "a request in progress says how much of it has room",
			gangs:      []gang{{"a", 8}},
			verdicts:   []outcome{waiting("a")},
			states:     map[string]string{"a": "6/8 1m"},
			wantWanted: []string{"a"},
			wantReason: map[string]string{"a": scheduling.ReasonWaitingForNodes},
			wantMsg:    map[string]string{"a": "asked the autoscaler for room for 8 pods at 1970-01-01T02:45:40Z with pods: 6 of 8 have room; withdrawn at 1970-01-01T02:50:40Z unless all do (--capacity-request-timeout); now: does not fit"},
			// A new leader's first plan: the worker finds it made.
			wantWork: []string{"a"},
		},
		{
			name:       "a request for pods that changed is made again",
			gangs:      []gang{{"a", 8}},
			verdicts:   []outcome{waiting("a")},
			states:     map[string]string{"a": "8/8 1m stale"},
			wantWanted: []string{"a"},
			wantWork:   []string{"a"},
		},
		{
			name:       "a request that timed out is withdrawn, and says how much had room",
			gangs:      []gang{{"a", 8}},
			verdicts:   []outcome{waiting("a")},
			states:     map[string]string{"a": "6/8 5m"},
			wantReason: map[string]string{"a": scheduling.ReasonNodesNotProvisioned},
			wantMsg:    map[string]string{"a": "the autoscaler provided room for 6 of the 8 pods asked for with pods within 5m0s (--capacity-request-timeout); request withdrawn so that it can take back the nodes it added; asking again at 1970-01-01T02:47:40Z"},
			wantWork:   []string{"a"},
		},
		{
			name:       "a request the autoscaler refused is withdrawn at once",
			gangs:      []gang{{"a", 8}},
			verdicts:   []outcome{waiting("a")},
			states:     map[string]string{"a": "0/8 1m failed"},
			wantReason: map[string]string{"a": scheduling.ReasonNodesNotProvisioned},
			wantMsg:    map[string]string{"a": "the autoscaler cannot provide room for the 8 pods asked for with pods: no capacity; request withdrawn; asking again at 1970-01-01T02:47:40Z"},
			wantWork:   []string{"a"},
		},
		{
			name:       "during its backoff a gang asks for nothing, and under StrictFIFO nor does any behind it",
			gangs:      []gang{{"a", 8}, {"b", 1}},
			verdicts:   []outcome{waiting("a"), waiting("b")},
			strict:     true,
			backoff:    map[string]time.Duration{"a": time.Minute},
			wantReason: map[string]string{"a": scheduling.ReasonNodesNotProvisioned, "b": scheduling.ReasonInsufficientCapacity},
		},
		{
			name:       "once its backoff ends it asks again",
			gangs:      []gang{{"a", 8}},
			verdicts:   []outcome{waiting("a")},
			backoff:    map[string]time.Duration{"a": -time.Second},
			wantWanted: []string{"a"},
			wantWork:   []string{"a"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := &fakeRequester{states: map[scheduling.GroupKey]autoscaling.State{}, unaskable: tc.unaskable}
			opts := defaultAutoscaling(req)
			opts.Timeout = timeout
			if tc.maxPods > 0 {
				opts.MaxPods = int32(tc.maxPods)
			}
			s := newAutoscaler(opts, tc.strict, discardAnnounce, clocktesting.NewFakePassiveClock(t0), noMetrics{}, func() {})
			defer s.work.ShutDown()
			for _, g := range tc.gangs {
				key := keyOf(g.name)
				pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, UID: types.UID("uid-" + g.name)}}
				s.offer(key, pg, gpuPods(key.Name, g.pods), nil)
			}
			for name, spec := range tc.states {
				var have, of int32
				var age time.Duration
				var extra string
				fmt.Sscanf(spec, "%d/%d %s %s", &have, &of, new(string), &extra)
				age, _ = time.ParseDuration(strings.Fields(spec)[1])
				st := autoscaling.State{Kind: autoscaling.KindPods, Name: "pods", Since: t0.Add(-age), Requested: of, Provisioned: have}
				if d, ok := s.demands[gk("ns/"+name)]; ok && extra != "stale" {
					st.Hash = d.demand.Hash
				}
				if extra == "failed" {
					st.Failed = "no capacity"
				}
				req.states[gk("ns/"+name)] = st
			}
			for name, age := range tc.failing {
				s.failed[gk("ns/"+name)] = requestFailure{why: "exceeded quota", since: t0.Add(-age)}
			}
			for name, left := range tc.backoff {
				s.backoff[gk("ns/"+name)] = requestBackoff{until: t0.Add(left), failures: 1, message: "timed out"}
			}
			verdicts := append([]outcome(nil), tc.verdicts...)
			s.plan(verdicts, t0)

			var wanted []string
			for k := range s.want {
				wanted = append(wanted, strings.TrimPrefix(k.String(), "ns/"))
			}
			sort.Strings(wanted)
			if strings.Join(wanted, ",") != strings.Join(tc.wantWanted, ",") {
				t.Errorf("wanted requests: got %v, want %v", wanted, tc.wantWanted)
			}
			byKey := map[string]outcome{}
			for _, v := range verdicts {
				byKey[strings.TrimPrefix(v.Key.String(), "ns/")] = v
			}
			for g, r := range tc.wantReason {
				if byKey[g].Reason != r {
					t.Errorf("%s: reason %q, want %q (%s)", g, byKey[g].Reason, r, byKey[g].Message)
				}
			}
			for g, m := range tc.wantMsg {
				if byKey[g].Message != m {
					t.Errorf("%s: message\n got %q\nwant %q", g, byKey[g].Message, m)
				}
			}
			var work []string
			for s.work.Len() > 0 {
				k, _ := s.work.Get()
				work = append(work, strings.TrimPrefix(k.String(), "ns/"))
				s.work.Done(k)
			}
			sort.Strings(work)
			if strings.Join(work, ",") != strings.Join(tc.wantWork, ",") {
				t.Errorf("queued for the workers: got %v, want %v", work, tc.wantWork)
			}
		})
	}
}

// TestAutoscalerSync checks what the workers do with a plan: make a wanted
// request, withdraw one no longer wanted, and say why a request failed.
func TestAutoscalerSync(t *testing.T) {
	t0 := time.Unix(10000, 0)
	req := &fakeRequester{states: map[scheduling.GroupKey]autoscaling.State{}}
	announce, announced := collectAnnounce(100)
	s := newAutoscaler(defaultAutoscaling(req), false, announce, clocktesting.NewFakePassiveClock(t0), noMetrics{}, func() {})
	defer s.work.ShutDown()
	pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "uid-a"}}
	s.offer(gk("ns/a"), pg, gpuPods("a", 8), nil)
	ctx := context.Background()

	s.plan([]outcome{outcomeOf(capacity.Verdict{Key: gk("ns/a"), Cause: capacity.CauseNoRoom})}, t0)
	if err := s.sync(ctx, gk("ns/a")); err != nil {
		t.Fatal(err)
	}
	if len(req.requested) != 1 {
		t.Fatalf("requests made: %v, want one", req.requested)
	}
	if ev := <-announced; !strings.Contains(ev, "ns/a uid-a Normal "+scheduling.EventCapacityRequested) || !strings.Contains(ev, "8 pods, in 1 shapes") {
		t.Errorf("event %q", ev)
	}
	// Made already: a second sync makes nothing.
	if err := s.sync(ctx, gk("ns/a")); err != nil || len(req.requested) != 1 {
		t.Fatalf("second sync: err %v, requests %v", err, req.requested)
	}
	// The gang is released: its request goes first.
	if err := s.beforeRelease(ctx, gk("ns/a")); err != nil || len(req.withdrawn) != 1 {
		t.Fatalf("beforeRelease: err %v, withdrawn %v", err, req.withdrawn)
	}

	// A request the API refuses: the error is kept for the message.
	req.fail = fmt.Errorf(`pods "a-cr-0" is forbidden: exceeded quota: gpus`)
	s.offer(gk("ns/a"), pg, gpuPods("a", 8), nil)
	s.plan([]outcome{outcomeOf(capacity.Verdict{Key: gk("ns/a"), Cause: capacity.CauseNoRoom})}, t0)
	if err := s.sync(ctx, gk("ns/a")); err == nil {
		t.Fatal("a refused request is no error")
	}
	v := []outcome{outcomeOf(capacity.Verdict{Key: gk("ns/a"), Cause: capacity.CauseNoRoom, Message: "does not fit"})}
	s.plan(v, t0)
	if want := "asking the autoscaler for room for 8 pods (Pods); making it failed: pods \"a-cr-0\" is forbidden: exceeded quota: gpus; now: does not fit"; v[0].Message != want {
		t.Errorf("message\n got %q\nwant %q", v[0].Message, want)
	}
}

// TestAutoscalerAnnouncesRoomOnAdmission: a gang admitted while its
// request stands says CapacityProvisioned once, whether the capacity-request
// pods were bound first (all the room provided) or not yet (new nodes took
// the gang before kube-scheduler bound them), and says which.
func TestAutoscalerAnnouncesRoomOnAdmission(t *testing.T) {
	t0 := time.Unix(10000, 0)
	tests := []struct {
		name        string
		provisioned int32
		want        string
	}{
		{"all the capacity-request pods bound", 8, "the autoscaler provided room for the gang, asked for with pods at 1970-01-01T02:46:40Z: 8 of the 8 pods asked for have it"},
		{"some bound", 3, "the gang fits now, with its request pods of 1970-01-01T02:46:40Z standing: 3 of the 8 pods asked for had room when it was admitted"},
		{"none bound yet", 0, "the gang fits now, with its request pods of 1970-01-01T02:46:40Z standing: 0 of the 8 pods asked for had room when it was admitted"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := &fakeRequester{states: map[scheduling.GroupKey]autoscaling.State{}}
			announce, announced := collectAnnounce(10)
			s := newAutoscaler(defaultAutoscaling(req), false, announce, clocktesting.NewFakePassiveClock(t0), noMetrics{}, func() {})
			defer s.work.ShutDown()
			pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "uid-a"}}
			s.offer(gk("ns/a"), pg, gpuPods("a", 8), nil)
			req.states[gk("ns/a")] = autoscaling.State{Kind: autoscaling.KindPods, Name: "pods", Since: t0, Requested: 8, Provisioned: tc.provisioned, Hash: s.demands[gk("ns/a")].demand.Hash}
			for range 2 { // a second cycle announces nothing more
				s.plan([]outcome{outcomeOf(capacity.Verdict{Key: gk("ns/a"), Admit: true})}, t0)
			}
			var got []string
			for len(announced) > 0 {
				got = append(got, <-announced)
			}
			if len(got) != 1 {
				t.Fatalf("events: %q, want one %s", got, scheduling.EventCapacityProvisioned)
			}
			if want := "ns/a uid-a Normal " + scheduling.EventCapacityProvisioned + " " + tc.want; got[0] != want {
				t.Errorf("event\n got %q\nwant %q", got[0], want)
			}
		})
	}
}

// TestAutoscalerDemandIgnoresPodOrder checks that a gang's demand, and so
// its request, is the same whatever order its pods come in (the index has
// none): else each sync would ask anew.
func TestAutoscalerDemandIgnoresPodOrder(t *testing.T) {
	s := newAutoscaler(defaultAutoscaling(&fakeRequester{states: map[scheduling.GroupKey]autoscaling.State{}}), false, discardAnnounce, clocktesting.NewFakePassiveClock(time.Unix(0, 0)), noMetrics{}, func() {})
	defer s.work.ShutDown()
	pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "uid-a"}}
	pods := gpuPods("a", 4)
	// Pods of different shapes, as an Indexed Job's are (a label each).
	for i, p := range pods {
		p.Labels["index"] = fmt.Sprint(i)
	}
	s.offer(gk("ns/a"), pg, pods, nil)
	first := s.demands[gk("ns/a")].demand.Hash
	reversed := []*corev1.Pod{pods[3], pods[1], pods[2], pods[0]}
	s.offer(gk("ns/a"), pg, reversed, nil)
	if got := s.demands[gk("ns/a")].demand.Hash; got != first {
		t.Errorf("the same pods in another order make another demand: %s, then %s", first, got)
	}
}

// discardAnnounce is an Announce that says nothing.
func discardAnnounce(scheduling.GroupKey, types.UID, admission.Event) {}

// collectAnnounce is an Announce that sends each announcement, as "key uid
// type reason message", to a channel of n.
func collectAnnounce(n int) (admission.Announce, chan string) {
	ch := make(chan string, n)
	return func(key scheduling.GroupKey, uid types.UID, e admission.Event) {
		ch <- fmt.Sprintf("%s %s %s %s %s", key, uid, e.Type, e.Reason, e.Message)
	}, ch
}
