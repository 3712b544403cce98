package capacityadmission

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/controller/capacity"
)

// testFilters are the scheduler's filters on a cluster with no storage or
// DRA objects, stopped when the test ends.
func testFilters(tb testing.TB) *capacity.Filters {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	f, err := capacity.NewFilters(ctx, fake.NewClientset(), false)
	if err == nil {
		err = f.Start(ctx)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return f
}

// world is one admission mode fed by a scripted cluster, for comparing a
// mode that parks gangs with one that places every gang every cycle.
type world struct {
	mode *Mode
	clk  *clocktesting.FakePassiveClock
	// pods are the managed pods by group; unmanaged the other pods.
	pods      map[scheduling.GroupKey][]*corev1.Pod
	unmanaged []*corev1.Pod
	rv        int
	// parks counts the gangs that cycles found parked and did not place.
	parks int
}

func newWorld(f *capacity.Filters) *world {
	clk := clocktesting.NewFakePassiveClock(time.Unix(10000, 0))
	m := &Mode{tracker: capacity.NewTracker(false), queue: newAdmissionQueue(), filters: f, clock: clk,
		enqueue: func(scheduling.GroupKey) {}, metrics: noMetrics{}}
	return &world{mode: m, clk: clk, pods: map[scheduling.GroupKey][]*corev1.Pod{}}
}

func (w *world) nextRV() string { w.rv++; return fmt.Sprint(w.rv) }

func testNode(name string, cpu int, zone string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{"kubernetes.io/hostname": name, "zone": zone}},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(int64(cpu), resource.DecimalSI),
				corev1.ResourceMemory: resource.MustParse("64Gi"), corev1.ResourcePods: resource.MustParse("110")},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
}

func testPod(group, name string, milli int64, zone string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(milli, resource.DecimalSI)}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	if group != "" {
		p.Labels[scheduling.PodGroupLabel] = group
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: scheduling.AdmissionGate}}
	}
	if zone != "" {
		p.Spec.NodeSelector = map[string]string{"zone": zone}
	}
	return p
}

// repel is required anti-affinity to pods labelled k=v, one domain of
// topology key apart.
func repel(k, v, topology string) *corev1.Affinity {
	return &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}, TopologyKey: topology}}}}
}

// cycle runs one admission cycle and binds what it admitted, as the
// group's sync and kube-scheduler would, and returns the admissions by
// pod name and the reason each waiting group waits.
func (w *world) cycle() (map[string]string, map[string]string) {
	w.mode.admitCycle()
	q := w.mode.queue
	q.mu.Lock()
	w.parks += q.parkedLast
	decided := map[scheduling.GroupKey]capacity.Verdict{}
	for k, v := range q.decided {
		decided[k] = v
	}
	waiting := map[string]string{}
	for k, o := range q.waiting {
		waiting[k.Name] = o.Reason
	}
	q.mu.Unlock()
	admitted := map[string]string{}
	for key, v := range decided {
		for _, a := range v.Assignments {
			admitted[a.Pod.Name] = a.Node
			for i, p := range w.pods[key] {
				if p.UID == a.Pod.UID {
					b := p.DeepCopy()
					b.ResourceVersion, b.Spec.SchedulingGates, b.Spec.NodeName, b.Status.Phase = w.nextRV(), nil, a.Node, corev1.PodRunning
					w.pods[key][i] = b
					w.mode.tracker.SetManagedPod(key, b, false)
				}
			}
		}
		w.mode.tracker.SetGroupState(key, &capacity.GroupState{Admitted: true, Since: w.clk.Now()})
		q.recorded(key)
		q.withdraw(key)
	}
	return admitted, waiting
}

// TestParkingChangesNoDecision drives two admission modes through the same
// random cluster history (gangs of one to four pods, some spread one per
// node, some shunning the zones of a kind of pods, some of that kind,
// which other pods repel by zone, some with nodeSelectors; pods of other
// kinds; nodes changing; under BestEffortFIFO for odd seeds, StrictFIFO
// for even ones), one parking gangs by their hints and one with
// its parked gangs let go before every cycle, so that it places every
// gang every cycle as before hints. Every cycle must admit the same pods
// to the same nodes, and leave the same groups waiting for the same
// reasons; and the first mode must have skipped placements.
func TestParkingChangesNoDecision(t *testing.T) {
	f := testFilters(t)
	for seed := uint64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			parking, placing := newWorld(f), newWorld(f)
			if seed%2 == 0 {
				parking.mode.strategy, placing.mode.strategy = capacity.StrictFIFO, capacity.StrictFIFO
			}
			both := func(do func(w *world)) { do(parking); do(placing) }
			zones := []string{"a", "b"}
			nodes := map[string]*corev1.Node{}
			for i := range 5 {
				n := testNode(fmt.Sprint("n", i), 8, zones[i%2])
				nodes[n.Name] = n
				both(func(w *world) { w.mode.tracker.SetNode(n.DeepCopy()) })
			}
			gangs := 0
			for step := range 120 {
				switch r := rng.IntN(10); {
				case r < 4: // a new gang
					gangs++
					name := fmt.Sprint("g", gangs)
					n, milli, zone := 1+rng.IntN(4), int64(500*(1+rng.IntN(10))), ""
					if rng.IntN(3) == 0 {
						zone = zones[rng.IntN(2)]
					}
					prio := int32(rng.IntN(2))
					// One gang in four spreads one pod per node, or shuns
					// the zones of pods of the batch kind; one in three is
					// of that kind, which some other pods repel by zone.
					spread, shun, batch := rng.IntN(4) == 0, rng.IntN(4) == 0, rng.IntN(3) == 0
					// One gang in four must run in one zone (topology.go).
					var topo *capacity.Topology
					if rng.IntN(4) == 0 {
						topo = &capacity.Topology{Levels: []string{"zone"}, Required: true}
					}
					both(func(w *world) {
						key := scheduling.GroupKey{Namespace: "ns", Name: name}
						var ps []*corev1.Pod
						for i := range n {
							p := testPod(name, fmt.Sprintf("%s-%d", name, i), milli, zone)
							switch {
							case spread:
								p.Labels["gang"] = name
								p.Spec.Affinity = repel("gang", name, "kubernetes.io/hostname")
							case shun:
								p.Spec.Affinity = repel("kind", "batch", "zone")
							case batch:
								p.Labels["kind"] = "batch"
							}
							p.ResourceVersion = w.nextRV()
							ps = append(ps, p)
							w.mode.tracker.SetManagedPod(key, p, true)
						}
						w.pods[key] = ps
						w.mode.queue.offer(capacity.Candidate{Key: key, Priority: prio, Created: w.clk.Now().Add(time.Duration(step) * time.Second), Pods: ps, Need: n,
							Topology: topo})
					})
				case r < 6: // a running gang ends
					var running []scheduling.GroupKey
					for key, ps := range parking.pods {
						if ps[0].Spec.NodeName != "" {
							running = append(running, key)
						}
					}
					if len(running) == 0 {
						continue
					}
					key := pick(running, rng)
					both(func(w *world) {
						for _, p := range w.pods[key] {
							w.mode.tracker.RemoveManagedPod(p.UID)
						}
						delete(w.pods, key)
						w.mode.tracker.SetGroupState(key, nil)
					})
				case r < 7: // a pod of another kind binds
					node := fmt.Sprint("n", rng.IntN(5))
					p := testPod("", fmt.Sprint("u", step), int64(500*(1+rng.IntN(6))), "")
					p.Spec.NodeName, p.Status.Phase = node, corev1.PodRunning
					if rng.IntN(3) == 0 {
						p.Labels["kind"] = "batch"
						p.Spec.Affinity = repel("kind", "batch", "zone")
					}
					both(func(w *world) { w.mode.tracker.SetUnmanagedPod(p.DeepCopy()); w.unmanaged = append(w.unmanaged, p) })
				case r < 8: // one of them ends
					if len(parking.unmanaged) == 0 {
						continue
					}
					i := rng.IntN(len(parking.unmanaged))
					both(func(w *world) {
						w.mode.tracker.RemoveUnmanagedPod(w.unmanaged[i].UID)
						w.unmanaged = append(w.unmanaged[:i], w.unmanaged[i+1:]...)
					})
				case r < 9: // a running pod's status changes: nothing freed
					for key, ps := range parking.pods {
						if ps[0].Spec.NodeName == "" {
							continue
						}
						both(func(w *world) {
							b := w.pods[key][0].DeepCopy()
							b.ResourceVersion = w.nextRV()
							b.Status.Conditions = append(b.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
							w.pods[key][0] = b
							w.mode.tracker.SetManagedPod(key, b, false)
						})
						break
					}
				default: // a node moves to the other zone, or grows
					n := nodes[fmt.Sprint("n", rng.IntN(5))]
					if rng.IntN(2) == 0 {
						n.Labels["zone"] = zones[(map[string]int{"a": 1, "b": 0})[n.Labels["zone"]]]
					} else {
						n.Status.Allocatable[corev1.ResourceCPU] = *resource.NewQuantity(n.Status.Allocatable.Cpu().Value()+2, resource.DecimalSI)
					}
					both(func(w *world) { w.mode.tracker.SetNode(n.DeepCopy()) })
				}
				placing.mode.queue.mu.Lock()
				clear(placing.mode.queue.parked)
				placing.mode.queue.mu.Unlock()
				pa, pw := parking.cycle()
				ca, cw := placing.cycle()
				if diff := cmp.Diff(ca, pa); diff != "" {
					t.Fatalf("step %d: admissions differ (-placing every gang +parking):\n%s", step, diff)
				}
				if diff := cmp.Diff(cw, pw); diff != "" {
					t.Fatalf("step %d: waiting reasons differ (-placing every gang +parking):\n%s", step, diff)
				}
				both(func(w *world) { w.clk.SetTime(w.clk.Now().Add(time.Second)) })
			}
			t.Logf("%d gangs found parked and not placed", parking.parks)
			if parking.parks == 0 {
				t.Errorf("no cycle found a gang parked: the test exercised nothing")
			}
			if placing.parks != 0 {
				t.Errorf("the mode that places every gang found %d parked", placing.parks)
			}
		})
	}
}

// pick picks one of keys, the same whatever order a map gave them in.
func pick(keys []scheduling.GroupKey, rng *rand.Rand) scheduling.GroupKey {
	slices.SortFunc(keys, func(a, b scheduling.GroupKey) int { return strings.Compare(a.Name, b.Name) })
	return keys[rng.IntN(len(keys))]
}
