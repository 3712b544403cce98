package podgroup

import (
	"github.com/muster-dev/muster/pkg/controller/capacity"

	"math"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name    string
		mod     func(*Config)
		wantErr string
	}{
		{name: "the defaults are valid", mod: func(*Config) {}},
		{name: "at least one worker", mod: func(c *Config) { c.Workers = 0 }, wantErr: "--controller-workers"},
		{name: "at least one patch in flight", mod: func(c *Config) { c.PatchConcurrency = 0 }, wantErr: "--pod-patch-concurrency"},
		{name: "a negative release grace is rejected", mod: func(c *Config) { c.ReleaseGrace = -time.Second }, wantErr: "--release-grace"},
		{name: "a negative preemption min runtime is rejected", mod: func(c *Config) { c.PreemptionMinRuntime = -time.Second }, wantErr: "--preemption-min-runtime"},
		{name: "a zero release grace is allowed", mod: func(c *Config) { c.ReleaseGrace = 0 }},
		{name: "a negative batch period is rejected", mod: func(c *Config) { c.StatusBatchPeriod = -time.Second }, wantErr: "--status-batch-period"},
		{name: "a namespace selector that does not parse is rejected", mod: func(c *Config) { c.NamespaceSelector = "a in (" }, wantErr: "--namespace-selector"},
		{name: "count admission is allowed", mod: func(c *Config) { c.Admission = AdmissionCount }},
		{name: "an unknown admission mode is rejected", mod: func(c *Config) { c.Admission = "fits" }, wantErr: "--admission"},
		{name: "StrictFIFO is allowed", mod: func(c *Config) { c.QueueingStrategy = capacity.StrictFIFO }},
		{name: "an unknown queueing strategy is rejected", mod: func(c *Config) { c.QueueingStrategy = "LIFO" }, wantErr: "--queueing-strategy"},
		{name: "a zero stalled-pod timeout is rejected", mod: func(c *Config) { c.StalledTimeout = 0 }, wantErr: "--stalled-pod-timeout"},
		{name: "autoscaling off is allowed", mod: func(c *Config) { c.Autoscaling = AutoscalingOff }},
		{name: "an unknown autoscaling way is rejected", mod: func(c *Config) { c.Autoscaling = "karpenter" }, wantErr: "--autoscaling"},
		{name: "a zero capacity-request timeout is rejected", mod: func(c *Config) { c.CapacityRequestTimeout = 0 }, wantErr: "--capacity-request-timeout"},
		{name: "no pods' room at all is rejected", mod: func(c *Config) { c.CapacityRequestMaxPods = 0 }, wantErr: "--capacity-request-max-pods"},
		{name: "an unknown --complete-scheduler-preemption is rejected", mod: func(c *Config) { c.CompleteSchedulerPreemption = "Sometimes" }, wantErr: "--complete-scheduler-preemption"},
		{name: "a negative max-podgroups-per-namespace is rejected", mod: func(c *Config) { c.MaxGroupsPerNamespace = -1 }, wantErr: "--max-podgroups-per-namespace"},
		{name: "max-podgroups-per-namespace 0 sets no bound", mod: func(c *Config) { c.MaxGroupsPerNamespace = 0 }},
		{name: "a negative created-podgroup-qps is rejected", mod: func(c *Config) { c.CreatedGroupQPS = -1 }, wantErr: "--created-podgroup-qps"},
		{name: "a NaN created-podgroup-qps is rejected", mod: func(c *Config) { c.CreatedGroupQPS = math.NaN() }, wantErr: "--created-podgroup-qps"},
		{name: "an infinite created-podgroup-qps is rejected", mod: func(c *Config) { c.CreatedGroupQPS = math.Inf(1) }, wantErr: "--created-podgroup-qps"},
		{name: "created-podgroup-qps 0 sets no rate, whatever the burst", mod: func(c *Config) { c.CreatedGroupQPS, c.CreatedGroupBurst = 0, 0 }},
		{name: "a burst of no group under a rate is rejected", mod: func(c *Config) { c.CreatedGroupBurst = 0 }, wantErr: "--created-podgroup-burst"},
		{name: "a negative created-podgroup-burst is rejected", mod: func(c *Config) { c.CreatedGroupQPS, c.CreatedGroupBurst = 0, -1 }, wantErr: "--created-podgroup-burst"},
		{name: "an empty capacity-request image is rejected", mod: func(c *Config) { c.CapacityRequestImage = "" }, wantErr: "--capacity-request-image"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.mod(&c)
			errs := c.Validate()
			switch {
			case tc.wantErr == "" && len(errs) > 0:
				t.Errorf("Validate() = %v, want no error", errs)
			case tc.wantErr != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.wantErr)):
				t.Errorf("Validate() = %v, want one error naming %s", errs, tc.wantErr)
			}
		})
	}
}

func TestConfigFlags(t *testing.T) {
	c := DefaultConfig()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	c.AddFlags(fs)
	err := fs.Parse([]string{"--controller-workers=2", "--pod-patch-concurrency=3", "--release-grace=1m",
		"--fast-release=false", "--status-batch-period=2s", "--namespace-selector=team=a",
		"--admission=count", "--queueing-strategy=StrictFIFO", "--stalled-pod-timeout=2m", "--reservation-timeout=90s", "--created-group-ttl=10m",
		"--max-podgroups-per-namespace=50", "--created-podgroup-qps=0.5", "--created-podgroup-burst=5",
		"--preemption=false", "--preempt-unmanaged", "--preemption-min-runtime=5m", "--complete-scheduler-preemption=Always",
		"--autoscaling=pods", "--capacity-request-timeout=3m", "--capacity-request-max-pods=64", "--capacity-request-image=registry.k8s.io/pause:3.9"})
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Workers: 2, PatchConcurrency: 3, ReleaseGrace: time.Minute, FastRelease: false,
		StatusBatchPeriod: 2 * time.Second, NamespaceSelector: "team=a",
		Admission: AdmissionCount, QueueingStrategy: capacity.StrictFIFO, StalledTimeout: 2 * time.Minute,
		ReservationTimeout: 90 * time.Second, CreatedGroupTTL: 10 * time.Minute,
		MaxGroupsPerNamespace: 50, CreatedGroupQPS: 0.5, CreatedGroupBurst: 5,
		Preemption: false, PreemptUnmanaged: true, PreemptionMinRuntime: 5 * time.Minute, CompleteSchedulerPreemption: CompleteAlways,
		Autoscaling: AutoscalingPods, CapacityRequestTimeout: 3 * time.Minute, CapacityRequestMaxPods: 64,
		CapacityRequestImage: "registry.k8s.io/pause:3.9"}
	if c != want {
		t.Errorf("config = %+v, want %+v", c, want)
	}
}

func TestNewRejectsABadNamespaceSelector(t *testing.T) {
	h := newHarness(t, nil)
	c := DefaultConfig()
	c.NamespaceSelector = "a in ("
	if _, err := New(c, h.kube, h.muster, Informers{}, h.recorder); err == nil {
		t.Errorf("New accepted a namespace selector that does not parse")
	}
}

func TestManagedNamespace(t *testing.T) {
	ns := func(name string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelMetadataName: name}}}
	}
	h := newHarness(t, nil, ns("kube-system"), ns("muster-system"), ns("team-a"))
	for name, want := range map[string]bool{testNS: true, "team-a": true, "kube-system": false, "muster-system": false, "unknown": false} {
		if got := h.c.managedNamespace(name); got != want {
			t.Errorf("managedNamespace(%s) = %v, want %v", name, got, want)
		}
	}
}

func TestPodIndex(t *testing.T) {
	cases := []struct {
		name string
		pod  *corev1.Pod
		want []string
	}{
		{name: "a labelled pod is indexed by namespace and group", pod: newPod("p"), want: []string{testKey.String()}},
		{name: "a pod without the label is not indexed", pod: newPod("p", func(p *corev1.Pod) { delete(p.Labels, scheduling.PodGroupLabel) })},
		{name: "an empty label is no group", pod: newPod("p", inGroup(""))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			informer := cache.NewSharedIndexInformer(&cache.ListWatch{}, &corev1.Pod{}, 0, cache.Indexers{})
			if err := addPodIndexer(informer); err != nil {
				t.Fatal(err)
			}
			got, err := informer.GetIndexer().IndexKeys(GroupIndex, testKey.String())
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 0 {
				t.Fatalf("empty index holds %v", got)
			}
			if err := informer.GetIndexer().Add(tc.pod); err != nil {
				t.Fatal(err)
			}
			keys := informer.GetIndexer().ListIndexFuncValues(GroupIndex)
			if strings.Join(keys, ",") != strings.Join(tc.want, ",") {
				t.Errorf("index values = %v, want %v", keys, tc.want)
			}
		})
	}
}

func TestPodListOptionsSelectsTheGroupLabel(t *testing.T) {
	var o metav1.ListOptions
	PodListOptions(&o)
	if o.LabelSelector != scheduling.PodGroupLabel {
		t.Errorf("label selector = %q, want %q", o.LabelSelector, scheduling.PodGroupLabel)
	}
}

func TestExpectationsSettleOnlyOnWhatASnapshotShows(t *testing.T) {
	tests := []struct {
		name    string
		pods    []*corev1.Pod
		pending bool
	}{
		{"a snapshot that still shows the finalizer keeps the expectation", []*corev1.Pod{newPod("a")}, true},
		{"a snapshot without the finalizer settles it", []*corev1.Pod{newPod("a", noFinalizer)}, false},
		{"a snapshot without the pod settles it", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newGroupMemories()
			e.expect(testKey, finalizersRemoved, "uid-a")
			e.expect(gk("other/group"), finalizersRemoved, "uid-a")
			e.load(testKey, tc.pods)
			if got := e.expecting(testKey, finalizersRemoved, "uid-a"); got != tc.pending {
				t.Errorf("pending = %v, want %v", got, tc.pending)
			}
			if !e.expecting(gk("other/group"), finalizersRemoved, "uid-a") {
				t.Errorf("settling one group touched another")
			}
		})
	}
}
