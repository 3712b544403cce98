package podgroup

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

func TestWrittenGroups(t *testing.T) {
	pg := func(uid, rv string) *v1alpha1.PodGroup {
		return &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), ResourceVersion: rv}}
	}
	cases := []struct {
		name   string
		writes [][2]*v1alpha1.PodGroup // from, written
		cached *v1alpha1.PodGroup
		want   string // resourceVersion returned
	}{
		{"no write: the cache", nil, pg("u", "1"), "1"},
		{"the cache still shows what the write replaced: the written group", [][2]*v1alpha1.PodGroup{{pg("u", "1"), pg("u", "2")}}, pg("u", "1"), "2"},
		{"two writes and a cache older than both: the last written", [][2]*v1alpha1.PodGroup{{pg("u", "1"), pg("u", "2")}, {pg("u", "2"), pg("u", "3")}}, pg("u", "1"), "3"},
		{"the cache caught up: the cache", [][2]*v1alpha1.PodGroup{{pg("u", "1"), pg("u", "2")}}, pg("u", "2"), "2"},
		{"someone else wrote after us: the cache", [][2]*v1alpha1.PodGroup{{pg("u", "1"), pg("u", "2")}}, pg("u", "5"), "5"},
		{"a new group of the same name: the cache", [][2]*v1alpha1.PodGroup{{pg("u", "1"), pg("u", "2")}}, pg("v", "1"), "1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newGroupMemories()
			for _, wr := range tc.writes {
				w.wrote(testKey, wr[0], wr[1])
			}
			if got := w.fresh(testKey, tc.cached).ResourceVersion; got != tc.want {
				t.Errorf("fresh = resourceVersion %s, want %s", got, tc.want)
			}
		})
	}
	t.Run("an entry is dropped once the cache caught up", func(t *testing.T) {
		w := newGroupMemories()
		w.wrote(testKey, pg("u", "1"), pg("u", "2"))
		w.fresh(testKey, pg("u", "2"))
		w.save(testKey)
		if len(w.byGroup) != 0 {
			t.Errorf("entries = %v, want none", w.byGroup)
		}
	})
}
