package capacity

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// TestSchedulerRules checks that placement applies each of kube-scheduler's
// filters, against the pods already running and among a gang's own
// members: a placement the scheduler would refuse leaves a gang half bound.
func TestSchedulerRules(t *testing.T) {
	zoned := func(zone string) nodeOpt { return withLabel(corev1.LabelTopologyZone, zone) }
	fourNodes := []*corev1.Node{node("a", "32", "256Gi"), node("b", "32", "256Gi"), node("c", "32", "256Gi"), node("d", "32", "256Gi")}
	twoZones := []*corev1.Node{node("a", "32", "256Gi", zoned("za")), node("b", "32", "256Gi", zoned("za")), node("c", "32", "256Gi", zoned("zb")), node("d", "32", "256Gi", zoned("zb"))}

	tests := []struct {
		name    string
		nodes   []*corev1.Node
		running []*corev1.Pod
		objs    []runtime.Object
		gang    []*corev1.Pod
		// placed is how many pods of the gang fit; check inspects where.
		placed    int
		check     func(t *testing.T, r Result)
		wantShort string
	}{
		{
			name:   "NodeName: a pod that names its node goes there",
			nodes:  fourNodes,
			gang:   []*corev1.Pod{pod("p", "1", func(p *corev1.Pod) { p.Spec.NodeName = "c" })},
			placed: 1,
			check:  onNodes("c"),
		},
		{
			name:   "NodePorts: a gang sharing a host port gets one node per pod",
			nodes:  fourNodes,
			gang:   pods("p", 4, "1", withHostPort(8080)),
			placed: 4,
			check:  distinctNodes,
		},
		{
			name:      "NodePorts: a node whose running pod holds the port is refused, and a fifth pod does not fit",
			nodes:     fourNodes,
			running:   []*corev1.Pod{pod("web", "1", onNode("a"), withHostPort(8080))},
			gang:      pods("p", 4, "1", withHostPort(8080)),
			placed:    3,
			check:     notOn("a"),
			wantShort: "(NodePorts)",
		},
		{
			name:   "InterPodAffinity: one worker per node under required anti-affinity on the hostname",
			nodes:  fourNodes,
			gang:   pods("p", 4, "1", withLabels("app", "trainer"), antiAffinity("app", "trainer", corev1.LabelHostname)),
			placed: 4,
			check:  distinctNodes,
		},
		{
			name:      "InterPodAffinity: more workers than nodes under one-per-node anti-affinity: the rest are refused by the rule",
			nodes:     fourNodes,
			gang:      pods("p", 5, "1", withLabels("app", "trainer"), antiAffinity("app", "trainer", corev1.LabelHostname)),
			placed:    4,
			check:     distinctNodes,
			wantShort: "(InterPodAffinity)",
		},
		{
			name:    "InterPodAffinity: a running pod's anti-affinity keeps the gang off its node",
			nodes:   fourNodes,
			running: []*corev1.Pod{pod("db", "1", onNode("a"), withLabels("app", "db"), antiAffinity("app", "trainer", corev1.LabelHostname))},
			gang:    pods("p", 8, "1", withLabels("app", "trainer")),
			placed:  8,
			check:   notOn("a"),
		},
		{
			name:    "InterPodAffinity: required affinity to a running service pod puts the gang on its node",
			nodes:   fourNodes,
			running: []*corev1.Pod{pod("svc", "1", onNode("c"), withLabels("app", "svc"))},
			gang:    pods("p", 4, "1", podAffinity("app", "svc", corev1.LabelHostname)),
			placed:  4,
			check:   onNodes("c"),
		},
		{
			name:   "InterPodAffinity: anti-affinity by zone puts one pod in each zone",
			nodes:  twoZones,
			gang:   pods("p", 3, "1", withLabels("app", "trainer"), antiAffinity("app", "trainer", corev1.LabelTopologyZone)),
			placed: 2,
			check: func(t *testing.T, r Result) {
				if z := zonesOf(r, twoZones); len(z) != 2 {
					t.Errorf("zones %v, want one pod in each of 2", z)
				}
			},
			wantShort: "(InterPodAffinity)",
		},
		{
			name:   "PodTopologySpread: DoNotSchedule spreads a gang of 8 evenly, 2 per node",
			nodes:  fourNodes,
			gang:   pods("p", 8, "1", withLabels("app", "trainer"), spread("app", "trainer", corev1.LabelHostname)),
			placed: 8,
			check:  perNodeExactly(2),
		},
		{
			name:    "PodTopologySpread: running pods of the same label count toward the skew",
			nodes:   fourNodes,
			running: []*corev1.Pod{pod("old-0", "1", onNode("a"), withLabels("app", "trainer")), pod("old-1", "1", onNode("a"), withLabels("app", "trainer"))},
			gang:    pods("p", 6, "1", withLabels("app", "trainer"), spread("app", "trainer", corev1.LabelHostname)),
			placed:  6,
			check:   perNodeExactly(2, "a"),
		},
		{
			name:  "VolumeZone: a claim bound to a zone-b volume keeps its pod in zone b",
			nodes: twoZones,
			objs: []runtime.Object{
				boundPV("pv-b", "data-0", map[string]string{corev1.LabelTopologyZone: "zb"}),
				boundPVC("data-0", "pv-b"),
			},
			gang:   []*corev1.Pod{pod("p", "1", withClaim("data-0"))},
			placed: 1,
			check:  onNodes("c", "d"),
		},
		{
			name:  "VolumeBinding: WaitForFirstConsumer claims share 2 local volumes of zone b: 2 pods fit, no volume promised twice",
			nodes: twoZones,
			objs: []runtime.Object{
				wffcClass(),
				localPV("pv-0", "zb"), localPV("pv-1", "zb"),
				pendingPVC("data-0"), pendingPVC("data-1"), pendingPVC("data-2"),
			},
			gang:      []*corev1.Pod{pod("p-0", "1", withClaim("data-0")), pod("p-1", "1", withClaim("data-1")), pod("p-2", "1", withClaim("data-2"))},
			placed:    2,
			check:     onNodes("c", "d"),
			wantShort: "(VolumeBinding)",
		},
		{
			name:  "VolumeRestrictions: a ReadWriteOncePod claim in use by a running pod refuses every node",
			nodes: fourNodes,
			objs:  []runtime.Object{rwopPVC("solo"), boundPV("pv-solo", "solo", nil)},
			running: []*corev1.Pod{
				pod("user", "1", onNode("a"), withClaim("solo")),
			},
			gang:      []*corev1.Pod{pod("p", "1", withClaim("solo"))},
			placed:    0,
			wantShort: "(VolumeRestrictions)",
		},
		{
			name:  "NodeVolumeLimits: a node that attaches one volume of the driver takes one pod of the gang",
			nodes: []*corev1.Node{node("a", "32", "256Gi"), node("b", "32", "256Gi")},
			objs: []runtime.Object{
				csiNode("a", 1), csiNode("b", 1),
				csiPV("csi-0", "c-0"), boundPVC("c-0", "csi-0"),
				csiPV("csi-1", "c-1"), boundPVC("c-1", "csi-1"),
				csiPV("csi-2", "c-2"), boundPVC("c-2", "csi-2"),
			},
			gang:      []*corev1.Pod{pod("p-0", "1", withClaim("c-0")), pod("p-1", "1", withClaim("c-1")), pod("p-2", "1", withClaim("c-2"))},
			placed:    2,
			check:     distinctNodes,
			wantShort: "(NodeVolumeLimits)",
		},
		{
			name:   "DynamicResources: 8 pods of one device each on 2 nodes of 4 devices fit, 4 per node",
			nodes:  []*corev1.Node{node("a", "32", "256Gi"), node("b", "32", "256Gi")},
			objs:   append(draCluster(4, "a", "b"), claims("gpu", 8)...),
			gang:   devicePods("p", "gpu", 8),
			placed: 8,
			check:  perNodeExactly(4),
		},
		{
			name:      "DynamicResources: a ninth device is not promised: the gang's members never share a device",
			nodes:     []*corev1.Node{node("a", "32", "256Gi"), node("b", "32", "256Gi")},
			objs:      append(draCluster(4, "a", "b"), claims("gpu", 9)...),
			gang:      devicePods("p", "gpu", 9),
			placed:    8,
			wantShort: "(DynamicResources)",
		},
		{
			name:      "DynamicResources: a pod whose claim does not exist yet waits",
			nodes:     []*corev1.Node{node("a", "32", "256Gi")},
			objs:      draCluster(4, "a"),
			gang:      devicePods("p", "gpu", 1),
			placed:    0,
			wantShort: "every node refuses the rest",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := filtersFor(t, tc.objs...)
			s := trackerOf(tc.nodes, tc.running...).Snapshot(f)
			defer s.Close()
			r := s.Place(tc.gang)
			defer s.Discard(r)
			if len(r.Assignments) != tc.placed {
				t.Fatalf("placed %d pods (%v), want %d; short: %s", len(r.Assignments), placedOn(r), tc.placed, r.Short)
			}
			if tc.check != nil {
				tc.check(t, r)
			}
			if !strings.Contains(r.Short, tc.wantShort) {
				t.Errorf("Short = %q, want it to contain %q", r.Short, tc.wantShort)
			}
		})
	}
}

// TestTwoGangsInOneCycleSeeEachOther: gangs placed in the same cycle never
// share a device, a host port or an anti-affinity node.
func TestTwoGangsInOneCycleSeeEachOther(t *testing.T) {
	tests := []struct {
		name  string
		nodes []*corev1.Node
		objs  []runtime.Object
		a, b  []*corev1.Pod
	}{
		{
			name:  "devices: two gangs of 8 on 2 nodes of 8 devices: the second waits",
			nodes: []*corev1.Node{node("a", "32", "256Gi"), node("b", "32", "256Gi")},
			objs:  append(append(draCluster(4, "a", "b"), claims("ga", 8)...), claims("gb", 8)...),
			a:     devicePods("ga", "ga", 8),
			b:     devicePods("gb", "gb", 8),
		},
		{
			name:  "host ports: two gangs of 2 on 2 nodes with the same host port: the second waits",
			nodes: []*corev1.Node{node("a", "32", "256Gi"), node("b", "32", "256Gi")},
			a:     pods("ga", 2, "1", withHostPort(9000)),
			b:     pods("gb", 2, "1", withHostPort(9000)),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := filtersFor(t, tc.objs...)
			vs := Admit(trackerOf(tc.nodes).Snapshot(f), []Candidate{
				{Key: gk("ns/a"), Pods: tc.a, Need: len(tc.a)},
				{Key: gk("ns/b"), Pods: tc.b, Need: len(tc.b), Created: metav1.Now().Time},
			}, Options{Strategy: BestEffortFIFO})
			got := map[string]Verdict{}
			for _, v := range vs {
				got[v.Key.String()] = v
			}
			if !got["ns/a"].Admit || got["ns/b"].Admit {
				t.Fatalf("verdicts a=%+v b=%+v, want a admitted and b waiting", got["ns/a"], got["ns/b"])
			}
			if got["ns/b"].Cause != CauseNoRoom {
				t.Errorf("b waits with %s, want %s: %s", got["ns/b"].Cause, CauseNoRoom, got["ns/b"].Message)
			}
		})
	}
}

// filtersFor starts filters on objs for one test, stopped at its end.
func filtersFor(t *testing.T, objs ...runtime.Object) *Filters {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	f, err := startFilters(ctx, objs...)
	t.Cleanup(func() {
		cancel()
		if f != nil {
			f.Shutdown()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func withHostPort(port int32) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, corev1.ContainerPort{ContainerPort: port, HostPort: port, Protocol: corev1.ProtocolTCP})
	}
}

func withLabels(k, v string) podOpt {
	return func(p *corev1.Pod) {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[k] = v
	}
}

func term(k, v, topology string) corev1.PodAffinityTerm {
	return corev1.PodAffinityTerm{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{k: v}},
		TopologyKey:   topology,
	}
}

func antiAffinity(k, v, topology string) podOpt {
	return func(p *corev1.Pod) {
		if p.Spec.Affinity == nil {
			p.Spec.Affinity = &corev1.Affinity{}
		}
		p.Spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term(k, v, topology)}}
	}
}

func podAffinity(k, v, topology string) podOpt {
	return func(p *corev1.Pod) {
		if p.Spec.Affinity == nil {
			p.Spec.Affinity = &corev1.Affinity{}
		}
		p.Spec.Affinity.PodAffinity = &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term(k, v, topology)}}
	}
}

func spread(k, v, topology string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
			MaxSkew: 1, TopologyKey: topology, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{k: v}},
		})
	}
}

func withClaim(pvc string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: pvc, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc},
		}})
	}
}

func pvc(name string, mode corev1.PersistentVolumeAccessMode, class string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-pvc-" + name)},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{mode},
			StorageClassName: ptr.To(class),
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
	}
}

func pendingPVC(name string) *corev1.PersistentVolumeClaim {
	return pvc(name, corev1.ReadWriteOnce, "local")
}

func rwopPVC(name string) *corev1.PersistentVolumeClaim {
	c := boundPVC(name, "pv-"+name)
	c.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod}
	return c
}

func boundPVC(name, pv string) *corev1.PersistentVolumeClaim {
	c := pvc(name, corev1.ReadWriteOnce, "")
	c.Annotations = map[string]string{"pv.kubernetes.io/bind-completed": "yes"}
	c.Spec.VolumeName = pv
	c.Status.Phase = corev1.ClaimBound
	return c
}

func wffcClass() *storagev1.StorageClass {
	mode := storagev1.VolumeBindingWaitForFirstConsumer
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "local"}, Provisioner: "kubernetes.io/no-provisioner", VolumeBindingMode: &mode}
}

func pv(name string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeAvailable},
	}
}

func zoneAffinity(zone string) *corev1.VolumeNodeAffinity {
	return &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}},
	}}}}
}

func localPV(name, zone string) *corev1.PersistentVolume {
	v := pv(name)
	v.Spec.StorageClassName = "local"
	v.Spec.Local = &corev1.LocalVolumeSource{Path: "/mnt/" + name}
	v.Spec.NodeAffinity = zoneAffinity(zone)
	return v
}

func boundPV(name, claim string, labels map[string]string) *corev1.PersistentVolume {
	v := pv(name)
	v.Labels = labels
	v.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "ns", Name: claim, UID: types.UID("uid-pvc-" + claim)}
	v.Spec.GCEPersistentDisk = &corev1.GCEPersistentDiskVolumeSource{PDName: name}
	v.Status.Phase = corev1.VolumeBound
	return v
}

func csiPV(name, claim string) *corev1.PersistentVolume {
	v := boundPV(name, claim, nil)
	v.Spec.GCEPersistentDisk = nil
	v.Spec.CSI = &corev1.CSIPersistentVolumeSource{Driver: "disk.example.com", VolumeHandle: name}
	return v
}

func csiNode(name string, limit int32) *storagev1.CSINode {
	return &storagev1.CSINode{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{
			Name: "disk.example.com", NodeID: name, Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To(limit)},
		}}},
	}
}

const gpuDriver = "gpu.example.com"

// draCluster is a DeviceClass of the test driver and, for each node, a
// ResourceSlice of per devices.
func draCluster(per int, nodes ...string) []runtime.Object {
	objs := []runtime.Object{&resourcev1.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: gpuDriver},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{
			CEL: &resourcev1.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", gpuDriver)},
		}}},
	}}
	for _, n := range nodes {
		s := &resourcev1.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{Name: n + "-gpus"},
			Spec: resourcev1.ResourceSliceSpec{
				Driver:   gpuDriver,
				NodeName: ptr.To(n),
				Pool:     resourcev1.ResourcePool{Name: n, Generation: 1, ResourceSliceCount: 1},
			},
		}
		for i := range per {
			s.Spec.Devices = append(s.Spec.Devices, resourcev1.Device{Name: fmt.Sprintf("gpu-%d", i)})
		}
		objs = append(objs, s)
	}
	return objs
}

// claims are n ResourceClaims of one device each, prefix-0 and on, as the
// ResourceClaim controller makes from a template.
func claims(prefix string, n int) []runtime.Object {
	var out []runtime.Object
	for i := range n {
		out = append(out, &resourcev1.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("%s-%d", prefix, i), UID: types.UID(fmt.Sprintf("uid-claim-%s-%d", prefix, i))},
			Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
				Name:    "gpu",
				Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: gpuDriver, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1},
			}}}},
		})
	}
	return out
}

// devicePods are n pods, each with the claim of the same index.
func devicePods(prefix, claim string, n int) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range out {
		name := fmt.Sprintf("%s-%d", claim, i)
		out[i] = pod(fmt.Sprintf("%s-%d", prefix, i), "1", func(p *corev1.Pod) {
			p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To(name)}}
		})
	}
	return out
}

func onNodes(nodes ...string) func(*testing.T, Result) {
	return func(t *testing.T, r Result) {
		for _, a := range r.Assignments {
			if !strings.Contains(" "+strings.Join(nodes, " ")+" ", " "+a.Node+" ") {
				t.Errorf("pod %s placed on %s, want one of %v", a.Pod.Name, a.Node, nodes)
			}
		}
	}
}

func notOn(node string) func(*testing.T, Result) {
	return func(t *testing.T, r Result) {
		for _, a := range r.Assignments {
			if a.Node == node {
				t.Errorf("pod %s placed on %s, which the rule refuses", a.Pod.Name, node)
			}
		}
	}
}

func distinctNodes(t *testing.T, r Result) {
	for node, n := range perNode(r) {
		if n > 1 {
			t.Errorf("%d pods placed on %s, want one per node: %v", n, node, placedOn(r))
		}
	}
}

// perNodeExactly wants n pods of the gang on every node but those skipped.
func perNodeExactly(n int, skip ...string) func(*testing.T, Result) {
	return func(t *testing.T, r Result) {
		for node, got := range perNode(r) {
			want := n
			for _, s := range skip {
				if s == node {
					want = 0
				}
			}
			if got != want {
				t.Errorf("%d pods placed on %s, want %d: %v", got, node, want, placedOn(r))
			}
		}
	}
}

func zonesOf(r Result, nodes []*corev1.Node) map[string]int {
	zone := map[string]string{}
	for _, n := range nodes {
		zone[n.Name] = n.Labels[corev1.LabelTopologyZone]
	}
	out := map[string]int{}
	for _, a := range r.Assignments {
		out[zone[a.Node]]++
	}
	return out
}

// TestClaimFits: a pod of a createdLater role takes a reserved place only
// where the scheduler's filters pass for it once the place is given back.
func TestClaimFits(t *testing.T) {
	slot := Slot{Node: "a", Requests: ResourcesFromList(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("30")}), Count: 1}
	tests := []struct {
		name    string
		running []*corev1.Pod
		pod     *corev1.Pod
		want    bool
	}{
		{name: "the place it was reserved for: fits", pod: pod("w", "30"), want: true},
		{name: "asks for more than the place holds", pod: pod("w", "31"), want: false},
		{name: "a running pod holds its host port on the node", running: []*corev1.Pod{pod("web", "1", onNode("a"), withHostPort(80))},
			pod: pod("w", "1", withHostPort(80)), want: false},
		{name: "a running pod's anti-affinity refuses it on the node", running: []*corev1.Pod{pod("db", "1", onNode("a"), antiAffinity("app", "w", corev1.LabelHostname))},
			pod: pod("w", "1", withLabels("app", "w")), want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := trackerOf([]*corev1.Node{node("a", "32", "256Gi")}, tc.running...)
			tr.SetReservations(gk("ns/g"), []Slot{slot})
			if got := tr.ClaimFits(defaultFilters(), gk("ns/g"), tc.pod, "a", slot.Requests); got != tc.want {
				t.Errorf("ClaimFits = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestAntiAffinityPlacedInTheCycleKeepsPodsApart: a gang placed in a cycle
// whose pods have required anti-affinity refuses the later pods its terms
// select, even when the label keys of such terms were found before it was
// placed (antiAffinityKeys): pods of one shape that differ in that label
// must not share a PreFilter.
func TestAntiAffinityPlacedInTheCycleKeepsPodsApart(t *testing.T) {
	nodes := []*corev1.Node{node("n1", "4", "16Gi"), node("n2", "4", "16Gi")}
	first := Candidate{Key: gk("ns/first"), Created: t0, Pods: pods("first", 1, "1"), Need: 1}
	guard := Candidate{Key: gk("ns/guard"), Created: t0.Add(time.Second), Pods: pods("guard", 1, "1", antiAffinity("app", "x", corev1.LabelHostname)), Need: 1}
	later := Candidate{Key: gk("ns/later"), Created: t0.Add(2 * time.Second),
		Pods: []*corev1.Pod{pod("later-0", "1", withLabels("app", "y")), pod("later-1", "1", withLabels("app", "x"))}, Need: 2}
	vs := Admit(trackerOf(nodes).Snapshot(defaultFilters()), []Candidate{first, guard, later}, Options{Strategy: BestEffortFIFO})
	on := map[string]string{}
	for _, v := range vs {
		if !v.Admit {
			t.Fatalf("%s waits: %s", v.Key, v.Message)
		}
		for _, a := range v.Assignments {
			on[a.Pod.Name] = a.Node
		}
	}
	if on["later-1"] == on["guard-0"] {
		t.Errorf("later-1 (app=x) is on %s with guard-0, whose required anti-affinity refuses app=x there: %v", on["later-1"], on)
	}
}
