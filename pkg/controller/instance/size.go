package instance

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// sizeOf returns how many pods obj runs at once as one gang, for the kinds
// whose spec says so, and false for any other kind or a spec it cannot
// read. A count that does not fit a gang (0, negative, past int32) is
// false too: the controller then asks for the min-count annotation.
func sizeOf(obj *unstructured.Unstructured) (int32, bool) {
	gk := obj.GroupVersionKind().GroupKind()
	size, ok := sizers[gk]
	if !ok {
		return 0, false
	}
	n, ok := size(obj.Object)
	if !ok || n <= 0 || n > 1<<31-1 {
		return 0, false
	}
	return int32(n), true
}

// sizers read the size of each kind from its object.
var sizers = map[schema.GroupKind]func(map[string]any) (int64, bool){
	{Group: "batch", Kind: "Job"}: func(o map[string]any) (int64, bool) {
		return jobSize(o, "spec")
	},
	{Group: "jobset.x-k8s.io", Kind: "JobSet"}: jobSetSize,
	{Group: "leaderworkerset.x-k8s.io", Kind: "LeaderWorkerSet"}: func(o map[string]any) (int64, bool) {
		return intOr(o, 1, "spec", "leaderWorkerTemplate", "size")
	},
	{Group: "ray.io", Kind: "RayCluster"}: rayClusterSize,
}

// jobSize is the pods a Job spec at path runs at once: its parallelism
// (1 when unset), but no more than its completions when those are set.
func jobSize(o map[string]any, path ...string) (int64, bool) {
	parallelism, ok := intOr(o, 1, append(path, "parallelism")...)
	if !ok {
		return 0, false
	}
	completions, ok := intOr(o, parallelism, append(path, "completions")...)
	if !ok {
		return 0, false
	}
	return min(parallelism, completions), true
}

// jobSetSize sums, over the replicated jobs, replicas (1 when unset) times
// the size of the Job template.
func jobSetSize(o map[string]any) (int64, bool) {
	jobs, found, err := unstructured.NestedSlice(o, "spec", "replicatedJobs")
	if err != nil || !found || len(jobs) == 0 {
		return 0, false
	}
	var total int64
	for _, j := range jobs {
		job, ok := j.(map[string]any)
		if !ok {
			return 0, false
		}
		replicas, ok := intOr(job, 1, "replicas")
		if !ok {
			return 0, false
		}
		size, ok := jobSize(job, "template", "spec")
		if !ok {
			return 0, false
		}
		total += replicas * size
	}
	return total, true
}

// rayClusterSize is the head plus, for each worker group, its replicas
// (its minReplicas when unset, as KubeRay starts it) times its hosts.
func rayClusterSize(o map[string]any) (int64, bool) {
	groups, _, err := unstructured.NestedSlice(o, "spec", "workerGroupSpecs")
	if err != nil {
		return 0, false
	}
	total := int64(1)
	for _, g := range groups {
		group, ok := g.(map[string]any)
		if !ok {
			return 0, false
		}
		minReplicas, ok := intOr(group, 0, "minReplicas")
		if !ok {
			return 0, false
		}
		replicas, ok := intOr(group, minReplicas, "replicas")
		if !ok {
			return 0, false
		}
		hosts, ok := intOr(group, 1, "numOfHosts")
		if !ok {
			return 0, false
		}
		total += replicas * hosts
	}
	return total, true
}

// intOr reads the integer at path, or def when it is absent or null. A
// value of another type is false.
func intOr(o map[string]any, def int64, path ...string) (int64, bool) {
	v, found, err := unstructured.NestedFieldNoCopy(o, path...)
	if err != nil {
		return 0, false
	}
	if !found || v == nil {
		return def, true
	}
	switch n := v.(type) {
	case int64:
		return n, n >= 0
	case float64:
		// JSON numbers decoded without the unstructured codec.
		if n != float64(int64(n)) || n < 0 {
			return 0, false
		}
		return int64(n), true
	}
	return 0, false
}
