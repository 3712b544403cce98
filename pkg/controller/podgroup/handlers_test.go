package podgroup

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// queued drains the queue and returns its keys, sorted.
func (h *harness) queued() []string {
	var keys []string
	for h.c.queue.Len() > 0 {
		k, _ := h.c.queue.Get()
		h.c.queue.Done(k)
		h.c.queue.Forget(k)
		keys = append(keys, k.String())
	}
	slices.Sort(keys)
	return keys
}

func withRV(rv string, mods ...podMod) podMod {
	return func(p *corev1.Pod) {
		p.ResourceVersion = rv
		for _, m := range mods {
			m(p)
		}
	}
}

// oneOffReasons are the pod events that warnOnce keeps from repeating.
var oneOffReasons = []string{scheduling.EventWaitingForPodGroup, scheduling.EventPodGroupDeleted, scheduling.EventMinCountMismatch, scheduling.EventInvalidAnnotation, scheduling.EventPodGroupFinished, scheduling.EventPodGroupNotCreated}

func TestHandlers(t *testing.T) {
	kubeSystem := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: "kube-system", Labels: map[string]string{corev1.LabelMetadataName: "kube-system"},
	}}
	unlabelled := func(p *corev1.Pod) { delete(p.Labels, scheduling.PodGroupLabel) }
	cases := []struct {
		name  string
		event func(c *Controller)
		// want are the keys queued.
		want  []string
		check func(t *testing.T, h *harness)
	}{{
		name:  "a new pod of a group queues its group and notes when it was seen",
		event: func(c *Controller) { c.addPod(newPod("p-0")) },
		want:  []string{testKey.String()},
		check: func(t *testing.T, h *harness) {
			if seen, ok := h.c.memory.lastPodSeenOf(testKey); !ok || !seen.Equal(t0) {
				t.Errorf("lastPodSeen = %v, %v; want %s", seen, ok, t0)
			}
		},
	}, {
		name:  "a new pod without the group label queues nothing",
		event: func(c *Controller) { c.addPod(newPod("p-0", unlabelled)) },
	}, {
		name:  "a new pod in an excluded namespace queues nothing",
		event: func(c *Controller) { c.addPod(newPod("p-0", inNamespace("kube-system"))) },
	}, {
		name:  "a new pod in an unknown namespace queues nothing",
		event: func(c *Controller) { c.addPod(newPod("p-0", inNamespace("elsewhere"))) },
	}, {
		name: "a resync, with an unchanged resourceVersion, queues nothing",
		event: func(c *Controller) {
			c.updatePod(newPod("p-0", withRV("5")), newPod("p-0", withRV("5")))
		},
	}, {
		name: "an updated pod queues its group",
		event: func(c *Controller) {
			c.updatePod(newPod("p-0", withRV("5")), newPod("p-0", withRV("6", running)))
		},
		want: []string{testKey.String()},
	}, {
		name: "an update that shows the finalizer gone settles the expected removal",
		event: func(c *Controller) {
			c.updatePod(newPod("p-0", withRV("5", succeeded)), newPod("p-0", withRV("6", succeeded, noFinalizer)))
		},
		want: []string{testKey.String()},
	}, {
		name: "an update that still shows the finalizer settles nothing",
		event: func(c *Controller) {
			c.updatePod(newPod("p-0", withRV("5", running)), newPod("p-0", withRV("6", succeeded)))
		},
		want: []string{testKey.String()},
	}, {
		name: "an update in an excluded namespace settles the expected removal but queues nothing",
		event: func(c *Controller) {
			c.updatePod(newPod("p-0", inNamespace("kube-system"), withRV("5")), newPod("p-0", inNamespace("kube-system"), withRV("6", noFinalizer)))
		},
	}, {
		name: "a pod that changes group queues both groups",
		event: func(c *Controller) {
			c.updatePod(newPod("p-0", withRV("5", inGroup("old"))), newPod("p-0", withRV("6")))
		},
		want: []string{testNS + "/old", testKey.String()},
	}, {
		name: "a pod that loses its label queues the group it left",
		event: func(c *Controller) {
			c.updatePod(newPod("p-0", withRV("5")), newPod("p-0", withRV("6", unlabelled)))
		},
		want: []string{testKey.String()},
	}, {
		name:  "a deleted pod queues its group, settles its expectation and forgets its one-off events",
		event: func(c *Controller) { c.deletePod(newPod("p-0")) },
		want:  []string{testKey.String()},
		check: func(t *testing.T, h *harness) {
			for _, r := range oneOffReasons {
				if h.c.hasWarned("uid-p-0", r) {
					t.Errorf("%s is still remembered for the deleted pod", r)
				}
			}
			if !h.c.hasWarned("uid-p-1", scheduling.EventWaitingForPodGroup) {
				t.Errorf("another pod's event was forgotten")
			}
		},
	}, {
		name: "a pod deleted while the watch was down arrives as a tombstone",
		event: func(c *Controller) {
			c.deletePod(cache.DeletedFinalStateUnknown{Key: testNS + "/p-0", Obj: newPod("p-0")})
		},
		want: []string{testKey.String()},
	}, {
		name:  "a tombstone of something else is ignored",
		event: func(c *Controller) { c.deletePod(cache.DeletedFinalStateUnknown{Key: "x", Obj: &corev1.Namespace{}}) },
	}, {
		name:  "a delete event of something that is no pod is ignored",
		event: func(c *Controller) { c.deletePod(&corev1.Namespace{}) },
	}, {
		name:  "a PodGroup event queues the group",
		event: func(c *Controller) { c.addPodGroup(newGroup(2)) },
		want:  []string{testKey.String()},
	}, {
		name:  "a deleted PodGroup queues its key for its orphans and forgets its batch clock and its last pod",
		event: func(c *Controller) { c.deletePodGroup(newGroup(2)) },
		want:  []string{testKey.String()},
		check: func(t *testing.T, h *harness) {
			if _, ok := h.c.memory.batchStartOf(testKey); ok {
				t.Errorf("batchStart still remembered for a deleted group")
			}
			// Else a group re-created with the same name, maybe days later,
			// would report that long a gate-removal latency.
			if _, ok := h.c.memory.lastPodSeenOf(testKey); ok {
				t.Errorf("lastPodSeen still remembered for a deleted group")
			}
		},
	}, {
		name: "a deleted PodGroup may arrive as a tombstone",
		event: func(c *Controller) {
			c.deletePodGroup(cache.DeletedFinalStateUnknown{Key: testKey.String(), Obj: newGroup(2)})
		},
		want: []string{testKey.String()},
	}, {
		name:  "a PodGroup delete event of something that has no key is ignored",
		event: func(c *Controller) { c.deletePodGroup(42) },
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil, kubeSystem)
			h.c.memory.expect(testKey, finalizersRemoved, "uid-p-0")
			for _, r := range oneOffReasons {
				h.c.warnOnce("uid-p-0", r, func() {})
			}
			h.c.warnOnce("uid-p-1", scheduling.EventWaitingForPodGroup, func() {})
			h.c.flushWait(testKey, t0.Add(-time.Second))
			h.c.memory.sawPod(testKey, t0.Add(-time.Second))
			tc.event(h.c)
			if got := h.queued(); !slices.Equal(got, tc.want) {
				t.Errorf("queued %v, want %v", got, tc.want)
			}
			// Only a sync's own snapshot settles an expectation, never an event.
			if !h.c.memory.expecting(testKey, finalizersRemoved, "uid-p-0") {
				t.Errorf("event %q dropped the expectation for p-0", tc.name)
			}
			if tc.check != nil {
				tc.check(t, h)
			}
		})
	}
}
