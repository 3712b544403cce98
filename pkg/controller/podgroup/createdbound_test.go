package podgroup

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-base/metrics/testutil"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// otherNamespace is otherNS, managed as testNS is.
var otherNamespace = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: otherNS, Labels: map[string]string{corev1.LabelMetadataName: otherNS}}}

// groupAt is a PodGroup made through the API, named "namespace/name".
func groupAt(key string, mods ...groupMod) *v1alpha1.PodGroup {
	k := gk(key)
	return newGroup(1, append([]groupMod{func(pg *v1alpha1.PodGroup) {
		pg.Namespace, pg.Name, pg.UID = k.Namespace, k.Name, types.UID("uid-group-"+key)
	}}, mods...)...)
}

// asking is a gated pod that asks the controller to create its group,
// "namespace/name", with the min-count annotation.
func asking(key string) *corev1.Pod {
	k := gk(key)
	return newPod("p-"+k.Name, inNamespace(k.Namespace), inGroup(k.Name), annotated(scheduling.MinCountAnnotation, "1"),
		func(p *corev1.Pod) { p.UID = types.UID("uid-p-" + key) })
}

// syncKey runs one sync of key and fails the test on an error.
func (h *harness) syncKey(key scheduling.GroupKey) time.Duration {
	h.t.Helper()
	d, err := h.c.sync(h.t.Context(), key)
	if err != nil {
		h.t.Fatalf("sync %s: %v", key, err)
	}
	return d
}

// exists reports whether the fake API holds the PodGroup of key.
func (h *harness) exists(key scheduling.GroupKey) bool {
	_, err := h.muster.Tracker().Get(podGroupsGVR, key.Namespace, key.Name)
	return err == nil
}

// refused reads muster_controller_podgroup_creations_refused_total.
func (h *harness) refused(reason string) float64 {
	h.t.Helper()
	v, err := testutil.GetCounterMetricValue(h.c.metrics.creationsRefused.WithLabelValues(reason))
	if err != nil {
		h.t.Fatal(err)
	}
	return v
}

func notCreatedEvent(key string, n, limit int) string {
	k := gk(key)
	return fmt.Sprintf("Warning PodGroupNotCreated cannot create PodGroup %s: namespace %s holds %d PodGroups, the most beside which "+
		"Muster creates one from pods (--max-podgroups-per-namespace=%d); delete finished groups or ask an administrator", k.Name, k.Namespace, n, limit)
}

func TestMaxGroupsPerNamespace(t *testing.T) {
	created := func(key string) string { return "Normal PodGroupCreated created PodGroup " + gk(key).Name }
	cases := []struct {
		name string
		max  int
		objs []runtime.Object
		// sync is the group synced; created says whether it is created.
		sync    string
		created bool
		events  []string
		refused float64
	}{{
		name:    "below the bound, a pod naming a new group makes the controller create it",
		max:     2,
		objs:    []runtime.Object{groupAt("ns/a"), asking("ns/new")},
		sync:    "ns/new",
		created: true,
		events:  []string{created("ns/new")},
	}, {
		name: "at the bound, a pod naming a new group gets no group and one Warning that names the flag",
		max:  2,
		objs: []runtime.Object{groupAt("ns/a"), groupAt("ns/b"), asking("ns/new")},
		sync: "ns/new", events: []string{notCreatedEvent("ns/new", 2, 2)}, refused: 1,
	}, {
		name: "every group counts, whoever made it and whatever its phase",
		max:  2,
		objs: []runtime.Object{groupAt("ns/a", finishedAt(v1alpha1.ReasonSucceeded, t0)), groupAt("ns/b", groupDeletedAt(t0)), asking("ns/new")},
		sync: "ns/new", events: []string{notCreatedEvent("ns/new", 2, 2)}, refused: 1,
	}, {
		name:    "the groups of another namespace do not count",
		max:     2,
		objs:    []runtime.Object{otherNamespace, groupAt("other/a"), groupAt("other/b"), asking("ns/new")},
		sync:    "ns/new",
		created: true,
		events:  []string{created("ns/new")},
	}, {
		name:    "a namespace at the bound does not hold another namespace's groups",
		max:     2,
		objs:    []runtime.Object{otherNamespace, groupAt("ns/a"), groupAt("ns/b"), asking("other/new")},
		sync:    "other/new",
		created: true,
		events:  []string{created("other/new")},
	}, {
		name:    "0 sets no bound",
		max:     0,
		objs:    []runtime.Object{groupAt("ns/a"), groupAt("ns/b"), asking("ns/new")},
		sync:    "ns/new",
		created: true,
		events:  []string{created("ns/new")},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.MaxGroupsPerNamespace = tc.max }, tc.objs...)
			key := gk(tc.sync)
			if d := h.syncKey(key); d != 0 {
				t.Errorf("requeue after %s, want none: a deletion requeues a held group", d)
			}
			if got := h.exists(key); got != tc.created {
				t.Errorf("group %s created: %v, want %v", key, got, tc.created)
			}
			wantEvents(t, h.events(), tc.events...)
			if got := h.refused(refusedMaxPerNamespace); got != tc.refused {
				t.Errorf("refused{max-per-namespace} = %v, want %v", got, tc.refused)
			}
			if len(h.podPatches()) != 0 {
				t.Errorf("pods patched: %v; want them left gated", h.podPatches())
			}
			if tc.created {
				return
			}
			// Held again, the pod is not told again.
			h.step(time.Minute)
			h.syncKey(key)
			wantEvents(t, h.events())
		})
	}
}

// TestGroupHeldAtTheBoundIsCreatedOnceAGroupGoes checks that a deletion in
// the namespace requeues the groups held there, and only there.
func TestGroupHeldAtTheBoundIsCreatedOnceAGroupGoes(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxGroupsPerNamespace = 2 },
		otherNamespace, groupAt("ns/a"), groupAt("ns/b"), groupAt("other/x"), asking("ns/new"))
	held := gk("ns/new")
	h.syncKey(held)
	if h.exists(held) {
		t.Fatalf("group %s created at the bound", held)
	}
	h.queued()
	deleteGroup := func(key string) {
		t.Helper()
		k := gk(key)
		obj, ok, _ := h.groups.GetByKey(key)
		if !ok {
			t.Fatalf("group %s not cached", key)
		}
		if err := h.muster.Tracker().Delete(podGroupsGVR, k.Namespace, k.Name); err != nil {
			t.Fatal(err)
		}
		h.observe()
		h.c.deletePodGroup(obj)
	}

	deleteGroup("other/x")
	if got, want := h.queued(), []string{"other/x"}; !slices.Equal(got, want) {
		t.Errorf("queued after a deletion in another namespace: %v, want %v", got, want)
	}
	deleteGroup("ns/a")
	if got, want := h.queued(), []string{"ns/a", "ns/new"}; !slices.Equal(got, want) {
		t.Fatalf("queued after a deletion in the namespace: %v, want %v", got, want)
	}
	h.reset()
	h.syncKey(held)
	if !h.exists(held) {
		t.Errorf("group %s not created once a group of its namespace went", held)
	}
	wantEvents(t, h.events(), "Normal PodGroupCreated created PodGroup new")
	h.observe()
	obj, _, _ := h.groups.GetByKey("ns/new")
	h.c.addPodGroup(obj) // as the informer brings it
	if b, tu, w := h.c.created.sizes(); tu != 0 || w != 0 {
		t.Errorf("kept %d buckets, %d turns and %d waiting namespaces; want no turn and no waiting group left", b, tu, w)
	}
}

func TestCreatedGroupRate(t *testing.T) {
	type step struct {
		after time.Duration // the clock moves by this first
		// failCreate makes the create of this step fail, as over quota.
		failCreate bool
		sync       string
		// created says whether the group exists after the sync, and retry
		// is when the sync asks to be run again.
		created bool
		retry   time.Duration
	}
	// A token each 1,000 s: the bucket does not refill within a test.
	const every = 1000 * time.Second
	cases := []struct {
		name       string
		qps        float64
		burst      int
		steps      []step
		refusedNow float64
	}{{
		name: "past the burst, a new group waits for its turn, while another namespace still creates",
		qps:  0.001, burst: 2,
		steps: []step{
			{sync: "ns/g1", created: true},
			{sync: "ns/g2", created: true},
			{sync: "ns/g3", retry: every},
			{sync: "other/g4", created: true},
			{after: time.Second, sync: "ns/g3", retry: every - time.Second}, // woken early: the same turn, not a new token
			{after: every - time.Second, sync: "ns/g3", created: true},
		},
		refusedNow: 2,
	}, {
		name: "groups past the burst wait one behind another, each for a turn of its own",
		qps:  0.001, burst: 1,
		steps: []step{
			{sync: "ns/g1", created: true},
			{sync: "ns/g2", retry: every},
			{sync: "ns/g3", retry: 2 * every},
			{after: every, sync: "ns/g2", created: true},
			{sync: "ns/g3", retry: every},
		},
		refusedNow: 3,
	}, {
		name: "a create that fails is retried with the queue's backoff, not paced again: a group spends one token",
		qps:  0.001, burst: 1,
		steps: []step{
			{sync: "ns/g1", failCreate: true},
			{after: time.Second, sync: "ns/g1", created: true},
			{sync: "ns/g2", retry: every - time.Second},
		},
		refusedNow: 1,
	}, {
		name: "a qps of 0 sets no rate",
		qps:  0, burst: 0,
		steps: []step{
			{sync: "ns/g1", created: true},
			{sync: "ns/g2", created: true},
			{sync: "ns/g3", created: true},
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs := []runtime.Object{otherNamespace}
			for _, s := range tc.steps {
				if !slices.ContainsFunc(objs, func(o runtime.Object) bool { p, ok := o.(*corev1.Pod); return ok && p.UID == asking(s.sync).UID }) {
					objs = append(objs, asking(s.sync))
				}
			}
			h := newHarness(t, func(c *Config) { c.CreatedGroupQPS, c.CreatedGroupBurst = tc.qps, tc.burst }, objs...)
			for i, s := range tc.steps {
				h.clock.Step(s.after)
				h.observe()
				key := gk(s.sync)
				if s.failCreate {
					h.muster.PrependReactor("create", "podgroups", func(k8sAction) (bool, runtime.Object, error) {
						return true, nil, apierrors.NewForbidden(podGroupsGVR.GroupResource(), key.Name, errors.New("exceeded quota"))
					})
					if _, err := h.c.sync(t.Context(), key); err == nil {
						t.Fatalf("step %d, %s: a failed create returned no error, for the queue's backoff", i, key)
					}
					h.muster.ReactionChain = h.muster.ReactionChain[1:]
					continue
				}
				if got := h.syncKey(key); got != s.retry {
					t.Errorf("step %d, %s: retry after %s, want %s", i, key, got, s.retry)
				}
				if got := h.exists(key); got != s.created {
					t.Errorf("step %d, %s: created %v, want %v", i, key, got, s.created)
				}
			}
			for _, e := range h.events() {
				if !strings.Contains(e, "PodGroupCreated") {
					t.Errorf("event %q; a paced group's pods are told nothing", e)
				}
			}
			if got := h.refused(refusedRate); got != tc.refusedNow {
				t.Errorf("refused{rate} = %v, want %v", got, tc.refusedNow)
			}
		})
	}
}

// TestCreatedGroupsMemoryIsBounded checks that what the bounds keep goes
// with what it is about: a bucket once full again, a turn and a waiting
// mark once their group exists or no pod waits for it.
func TestCreatedGroupsMemoryIsBounded(t *testing.T) {
	cfg := DefaultConfig() // 10/s, burst 100: a bucket fills in 10 s.
	g := newCreatedGroups(cfg)
	for i := range 50 {
		g.take(gk(fmt.Sprintf("ns-%d/g", i)), t0)
	}
	if b, _, _ := g.sizes(); b != 50 {
		t.Fatalf("buckets = %d after 50 namespaces created a group, want 50", b)
	}
	g.take(gk("late/g"), t0.Add(10*time.Second))
	if b, _, _ := g.sizes(); b != 1 {
		t.Errorf("buckets = %d one fill time later, want 1: the full ones dropped", b)
	}

	cfg.CreatedGroupQPS, cfg.CreatedGroupBurst = 0.1, 1
	g = newCreatedGroups(cfg)
	g.take(gk("ns/g1"), t0)
	if d := g.take(gk("ns/g2"), t0); d != 10*time.Second {
		t.Fatalf("second group waits %s, want 10s", d)
	}
	g.take(gk("x/g"), t0.Add(10*time.Second)) // sweeps
	if b, _, _ := g.sizes(); b != 2 {
		t.Errorf("buckets %d; want the bucket with a turn reserved kept beside the new one", b)
	}
	g.markWaiting(gk("ns/g3"))
	for _, k := range []string{"ns/g1", "ns/g2", "ns/g3", "x/g"} {
		g.forget(gk(k))
	}
	if _, turns, waiting := g.sizes(); turns != 0 || waiting != 0 {
		t.Errorf("turns %d, waiting namespaces %d after forget; want none", turns, waiting)
	}
	g.markWaiting(gk("ns/g4"))
	if got := g.releaseWaiting("ns"); !slices.Equal(got, []scheduling.GroupKey{gk("ns/g4")}) {
		t.Errorf("released %v, want ns/g4", got)
	}
	if _, _, waiting := g.sizes(); waiting != 0 {
		t.Errorf("waiting namespaces %d after release, want none", waiting)
	}
}

// sizes returns how many buckets, turns and namespaces with groups waiting
// at the bound are kept.
func (g *createdGroups) sizes() (buckets, turns, waiting int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.buckets), len(g.turns), len(g.waiting)
}

// TestForgottenTurnsGoBack: a tenant that creates pods naming new groups
// faster than its bucket fills, and deletes them before their groups'
// turns, must not push its later groups out by the turns it gave up.
func TestForgottenTurnsGoBack(t *testing.T) {
	cfg := DefaultConfig()
	cfg.CreatedGroupQPS, cfg.CreatedGroupBurst = 1, 1
	tests := []struct {
		name   string
		forget bool
		want   time.Duration
	}{
		{"turns forgotten before they are due go back", true, time.Second},
		{"turns kept stay reserved", false, 101 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newCreatedGroups(cfg)
			g.take(gk("ns/first"), t0) // the burst: created at once
			for i := range 100 {
				key := gk(fmt.Sprintf("ns/churn-%d", i))
				g.take(key, t0)
				if tt.forget {
					g.forgetAt(key, t0) // its pod deleted before its turn
				}
			}
			if got := g.take(gk("ns/later"), t0); got != tt.want {
				t.Errorf("a later group waits %v, want %v", got, tt.want)
			}
		})
	}
}
