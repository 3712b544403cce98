package podgroup

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// benchCache fills an indexed pod cache with groups × perGroup pods.
func benchCache(b *testing.B, groups, perGroup int) cache.Indexer {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := idx.AddIndexers(cache.Indexers{GroupIndex: func(obj interface{}) ([]string, error) {
		if key, ok := podGroupKey(obj.(*corev1.Pod)); ok {
			return []string{key.String()}, nil
		}
		return nil, nil
	}}); err != nil {
		b.Fatal(err)
	}
	for g := range groups {
		for i := range perGroup {
			p := newPod(fmt.Sprintf("g%d-p%d", g, i), inGroup(fmt.Sprintf("g%d", g)))
			if err := idx.Add(p); err != nil {
				b.Fatal(err)
			}
		}
	}
	return idx
}

// BenchmarkPodsOfGroup compares reading one group's pods through GroupIndex,
// as sync does, with scanning the whole cache, on 200 groups of 50 pods.
func BenchmarkPodsOfGroup(b *testing.B) {
	idx := benchCache(b, 200, 50)
	key := testNS + "/g7"
	b.Run("index", func(b *testing.B) {
		for b.Loop() {
			objs, err := idx.ByIndex(GroupIndex, key)
			if err != nil || len(objs) != 50 {
				b.Fatalf("got %d pods, %v", len(objs), err)
			}
		}
	})
	b.Run("scan", func(b *testing.B) {
		for b.Loop() {
			n := 0
			for _, o := range idx.List() {
				p := o.(*corev1.Pod)
				if p.Namespace == testNS && p.Labels[scheduling.PodGroupLabel] == "g7" {
					n++
				}
			}
			if n != 50 {
				b.Fatalf("got %d pods", n)
			}
		}
	})
}

// BenchmarkLink measures classifying the pods of one group of 1,000.
func BenchmarkClassifyPods(b *testing.B) {
	pods := make([]*corev1.Pod, 0, 1000)
	for i := range 1000 {
		mods := []podMod{ungated, onNode("n"), running, ready}
		if i%4 == 0 {
			mods = append(mods, succeeded)
		}
		pods = append(pods, newPod(fmt.Sprintf("p-%d", i), mods...))
	}
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		v := classifyPods(pods, now, true)
		if v.pods != 1000 {
			b.Fatalf("pods = %d", v.pods)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/pod")
}
