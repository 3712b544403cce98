package whatif

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// FuzzFromReview feeds arbitrary objects and groups to FromReview, from
// the seeds of the tables. It must never panic; a refusal names fields
// under spec and returns no gang; an answer is one gang, of at most
// MaxPods pods, each named, in the review's namespace, naming the group.
// Run it with: go test ./pkg/whatif -run '^$' -fuzz FuzzFromReview -fuzztime 1m
func FuzzFromReview(f *testing.F) {
	encode := func(pg *v1alpha1.PodGroup) []byte {
		if pg == nil {
			return nil
		}
		b, err := json.Marshal(pg)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	for _, c := range gangCases() {
		f.Add(reviewOf(f, c.object, nil).Object.Raw, encode(c.podGroup))
	}
	for _, c := range refusalCases() {
		f.Add(reviewOf(f, c.object, nil).Object.Raw, encode(c.podGroup))
	}
	f.Add([]byte(`{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"List","items":[]}]}`), []byte(`{"metadata":{"name":"g"}}`))
	f.Add([]byte(`{"apiVersion":"jobset.x-k8s.io/v1alpha2","kind":"JobSet","metadata":{"name":"t"},"spec":{"replicatedJobs":[{"name":"w","replicas":2147483647,"template":{"spec":{"parallelism":2147483647}}}]}}`), []byte(`null`))
	f.Add([]byte(`{"apiVersion":"batch/v1","kind":"Job","metadata":{"generateName":"-"},"spec":{"completionMode":"Indexed","completions":3,"template":{"metadata":{"labels":{"scheduling.muster.dev/pod-group":""},"annotations":{"scheduling.muster.dev/group-by":"instance"}}}}}`), []byte(`{"spec":{"schedulingPolicy":{"gang":{"minCount":-1}}}}`))
	f.Add([]byte(`null`), []byte(`[]`))
	f.Add([]byte(nil), []byte(`{"metadata":{"name":"g"},"spec":{"schedulingPolicy":{"gang":{"minCount":3}},"roles":[{"name":"a","count":1,"template":{"requests":{"cpu":"1"}}},{"name":"b","count":2,"createdLater":true,"template":{}}]}}`))

	lookup := workloadLookup{&fakeLookup{
		groups:    map[string]*v1alpha1.PodGroup{ns + "/stored": gangGroup("stored", 2)},
		classes:   []*schedulingv1.PriorityClass{class("high", 1000, false, corev1.PreemptNever), class("default", 10, true, "")},
		workloads: map[string]*v1alpha1.Workload{ns + "/llm": workloadWith("llm", "workers", 3)},
	}}
	f.Fuzz(func(t *testing.T, object, podGroup []byte) {
		spec := &v1alpha1.WhatIfReviewSpec{Object: runtime.RawExtension{Raw: object}}
		if len(podGroup) > 0 {
			var pg v1alpha1.PodGroup
			if json.Unmarshal(podGroup, &pg) == nil {
				spec.PodGroup = &pg
			}
		}
		g, errs := FromReview(ns, spec, lookup)
		if len(errs) > 0 {
			if g != nil {
				t.Fatalf("refused (%v) with a gang", errs)
			}
			for _, e := range errs {
				if e.Field != "spec" && !strings.HasPrefix(e.Field, "spec.") {
					t.Fatalf("refusal %q is not under spec", e.Error())
				}
			}
			return
		}
		switch {
		case g == nil || g.PodGroup == nil:
			t.Fatalf("no refusal and no gang: %+v", g)
		case len(g.Pods) == 0 || len(g.Pods) > MaxPods || len(g.Pods) != len(g.Names):
			t.Fatalf("%d pods, %d names", len(g.Pods), len(g.Names))
		case g.PodGroup.Namespace != ns || g.PodGroup.Name == "" || g.Need < 1:
			t.Fatalf("group %s/%s needs %d", g.PodGroup.Namespace, g.PodGroup.Name, g.Need)
		}
		for i, p := range g.Pods {
			if p.Namespace != ns || p.Name == "" || p.Labels[scheduling.PodGroupLabel] != g.PodGroup.Name || p.Spec.Priority == nil {
				t.Fatalf("pod %d (%s) is %s/%s of group %q", i, g.Names[i], p.Namespace, p.Name, p.Labels[scheduling.PodGroupLabel])
			}
		}
	})
}
