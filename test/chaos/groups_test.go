package chaos

import (
	"fmt"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/generated/informers/externalversions"
)

// groupWatch records, from an informer on the load's PodGroups, each
// preemption that a group's status shows (it is cleared once the group is
// admitted, so only a watch sees them all, or nearly: a relist can miss
// one) and each group seen Preempted=True.
type groupWatch struct {
	mu        sync.Mutex
	decisions map[string]decision // by preemptor and time
	preempted map[string]bool
}

// decision is one preemption as its preemptor's status recorded it.
type decision struct {
	preemptor string
	v1alpha1.PodGroupPreemption
}

// watchGroups runs the informer until the returned func is called.
func (l *load) watchGroups() (*groupWatch, func()) {
	w := &groupWatch{decisions: map[string]decision{}, preempted: map[string]bool{}}
	factory := externalversions.NewSharedInformerFactoryWithOptions(clients.muster, 0, externalversions.WithNamespace(l.ns))
	informer := factory.Scheduling().V1alpha1().PodGroups().Informer()
	handle := func(obj any) {
		pg, ok := obj.(*v1alpha1.PodGroup)
		if !ok || l.byName[pg.Name] == nil {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if meta.IsStatusConditionTrue(pg.Status.Conditions, v1alpha1.ConditionPreempted) {
			w.preempted[pg.Name] = true
		}
		if p := pg.Status.Preemption; p != nil {
			w.decisions[pg.Name+"@"+p.Time.UTC().String()] = decision{preemptor: pg.Name, PodGroupPreemption: *p.DeepCopy()}
		}
	}
	_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    handle,
		UpdateFunc: func(_, obj any) { handle(obj) },
	})
	stop := make(chan struct{})
	factory.Start(stop)
	return w, func() { close(stop); factory.Shutdown() }
}

// seenPreempted lists the groups seen Preempted=True.
func (w *groupWatch) seenPreempted() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var names []string
	for name := range w.preempted {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// check compares every preemption seen with the classes the load gave the
// gangs: the preemptor's priority and each victim's are their classes'
// values (every pod of a gang has its gang's class), and each victim's is
// strictly lower. It returns how many preemptions and victims it saw, and
// what is wrong.
func (w *groupWatch) check(l *load) (preemptions, victims int, bad []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, d := range w.decisions {
		preemptions++
		p := l.byName[d.preemptor]
		if d.Priority != p.class.value {
			bad = append(bad, fmt.Sprintf("%s preempted at priority %d, but its pods are all %s (%d)", d.preemptor, d.Priority, p.class.name, p.class.value))
		}
		for _, v := range d.Victims {
			victims++
			g := l.byName[v.Name]
			switch {
			case v.Kind != v1alpha1.VictimKindPodGroup || v.Namespace != l.ns || g == nil:
				bad = append(bad, fmt.Sprintf("%s chose %s %s/%s, which is none of the load's gangs", d.preemptor, v.Kind, v.Namespace, v.Name))
			case v.Priority != g.class.value:
				bad = append(bad, fmt.Sprintf("%s chose %s as of priority %d, but its pods are all %s (%d)", d.preemptor, v.Name, v.Priority, g.class.name, g.class.value))
			case g.class.value >= p.class.value:
				bad = append(bad, fmt.Sprintf("%s (%s) chose %s (%s), which is not of strictly lower priority", d.preemptor, p.class.name, v.Name, g.class.name))
			}
		}
	}
	return preemptions, victims, bad
}
