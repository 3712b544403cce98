package podgroup

import (
	"slices"
	"testing"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

func TestNamespaceTurns(t *testing.T) {
	k := scheduling.NewGroupKey
	tests := []struct {
		name string
		push []scheduling.GroupKey
		want []scheduling.GroupKey
	}{
		{"one namespace is first in, first out",
			[]scheduling.GroupKey{k("a", "1"), k("a", "2"), k("a", "3")},
			[]scheduling.GroupKey{k("a", "1"), k("a", "2"), k("a", "3")}},
		{"a namespace with many keys does not hold back one with few",
			[]scheduling.GroupKey{k("churn", "1"), k("churn", "2"), k("churn", "3"), k("churn", "4"), k("good", "gang")},
			[]scheduling.GroupKey{k("churn", "1"), k("good", "gang"), k("churn", "2"), k("churn", "3"), k("churn", "4")}},
		{"namespaces take turns in the order they came",
			[]scheduling.GroupKey{k("b", "1"), k("a", "1"), k("b", "2"), k("c", "1"), k("a", "2")},
			[]scheduling.GroupKey{k("b", "1"), k("a", "1"), k("c", "1"), k("b", "2"), k("a", "2")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := newNamespaceTurns()
			for _, key := range tt.push {
				q.Push(key)
			}
			if q.Len() != len(tt.push) {
				t.Fatalf("Len() = %d, want %d", q.Len(), len(tt.push))
			}
			var got []scheduling.GroupKey
			for q.Len() > 0 {
				got = append(got, q.Pop())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("popped %v, want %v", got, tt.want)
			}
			if len(q.keys) != 0 || len(q.turns) != 0 {
				t.Errorf("emptied, it still holds keys %v and turns %v", q.keys, q.turns)
			}
		})
	}
}

// TestQueueServesNamespacesInTurn goes through the controller's workqueue:
// a namespace that queued 1,000 keys first holds another's key back by one.
func TestQueueServesNamespacesInTurn(t *testing.T) {
	q := newQueue()
	defer q.ShutDown()
	for i := range 1000 {
		q.Add(scheduling.NewGroupKey("churn", string(rune('a'+i%26))+string(rune('a'+i/26))))
	}
	q.Add(scheduling.NewGroupKey("churn", "aa")) // again: deduplicated
	q.Add(scheduling.NewGroupKey("good", "gang"))
	if q.Len() != 1001 {
		t.Fatalf("Len() = %d, want 1,001 (one key added twice)", q.Len())
	}
	for i := range 2 {
		key, _ := q.Get()
		q.Done(key)
		if i == 1 && key != scheduling.NewGroupKey("good", "gang") {
			t.Fatalf("the second key served is %v, want good/gang", key)
		}
	}
}
