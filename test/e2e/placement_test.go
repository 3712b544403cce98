package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// The placement tests (issue 20): gangs in the shapes distributed training
// uses every day, on nodes of their own, each of which must run whole with
// no pod ever refused by kube-scheduler on the node Muster pinned it to.

// TestPlacementOneWorkerPerNode: a gang of 4 with required anti-affinity
// against itself on the hostname runs one pod on each of 4 nodes.
func TestPlacementOneWorkerPerNode(t *testing.T) {
	ctx := testContext(t, placementTimeout)
	ns := namespace(t, ctx)
	nodes := placementNodes(t, ctx, ns, "n", 4, "32", nil)
	w := watchPlacement(t, ctx, ns)
	createGang(t, ctx, ns, "g", 4, "1", "", gangMember, func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{LabelSelector: selectGang("g"), TopologyKey: corev1.LabelHostname}},
		}}
	})
	pods := expectRunningWhole(t, ctx, w, ns, "g", 4)
	expectPerNode(t, pods, nodes, 1)
}

// TestPlacementHostPort: a gang of 4 whose pods all take host port 8080
// runs one pod on each of 4 nodes.
func TestPlacementHostPort(t *testing.T) {
	ctx := testContext(t, placementTimeout)
	ns := namespace(t, ctx)
	nodes := placementNodes(t, ctx, ns, "n", 4, "32", nil)
	w := watchPlacement(t, ctx, ns)
	createGang(t, ctx, ns, "g", 4, "1", "", func(p *corev1.Pod) {
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "rendezvous", ContainerPort: 8080, HostPort: 8080, Protocol: corev1.ProtocolTCP}}
	})
	pods := expectRunningWhole(t, ctx, w, ns, "g", 4)
	expectPerNode(t, pods, nodes, 1)
}

// expectPerNode wants want pods of the gang on each of nodes.
func expectPerNode(t *testing.T, pods []corev1.Pod, nodes []string, want int) {
	t.Helper()
	per := podsPerNode(pods)
	for _, n := range nodes {
		if per[n] != want {
			t.Errorf("node %s runs %d pods of the gang, want %d (pods per node %v)", n, per[n], want, per)
		}
	}
}

// TestPlacementTopologySpread: a gang of 8 spread over the hostname with
// maxSkew 1 and DoNotSchedule runs 2 pods on each of 4 nodes. The spread is
// checked on where the pods run, not only on the scheduler's verdict: a
// pod pinned by required node affinity counts, under the default
// nodeAffinityPolicy Honor, only the node it is pinned to, so the scheduler
// accepts any pinned spread.
func TestPlacementTopologySpread(t *testing.T) {
	ctx := testContext(t, placementTimeout)
	ns := namespace(t, ctx)
	nodes := placementNodes(t, ctx, ns, "n", 4, "32", nil)
	w := watchPlacement(t, ctx, ns)
	createGang(t, ctx, ns, "g", 8, "1", "", gangMember, func(p *corev1.Pod) {
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: selectGang("g"),
		}}
	})
	pods := expectRunningWhole(t, ctx, w, ns, "g", 8)
	expectPerNode(t, pods, nodes, 2)
}

// TestPlacementPodAffinity: a gang of 4 with required pod affinity on the
// hostname to a running service pod runs on that pod's node. Another
// unmanaged pod makes a different node the fullest, so a placement that
// packs without the affinity does not land there by luck.
func TestPlacementPodAffinity(t *testing.T) {
	ctx := testContext(t, placementTimeout)
	ns := namespace(t, ctx)
	nodes := placementNodes(t, ctx, ns, "n", 4, "32", nil)
	w := watchPlacement(t, ctx, ns)
	onNode := func(name, node, cpu string, labels map[string]string) *corev1.Pod {
		p := poolPod(ns, name, "", cpu, "")
		p.Spec.NodeSelector[corev1.LabelHostname] = node
		for k, v := range labels {
			p.Labels[k] = v
		}
		return createPod(t, ctx, p)
	}
	onNode("filler", nodes[0], "8", nil)
	onNode("svc", nodes[3], "1", map[string]string{"app": "svc"})
	waitFor(t, ctx, "the service pod and the filler to run", func(ctx context.Context) (bool, error) {
		for _, name := range []string{"filler", "svc"} {
			p, err := kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil || p.Status.Phase != corev1.PodRunning {
				return false, nil
			}
		}
		return true, nil
	})

	createGang(t, ctx, ns, "g", 4, "1", "", func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "svc"}}, TopologyKey: corev1.LabelHostname,
			}},
		}}
	})
	for _, p := range expectRunningWhole(t, ctx, w, ns, "g", 4) {
		if p.Spec.NodeName != nodes[3] {
			t.Errorf("pod %s runs on %s, not beside the service pod on %s", p.Name, p.Spec.NodeName, nodes[3])
		}
	}
}

// Zones of the zonal volume tests' nodes.
const (
	zoneA = "e2e-zone-a"
	zoneB = "e2e-zone-b"
)

// zonalNodes adds 2 nodes in zone A and 2 in zone B, zone A's first by
// name, so that a placement blind to volumes fills zone A first.
func zonalNodes(t *testing.T, ctx context.Context, ns string) map[string]string {
	t.Helper()
	zoneOf := map[string]string{}
	for _, z := range []struct{ prefix, zone string }{{"za", zoneA}, {"zb", zoneB}} {
		for _, n := range placementNodes(t, ctx, ns, z.prefix, 2, "32", map[string]string{corev1.LabelTopologyZone: z.zone}) {
			zoneOf[n] = z.zone
		}
	}
	return zoneOf
}

// waitForFirstConsumer creates a StorageClass named ns without a
// provisioner that binds when the first pod is scheduled; it is deleted at
// the end of the test.
func waitForFirstConsumer(t *testing.T, ctx context.Context, ns string) string {
	t.Helper()
	mode := storagev1.VolumeBindingWaitForFirstConsumer
	retain := corev1.PersistentVolumeReclaimRetain
	sc := &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: ns},
		Provisioner:       "kubernetes.io/no-provisioner",
		VolumeBindingMode: &mode,
		ReclaimPolicy:     &retain,
	}
	if _, err := kube.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating StorageClass: %v", err)
	}
	afterNamespace(t, ns, func(ctx context.Context) {
		if err := kube.StorageV1().StorageClasses().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !isNotFound(err) {
			t.Errorf("deleting StorageClass %s: %v", ns, err)
		}
	})
	return ns
}

// zonalPV creates a local PersistentVolume of class sc that only nodes of
// zone can use, deleted at the end of the test (its claim is gone by then,
// so the PV protection finalizer lets it go).
func zonalPV(t *testing.T, ctx context.Context, ns, name, sc, zone string, mode corev1.PersistentVolumeAccessMode, claimRef *corev1.ObjectReference) {
	t.Helper()
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelTopologyZone: zone}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{mode},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              sc,
			ClaimRef:                      claimRef,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/mnt/disks/" + name}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}},
			}}}},
		},
	}
	if _, err := kube.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating PersistentVolume %s: %v", name, err)
	}
	afterNamespace(t, ns, func(ctx context.Context) {
		if err := kube.CoreV1().PersistentVolumes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !isNotFound(err) {
			t.Errorf("deleting PersistentVolume %s: %v", name, err)
		}
	})
}

func createPVC(t *testing.T, ctx context.Context, ns, name, sc, volume string, mode corev1.PersistentVolumeAccessMode) {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{mode},
			StorageClassName: &sc,
			VolumeName:       volume,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating PersistentVolumeClaim %s: %v", name, err)
	}
}

// mountClaim mounts the PersistentVolumeClaim named claim(p) in pod p.
func mountClaim(claim func(p *corev1.Pod) string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim(p)},
		}})
		p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "data", MountPath: "/data"})
	}
}

// TestPlacementZonalVolumes: nodes in two zones, a WaitForFirstConsumer
// StorageClass and two local PersistentVolumes in each zone; a gang of 4
// whose pods each claim a volume of their own runs whole, 2 pods in each
// zone, each in the zone of the volume the scheduler bound to its claim.
func TestPlacementZonalVolumes(t *testing.T) {
	ctx := testContext(t, placementTimeout)
	ns := namespace(t, ctx)
	zoneOf := zonalNodes(t, ctx, ns)
	sc := waitForFirstConsumer(t, ctx, ns)
	for i, zone := range []string{zoneA, zoneA, zoneB, zoneB} {
		zonalPV(t, ctx, ns, fmt.Sprintf("%s-%d", ns, i), sc, zone, corev1.ReadWriteOnce, nil)
	}
	for i := range 4 {
		createPVC(t, ctx, ns, fmt.Sprintf("g-%d", i), sc, "", corev1.ReadWriteOnce)
	}
	w := watchPlacement(t, ctx, ns)
	createGang(t, ctx, ns, "g", 4, "1", "", mountClaim(func(p *corev1.Pod) string { return p.Name }))
	pods := expectRunningWhole(t, ctx, w, ns, "g", 4)

	perZone := map[string]int{}
	for _, p := range pods {
		perZone[zoneOf[p.Spec.NodeName]]++
		pvc, err := kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pv, err := kube.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("claim %s: volume %q: %v", pvc.Name, pvc.Spec.VolumeName, err)
		}
		if z := pv.Labels[corev1.LabelTopologyZone]; z != zoneOf[p.Spec.NodeName] {
			t.Errorf("pod %s runs on %s in zone %s, but its volume %s is in zone %s", p.Name, p.Spec.NodeName, zoneOf[p.Spec.NodeName], pv.Name, z)
		}
	}
	if perZone[zoneA] != 2 || perZone[zoneB] != 2 {
		t.Errorf("pods per zone %v, want 2 in each", perZone)
	}
}

// TestPlacementBoundVolumeZone: a gang of 4 that shares a claim already
// bound to a volume only zone B can use runs whole, all in zone B, although
// zone A's nodes come first by name.
func TestPlacementBoundVolumeZone(t *testing.T) {
	ctx := testContext(t, placementTimeout)
	ns := namespace(t, ctx)
	zoneOf := zonalNodes(t, ctx, ns)
	sc := waitForFirstConsumer(t, ctx, ns)
	pv := ns + "-b"
	zonalPV(t, ctx, ns, pv, sc, zoneB, corev1.ReadWriteMany, &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: "data"})
	createPVC(t, ctx, ns, "data", sc, pv, corev1.ReadWriteMany)
	waitFor(t, ctx, "claim data to be bound to "+pv, func(ctx context.Context) (bool, error) {
		pvc, err := kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{})
		return err == nil && pvc.Status.Phase == corev1.ClaimBound, nil
	})

	w := watchPlacement(t, ctx, ns)
	createGang(t, ctx, ns, "g", 4, "1", "", mountClaim(func(*corev1.Pod) string { return "data" }))
	for _, p := range expectRunningWhole(t, ctx, w, ns, "g", 4) {
		if z := zoneOf[p.Spec.NodeName]; z != zoneB {
			t.Errorf("pod %s runs on %s in zone %s, but its volume is only usable in %s", p.Name, p.Spec.NodeName, z, zoneB)
		}
	}
}

// TestPlacementNeverFitsAntiAffinity: a gang of 5 with one pod per node on
// 4 nodes can never run; it waits whole with ExceedsClusterCapacity, and
// the message names the rule that keeps it out.
func TestPlacementNeverFitsAntiAffinity(t *testing.T) {
	ctx := testContext(t, placementTimeout)
	ns := namespace(t, ctx)
	placementNodes(t, ctx, ns, "n", 4, "32", nil)
	w := watchPlacement(t, ctx, ns)
	createGang(t, ctx, ns, "g", 5, "1", "", gangMember, func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{LabelSelector: selectGang("g"), TopologyKey: corev1.LabelHostname}},
		}}
	})
	var pg *v1alpha1.PodGroup
	err := wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
		pods := groupPods(t, ctx, ns, "g")
		for _, p := range pods {
			if !scheduling.HasGate(&p) {
				t.Fatalf("gang g, which can never run whole, was released: %s; %s", podStates(pods), w.err())
			}
		}
		var err error
		if pg, err = getGroup(ctx, ns, "g"); err != nil {
			return false, nil
		}
		c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.ConditionAdmitted)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == scheduling.ReasonExceedsClusterCapacity, nil
	})
	if err != nil {
		t.Fatalf("waiting for gang g Admitted=False/%s: %v; %s", scheduling.ReasonExceedsClusterCapacity, err, groupState(ns, "g"))
	}
	msg := admittedCondition(pg).Message
	if !strings.Contains(msg, "InterPodAffinity") {
		t.Errorf("message %q does not name the rule that keeps the gang out (InterPodAffinity)", msg)
	}
	t.Logf("gang g waits: %s", msg)
	if pg.Status.Gated != 5 {
		t.Errorf("gang has %d of its 5 pods gated, want all", pg.Status.Gated)
	}
	w.check(t)
}
