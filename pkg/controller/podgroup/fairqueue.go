package podgroup

import (
	"k8s.io/client-go/util/workqueue"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// newQueue is the controller's workqueue: client-go's, with its dedup,
// delays and rate limits, over a store that takes namespaces in turn.
func newQueue() workqueue.TypedRateLimitingInterface[scheduling.GroupKey] {
	const name = "podgroup"
	fifo := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[scheduling.GroupKey]{Name: name, Queue: newNamespaceTurns()})
	delaying := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[scheduling.GroupKey]{Name: name, Queue: fifo})
	return workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[scheduling.GroupKey](),
		workqueue.TypedRateLimitingQueueConfig[scheduling.GroupKey]{Name: name, DelayingQueue: delaying})
}

// namespaceTurns is a workqueue store (workqueue.Queue) that is first in,
// first out within a namespace and takes the namespaces that have keys in
// turn. One FIFO for the whole cluster let a tenant that churns pods, each
// naming a group of its own, queue thousands of keys ahead of another
// tenant's gang, which then waited for all of them (make abuse: 47 s for a
// release that takes 40 ms). In turns, a key waits behind at most one key
// of each other namespace with work, as APF's fair queuing does for
// requests.
//
// The workqueue calls it from one goroutine at a time, under its own lock.
type namespaceTurns struct {
	// keys holds each namespace's keys, oldest first, for namespaces with
	// any.
	keys map[string][]scheduling.GroupKey
	// turns holds the namespaces with keys, next first; each is in it once.
	turns []string
	n     int
}

func newNamespaceTurns() *namespaceTurns {
	return &namespaceTurns{keys: map[string][]scheduling.GroupKey{}}
}

// Touch keeps a key that is added again where it is: the workqueue does
// not add a key it holds twice.
func (q *namespaceTurns) Touch(scheduling.GroupKey) {}

// Push appends key to its namespace's keys, and the namespace to the
// turns when it had none.
func (q *namespaceTurns) Push(key scheduling.GroupKey) {
	ks := q.keys[key.Namespace]
	if len(ks) == 0 {
		q.turns = append(q.turns, key.Namespace)
	}
	q.keys[key.Namespace] = append(ks, key)
	q.n++
}

func (q *namespaceTurns) Len() int { return q.n }

// Pop takes the oldest key of the namespace whose turn it is, and puts
// the namespace last when it has more. The workqueue calls it only when
// Len is above 0.
func (q *namespaceTurns) Pop() scheduling.GroupKey {
	ns := q.turns[0]
	q.turns[0] = ""
	q.turns = q.turns[1:]
	ks := q.keys[ns]
	key := ks[0]
	ks[0] = scheduling.GroupKey{}
	if ks = ks[1:]; len(ks) == 0 {
		delete(q.keys, ns)
	} else {
		q.keys[ns] = ks
		q.turns = append(q.turns, ns)
	}
	q.n--
	return key
}
