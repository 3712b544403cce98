package capacity

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"
)

// namedClaim gives a pod the claim of that name.
func namedClaim(name string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To(name)}}
	}
}

// generatedClaim gives a pod a claim from a template, which the
// ResourceClaim controller created under that name.
func generatedClaim(name string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("gpu-template")}}
		p.Status.ResourceClaimStatuses = []corev1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: ptr.To(name)}}
	}
}

// heldClaim is a claim of one device, allocated node's device dev and
// reserved for the pods named users.
func heldClaim(name, node, dev string, users ...string) *resourcev1.ResourceClaim {
	c := claims(name, 1)[0].(*resourcev1.ResourceClaim)
	c.Name, c.UID = name, types.UID("uid-claim-"+name)
	c.Status.Allocation = &resourcev1.AllocationResult{
		Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{
			Request: "gpu", Driver: gpuDriver, Pool: node, Device: dev,
		}}},
		NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{
			Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node},
		}}}}},
	}
	for _, u := range users {
		c.Status.ReservedFor = append(c.Status.ReservedFor, resourcev1.ResourceClaimConsumerReference{Resource: "pods", Name: u, UID: types.UID("uid-" + u)})
	}
	return c
}

// ownedBy makes a claim one that the ResourceClaim controller generated
// for the pod of that name.
func ownedBy(c *resourcev1.ResourceClaim, podName string) *resourcev1.ResourceClaim {
	c.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: podName, UID: types.UID("uid-" + podName), Controller: ptr.To(true)}}
	return c
}

// gpuGang is a gang of n pods of cpu and one device each, pod key-i with
// claim key-i (not allocated yet, from claims(key, n)).
func gpuGang(key string, prio int32, n int, cpu string, opts ...podOpt) Candidate {
	ps := make([]*corev1.Pod, n)
	for i := range ps {
		name := fmt.Sprintf("%s-%d", key, i)
		ps[i] = pod(name, cpu, append([]podOpt{withPriority(prio), namedClaim(name)}, opts...)...)
	}
	return Candidate{Key: gk(key), Priority: prio, Created: t0, Pods: ps, Need: n, Preempt: true}
}

// TestPreemptionFreesDevices: the devices that only a victim's pods use
// count as free while a preemptor is placed, and as held by the victim for
// any gang that would be released.
func TestPreemptionFreesDevices(t *testing.T) {
	two := []*corev1.Node{node("a", "32", "64Gi"), node("b", "32", "64Gi")}
	// peer, of the preemptors' own priority, holds b's two devices.
	peer := running{key: "peer", priority: 10, nodes: []string{"b", "b"}, cpu: "10", claims: true}
	peerClaims := []runtime.Object{heldClaim("peer-0", "b", "gpu-0", "peer-0"), heldClaim("peer-1", "b", "gpu-1", "peer-1")}
	lowOnA := []runtime.Object{heldClaim("low-0", "a", "gpu-0", "low-0"), heldClaim("low-1", "a", "gpu-1", "low-1")}
	objs := func(groups ...[]runtime.Object) []runtime.Object {
		out := draCluster(2, "a", "b")
		for _, g := range groups {
			out = append(out, g...)
		}
		return out
	}
	type outcome struct {
		Admit   bool
		Cause   Cause
		Victims []string
		Nodes   []string
	}
	tests := []struct {
		name       string
		gangs      []running
		unmanaged  []*corev1.Pod
		objs       []runtime.Object
		candidates []Candidate
		want       map[string]outcome
		wantMsg    map[string]string
	}{
		{
			name:       "a gang that needs devices preempts the gang that holds them",
			gangs:      []running{{key: "low", priority: 1, nodes: []string{"a", "a"}, cpu: "1", claims: true}, peer},
			objs:       objs(lowOnA, peerClaims, claims("high", 2)),
			candidates: []Candidate{gpuGang("high", 10, 2, "1")},
			want:       map[string]outcome{"high": {Cause: CausePreempting, Victims: []string{"low"}, Nodes: []string{"a", "a"}}},
		},
		{
			name:       "a claim generated from a template for a victim's pod is freed, reserved or not",
			gangs:      []running{{key: "low", priority: 1, nodes: []string{"a", "a"}, cpu: "1", generated: true}, peer},
			objs:       objs([]runtime.Object{ownedBy(heldClaim("low-0", "a", "gpu-0", "low-0"), "low-0"), ownedBy(heldClaim("low-1", "a", "gpu-1"), "low-1")}, peerClaims, claims("high", 2)),
			candidates: []Candidate{gpuGang("high", 10, 2, "1")},
			want:       map[string]outcome{"high": {Cause: CausePreempting, Victims: []string{"low"}, Nodes: []string{"a", "a"}}},
		},
		{
			name: "a victim whose devices are on a node the gang cannot use is not chosen",
			gangs: []running{
				{key: "low", priority: 1, nodes: []string{"a", "a"}, cpu: "1", claims: true},
				{key: "mid", priority: 2, nodes: []string{"b", "b"}, cpu: "1", claims: true},
			},
			objs:       objs(lowOnA, []runtime.Object{heldClaim("mid-0", "b", "gpu-0", "mid-0"), heldClaim("mid-1", "b", "gpu-1", "mid-1")}, claims("high", 2)),
			candidates: []Candidate{gpuGang("high", 10, 2, "1", withNodeSelector("kubernetes.io/hostname", "b"))},
			want:       map[string]outcome{"high": {Cause: CausePreempting, Victims: []string{"mid"}, Nodes: []string{"b", "b"}}},
		},
		{
			name: "a claim that a pod not preempted shares keeps its device",
			// low's second claim is shared with web, which is not Muster's:
			// only mid, which holds b's devices alone, makes room.
			gangs: []running{
				{key: "low", priority: 1, nodes: []string{"a", "a"}, cpu: "1", claims: true},
				{key: "mid", priority: 2, nodes: []string{"b", "b"}, cpu: "1", claims: true},
			},
			unmanaged: []*corev1.Pod{pod("web", "1", onNode("a"), withPriority(100), namedClaim("low-1"))},
			objs: objs([]runtime.Object{heldClaim("low-0", "a", "gpu-0", "low-0"), heldClaim("low-1", "a", "gpu-1", "low-1", "web")},
				[]runtime.Object{heldClaim("mid-0", "b", "gpu-0", "mid-0"), heldClaim("mid-1", "b", "gpu-1", "mid-1")}, claims("high", 2)),
			candidates: []Candidate{gpuGang("high", 10, 2, "1")},
			want:       map[string]outcome{"high": {Cause: CausePreempting, Victims: []string{"mid"}, Nodes: []string{"b", "b"}}},
		},
		{
			name:  "the devices freed for a preemptor are not given to a gang released in the same cycle",
			gangs: []running{{key: "low", priority: 1, nodes: []string{"a", "a"}, cpu: "1", claims: true}, peer},
			objs:  objs(lowOnA, peerClaims, claims("high", 1), claims("next", 1)),
			candidates: []Candidate{
				gpuGang("high", 10, 1, "1"),
				// Of no higher priority than low, so the rule for nodes
				// that pods being deleted still hold does not refuse it.
				gpuGang("next", 0, 1, "1"),
			},
			want: map[string]outcome{
				"high": {Cause: CausePreempting, Victims: []string{"low"}, Nodes: []string{"a"}},
				"next": {Cause: CauseNoRoom},
			},
		},
		{
			name: "two preemptors in one cycle never share a freed device",
			gangs: []running{
				{key: "low", priority: 1, since: 10, nodes: []string{"a", "a"}, cpu: "1", claims: true},
				{key: "other", priority: 1, since: 0, nodes: []string{"b", "b"}, cpu: "1", claims: true},
			},
			objs: objs(lowOnA, []runtime.Object{heldClaim("other-0", "b", "gpu-0", "other-0"), heldClaim("other-1", "b", "gpu-1", "other-1")},
				claims("h1", 2), claims("h2", 2)),
			candidates: []Candidate{
				gpuGang("h1", 10, 2, "1"),
				func() Candidate { c := gpuGang("h2", 10, 2, "1"); c.Created = t0.Add(time.Second); return c }(),
			},
			want: map[string]outcome{
				"h1": {Cause: CausePreempting, Victims: []string{"low"}, Nodes: []string{"a", "a"}},
				"h2": {Cause: CausePreempting, Victims: []string{"other"}, Nodes: []string{"b", "b"}},
			},
		},
		{
			name: "a preemption in progress holds the devices of its victim's pods being deleted",
			// going's pods hold no cpu (fast release) but their claims
			// are still allocated; low would fit a's cpu, which high holds.
			gangs: []running{{key: "going", priority: 1, nodes: []string{"a", "a"}, cpu: "16", claims: true, preempted: true, deleting: true}, peer},
			objs: objs([]runtime.Object{heldClaim("going-0", "a", "gpu-0", "going-0"), heldClaim("going-1", "a", "gpu-1", "going-1")},
				peerClaims, claims("high", 2)),
			candidates: []Candidate{
				func() Candidate { c := gpuGang("high", 10, 2, "16"); c.Preempting = []string{"going"}; return c }(),
				{Key: gk("low"), Priority: 0, Created: t0, Pods: pods("low", 1, "30"), Need: 1},
			},
			want: map[string]outcome{
				"high": {Cause: CausePreempting},
				"low":  {Cause: CauseNoRoom},
			},
			wantMsg: map[string]string{"high": "waiting for 2 pods of the 1 preempted gang(s) or pod(s) to be deleted"},
		},
		{
			name:       "with its victim's devices deallocated, the preemptor is admitted",
			gangs:      []running{{key: "going", priority: 1, nodes: []string{"a", "a"}, cpu: "16", claims: true, preempted: true, deleting: true}, peer},
			objs:       objs(peerClaims, claims("high", 2)),
			candidates: []Candidate{func() Candidate { c := gpuGang("high", 10, 2, "16"); c.Preempting = []string{"going"}; return c }()},
			want:       map[string]outcome{"high": {Admit: true, Nodes: []string{"a", "a"}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := filtersFor(t, tc.objs...)
			tr := trackerRunning(two, tc.gangs, tc.unmanaged...)
			opts := Options{Strategy: BestEffortFIFO, Now: t0.Add(120 * time.Second),
				Victims: func() Pool { return tr.Victims(len(tc.unmanaged) > 0) }}
			got := map[string]outcome{}
			for _, v := range Admit(tr.Snapshot(f), tc.candidates, opts) {
				o := outcome{Admit: v.Admit, Cause: v.Cause}
				for _, vic := range v.Victims {
					o.Victims = append(o.Victims, vic.Key)
				}
				for _, a := range v.Assignments {
					o.Nodes = append(o.Nodes, a.Node)
				}
				sort.Strings(o.Nodes)
				got[v.Key.String()] = o
				if want, ok := tc.wantMsg[v.Key.String()]; ok && !strings.HasPrefix(v.Message, want) {
					t.Errorf("%s: message %q, want it to start with %q", v.Key, v.Message, want)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
			// The cycle's end gives every device back.
			if st := allocated(t, f); st.Len() != countAllocated(tc.objs) {
				t.Errorf("after the cycle %d devices are allocated (%v), want %d", st.Len(), st.UnsortedList(), countAllocated(tc.objs))
			}
		})
	}
}

// allocated is what the DynamicResources plugin would see allocated now.
func allocated(t *testing.T, f *Filters) sets.Set[structured.DeviceID] {
	t.Helper()
	st, err := f.devices.ResourceClaims().GatherAllocatedState()
	if err != nil {
		t.Fatal(err)
	}
	list, err := f.devices.ResourceClaims().ListAllAllocatedDevices()
	if err != nil {
		t.Fatal(err)
	}
	if !list.Equal(st.AllocatedDevices) {
		t.Errorf("ListAllAllocatedDevices %v and GatherAllocatedState %v disagree", list.UnsortedList(), st.AllocatedDevices.UnsortedList())
	}
	return st.AllocatedDevices
}

func countAllocated(objs []runtime.Object) int {
	n := 0
	for _, o := range objs {
		if c, ok := o.(*resourcev1.ResourceClaim); ok && c.Status.Allocation != nil {
			n += len(c.Status.Allocation.Devices.Results)
		}
	}
	return n
}

// TestVictimDevicesUndo: taking victims off frees their devices only while
// a preemptor is placed, each undo gives back exactly what its take-off
// freed, nested or not, and Close forgets everything.
func TestVictimDevicesUndo(t *testing.T) {
	// v1 and v2 share claim "both"; v1 alone holds "one".
	objs := append(draCluster(3, "a"),
		heldClaim("one", "a", "gpu-0", "v1-0"),
		heldClaim("both", "a", "gpu-1", "v1-1", "v2-0"),
		ownedBy(heldClaim("two", "a", "gpu-2"), "v2-0"))
	f := filtersFor(t, objs...)
	tr := trackerRunning([]*corev1.Node{node("a", "32", "64Gi")}, nil)
	for _, p := range []*corev1.Pod{
		pod("v1-0", "1", onNode("a"), namedClaim("one")),
		pod("v1-1", "1", onNode("a"), namedClaim("both")),
	} {
		tr.SetManagedPod(gk("v1"), p, false)
	}
	v2 := pod("v2-0", "1", onNode("a"), generatedClaim("two"))
	v2.Spec.ResourceClaims = append(v2.Spec.ResourceClaims, corev1.PodResourceClaim{Name: "shared", ResourceClaimName: ptr.To("both")})
	tr.SetManagedPod(gk("v2"), v2, false)
	for _, key := range []string{"v1", "v2"} {
		tr.SetGroupState(gk(key), &GroupState{UID: types.UID("uid-" + key), Admitted: true, Since: t0})
	}
	byKey := map[string]*Victim{}
	for _, v := range tr.Victims(false).Eligible {
		byKey[v.Key] = v
	}
	dev := func(names ...string) sets.Set[structured.DeviceID] {
		out := sets.New[structured.DeviceID]()
		for _, n := range names {
			out.Insert(structured.MakeDeviceID(gpuDriver, "a", n))
		}
		return out
	}
	all := dev("gpu-0", "gpu-1", "gpu-2")
	check := func(step string, want sets.Set[structured.DeviceID]) {
		t.Helper()
		if got := allocated(t, f); !got.Equal(want) {
			t.Errorf("%s: allocated %v, want %v", step, sorted(got), sorted(want))
		}
	}

	s := tr.Snapshot(f)
	check("before", all)
	undo1 := s.evict([]*Victim{byKey["v1"]})
	check("v1 taken off, no preemptor placed", all)
	done := s.preempting()
	check("v1 taken off", dev("gpu-1", "gpu-2"))
	undo2 := s.evict([]*Victim{byKey["v2"]})
	check("v1 and v2 taken off", sets.New[structured.DeviceID]())
	undo2()
	check("v2 put back", dev("gpu-1", "gpu-2"))
	undo1()
	check("v1 put back", all)
	undo2 = s.evict([]*Victim{byKey["v2"]})
	check("v2 taken off alone", dev("gpu-0", "gpu-1"))
	undo2()
	check("v2 put back alone", all)
	done()
	// A preemption decided is never undone: Close gives everything back.
	undo := s.evict([]*Victim{byKey["v1"], byKey["v2"]})
	check("both off, no preemptor placed", all)
	done = s.preempting()
	check("both off", sets.New[structured.DeviceID]())
	done()
	_ = undo
	s.Close()
	done = s.preempting()
	check("after Close", all)
	done()
}

func sorted(s sets.Set[structured.DeviceID]) []string {
	out := make([]string, 0, s.Len())
	for d := range s {
		out = append(out, d.String())
	}
	sort.Strings(out)
	return out
}

// TestStrictFIFOJudgesDevicesOnTheIdleCluster: a StrictFIFO head whose
// gang needs devices is judged on the idle cluster, where every device is
// free: one that needs more devices than the cluster has can never fit
// and is skipped, so it cannot hold the queue for ever; one whose devices
// are only held by running pods stays the head.
func TestStrictFIFOJudgesDevicesOnTheIdleCluster(t *testing.T) {
	two := []*corev1.Node{node("a", "32", "64Gi"), node("b", "32", "64Gi")}
	// Every device of the cluster's 4 is held: low's on a, peer's on b.
	holders := []running{
		{key: "low", priority: 1, nodes: []string{"a", "a"}, cpu: "1", claims: true},
		{key: "peer", priority: 1, nodes: []string{"b", "b"}, cpu: "1", claims: true},
	}
	held := []runtime.Object{
		heldClaim("low-0", "a", "gpu-0", "low-0"), heldClaim("low-1", "a", "gpu-1", "low-1"),
		heldClaim("peer-0", "b", "gpu-0", "peer-0"), heldClaim("peer-1", "b", "gpu-1", "peer-1"),
	}
	small := Candidate{Key: gk("small"), Priority: 0, Created: t0.Add(time.Second), Pods: pods("small", 1, "1"), Need: 1}
	tests := []struct {
		name      string
		objs      []runtime.Object
		head      Candidate
		want      map[string]Cause
		wantAdmit []string
	}{
		{
			name:      "a gang of more devices than the cluster has is skipped, and the gang behind it admitted",
			objs:      claims("five", 5),
			head:      gpuGang("five", 10, 5, "1"),
			want:      map[string]Cause{"five": CauseNeverFits, "small": CauseNone},
			wantAdmit: []string{"small"},
		},
		{
			name: "a gang whose devices running pods hold stays the head",
			objs: claims("four", 4),
			head: gpuGang("four", 10, 4, "1"),
			want: map[string]Cause{"four": CauseNoRoom, "small": CauseQueued},
		},
		{
			name: "three pods of a device each on a node of two: the idle judgement counts its own picks",
			objs: claims("pairs", 3),
			head: func() Candidate {
				c := gpuGang("pairs", 10, 3, "1")
				// Were its own picks not counted, each pod would take
				// node a's first device.
				for _, p := range c.Pods {
					p.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": "a"}
				}
				return c
			}(),
			want:      map[string]Cause{"pairs": CauseNeverFits, "small": CauseNone},
			wantAdmit: []string{"small"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs := append(append(draCluster(2, "a", "b"), held...), tc.objs...)
			f := filtersFor(t, objs...)
			tr := trackerRunning(two, holders)
			opts := Options{Strategy: StrictFIFO, Now: t0.Add(120 * time.Second)}
			got := map[string]Cause{}
			var admitted []string
			for _, v := range Admit(tr.Snapshot(f), []Candidate{tc.head, small}, opts) {
				got[v.Key.String()] = v.Cause
				if v.Admit {
					admitted = append(admitted, v.Key.String())
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("causes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantAdmit, admitted); diff != "" {
				t.Errorf("admitted (-want +got):\n%s", diff)
			}
			if st := allocated(t, f); st.Len() != countAllocated(objs) {
				t.Errorf("after the cycle %d devices are allocated (%v), want the %d the claims hold", st.Len(), st.UnsortedList(), countAllocated(objs))
			}
		})
	}
}
