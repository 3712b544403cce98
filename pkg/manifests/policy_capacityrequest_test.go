package manifests

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/utils/ptr"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/podtest"
	"github.com/muster-dev/muster/pkg/controller/autoscaling"
)

// capacityRequest is the capacity-request pod the controller creates for a
// pod of gang "train", built as the controller builds it, then changed by
// mods.
func capacityRequest(mods ...func(*corev1.Pod)) *corev1.Pod {
	member := podtest.Pod(podtest.InGroup("train"), podtest.Label(scheduling.ManagedLabel, "true"), podtest.Label("app", "trainer"), func(p *corev1.Pod) {
		p.Spec.NodeSelector = map[string]string{"node.kubernetes.io/instance-type": "gpu-8x"}
		p.Spec.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 8080}}
	})
	t := autoscaling.CapacityRequestTemplate(member, "train", scheduling.DefaultCapacityRequestImage)
	p := &corev1.Pod{ObjectMeta: t.ObjectMeta, Spec: t.Spec}
	p.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	p.Name, p.Namespace = "train-cr-0123456789-0", "ns"
	p.OwnerReferences = []metav1.OwnerReference{autoscaling.OwnerReference(autoscaling.Demand{Namespace: "ns", Name: "train", UID: "4f1c"})}
	for _, m := range mods {
		m(p)
	}
	return p
}

func withoutLabel(k string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { delete(p.Labels, k) }
}

func withOwner(change func(*metav1.OwnerReference)) func(*corev1.Pod) {
	return func(p *corev1.Pod) { change(&p.OwnerReferences[0]) }
}

func withSpec(change func(*corev1.PodSpec)) func(*corev1.Pod) {
	return func(p *corev1.Pod) { change(&p.Spec) }
}

func withContainer(change func(*corev1.Container)) func(*corev1.Pod) {
	return func(p *corev1.Pod) { change(&p.Spec.Containers[0]) }
}

// TestCreatesPolicy: Muster's controller may create a capacity-request pod
// as the controller builds it, and nothing else; each rule's denial names
// its field.
func TestCreatesPolicy(t *testing.T) {
	crLabel := "metadata.labels[" + scheduling.CapacityRequestLabel + "]"
	secret := corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}
	tests := []struct {
		name string
		pod  *corev1.Pod
		// denied are the fields the denials name; none when allowed.
		denied []string
	}{
		{"a capacity-request pod as the controller builds it is allowed", capacityRequest(), nil},
		{"another tag of the pause image is allowed", capacityRequest(withContainer(func(c *corev1.Container) { c.Image = "registry.k8s.io/pause:3.9" })), nil},
		{"the gang's constraints without requests are allowed", capacityRequest(withSpec(func(s *corev1.PodSpec) {
			s.NodeSelector, s.Tolerations, s.Containers[0].Resources = nil, nil, corev1.ResourceRequirements{}
		})), nil},
		{"hostNetwork false is allowed", capacityRequest(withSpec(func(s *corev1.PodSpec) { s.HostNetwork = false })), nil},

		{"no capacity-request label is denied", capacityRequest(withoutLabel(scheduling.CapacityRequestLabel)), []string{crLabel}},
		{"a capacity-request label that names no PodGroup is denied",
			capacityRequest(podtest.Label(scheduling.CapacityRequestLabel, "Train_1"), withOwner(func(o *metav1.OwnerReference) { o.Name = "Train_1" })), []string{crLabel}},
		{"the group label is denied", capacityRequest(podtest.InGroup("train")), []string{"metadata.labels[" + scheduling.PodGroupLabel + "]"}},
		{"the managed label is denied", capacityRequest(podtest.Label(scheduling.ManagedLabel, "true")), []string{"metadata.labels[" + scheduling.ManagedLabel + "]"}},
		{"another priority class is denied", capacityRequest(withSpec(func(s *corev1.PodSpec) { s.PriorityClassName = "system-cluster-critical" })),
			[]string{"spec.priorityClassName"}},
		{"no priority class is denied", capacityRequest(withSpec(func(s *corev1.PodSpec) { s.PriorityClassName = "" })), []string{"spec.priorityClassName"}},
		{"no owner is denied", capacityRequest(func(p *corev1.Pod) { p.OwnerReferences = nil }), []string{"metadata.ownerReferences"}},
		{"a second owner is denied", capacityRequest(func(p *corev1.Pod) {
			p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "77"})
		}), []string{"metadata.ownerReferences"}},
		{"an owner of another kind is denied", capacityRequest(withOwner(func(o *metav1.OwnerReference) { o.APIVersion, o.Kind = "batch/v1", "Job" })),
			[]string{"metadata.ownerReferences"}},
		{"an owner of another API version is denied", capacityRequest(withOwner(func(o *metav1.OwnerReference) { o.APIVersion = "scheduling.x-k8s.io/v1alpha1" })),
			[]string{"metadata.ownerReferences"}},
		{"an owner that is not the controller is denied", capacityRequest(withOwner(func(o *metav1.OwnerReference) { o.Controller = ptr.To(false) })),
			[]string{"metadata.ownerReferences"}},
		{"an owner that blocks its deletion is denied", capacityRequest(withOwner(func(o *metav1.OwnerReference) { o.BlockOwnerDeletion = ptr.To(true) })),
			[]string{"metadata.ownerReferences"}},
		{"an owner other than the labelled group is denied", capacityRequest(withOwner(func(o *metav1.OwnerReference) { o.Name = "other" })),
			[]string{"metadata.ownerReferences"}},
		{"a second container is denied", capacityRequest(withSpec(func(s *corev1.PodSpec) { s.Containers = append(s.Containers, s.Containers[0]) })),
			[]string{"spec.containers"}},
		{"a container of another name is denied", capacityRequest(withContainer(func(c *corev1.Container) { c.Name = "main" })), []string{"spec.containers"}},
		{"another image is denied", capacityRequest(withContainer(func(c *corev1.Container) { c.Image = "busybox" })), []string{"spec.containers[0].image"}},
		{"a pause image of another registry is denied", capacityRequest(withContainer(func(c *corev1.Container) { c.Image = "registry.example.com/pause:3.10" })),
			[]string{"spec.containers[0].image"}},
		{"a command is denied", capacityRequest(withContainer(func(c *corev1.Container) { c.Command = []string{"/bin/sh"} })), []string{"spec.containers[0].command"}},
		{"arguments are denied", capacityRequest(withContainer(func(c *corev1.Container) { c.Args = []string{"-c", "true"} })), []string{"spec.containers[0].args"}},
		{"an environment variable is denied", capacityRequest(withContainer(func(c *corev1.Container) { c.Env = []corev1.EnvVar{{Name: "K", ValueFrom: &secret}} })),
			[]string{"spec.containers[0].env"}},
		{"an environment from a secret is denied", capacityRequest(withContainer(func(c *corev1.Container) {
			c.EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}}}}
		})), []string{"spec.containers[0].envFrom"}},
		{"an init container is denied", capacityRequest(withSpec(func(s *corev1.PodSpec) { s.InitContainers = []corev1.Container{{Name: "init", Image: "busybox"}} })),
			[]string{"spec.initContainers"}},
		{"an ephemeral container is denied", capacityRequest(withSpec(func(s *corev1.PodSpec) {
			s.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
		})), []string{"spec.ephemeralContainers"}},
		{"a volume is denied", capacityRequest(withSpec(func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
		})), []string{"spec.volumes"}},
		{"a resource claim is denied", capacityRequest(withSpec(func(s *corev1.PodSpec) {
			s.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("someone-elses-gpu")}}
		})), []string{"spec.resourceClaims"}},
		{"a node name is denied", capacityRequest(podtest.OnNode("node-0")), []string{"spec.nodeName"}},
		{"a service account token is denied", capacityRequest(withSpec(func(s *corev1.PodSpec) { s.AutomountServiceAccountToken = ptr.To(true) })),
			[]string{"spec.automountServiceAccountToken"}},
		{"an unset automountServiceAccountToken is denied", capacityRequest(withSpec(func(s *corev1.PodSpec) { s.AutomountServiceAccountToken = nil })),
			[]string{"spec.automountServiceAccountToken"}},
		{"the host network is denied", capacityRequest(withSpec(func(s *corev1.PodSpec) { s.HostNetwork = true })), []string{"spec.hostNetwork"}},
		{"the host PID namespace is denied", capacityRequest(withSpec(func(s *corev1.PodSpec) { s.HostPID = true })), []string{"spec.hostPID"}},
		{"the host IPC namespace is denied", capacityRequest(withSpec(func(s *corev1.PodSpec) { s.HostIPC = true })), []string{"spec.hostIPC"}},
		{"a privileged container is denied", capacityRequest(withContainer(func(c *corev1.Container) { c.SecurityContext.Privileged = ptr.To(true) })),
			[]string{"spec.containers[0].securityContext"}},
		{"an added capability is denied", capacityRequest(withContainer(func(c *corev1.Container) { c.SecurityContext.Capabilities.Add = []corev1.Capability{"SYS_ADMIN"} })),
			[]string{"spec.containers[0].securityContext"}},
		{"an ordinary pod is denied on every rule it breaks", podtest.Pod(podtest.Label("app", "web")), []string{
			crLabel, "metadata.ownerReferences", "spec.priorityClassName", "spec.containers", "spec.containers[0].image", "spec.automountServiceAccountToken",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			matched, denied := evalPolicy(t, CreatesPolicy(), policyRequest{op: admission.Create, object: tt.pod, user: musterAccount})
			if !matched {
				t.Fatal("the policy does not apply to Muster's create")
			}
			if got := deniedFields(denied); !slices.Equal(got, tt.denied) {
				t.Errorf("denials name %q, want %q:\n%s", got, tt.denied, strings.Join(denied, "\n"))
			}
			for _, d := range denied {
				if !strings.Contains(d, ": Forbidden: "+musterWho+" may only create capacity-request pods") {
					t.Errorf("denial %q does not say what Muster may create", d)
				}
			}
		})
	}
}

// TestCreatesPolicyLeavesOthersAlone: only Muster's creates are confined.
// An administrator, a workload controller and a user create any pod, a
// capacity-request look-alike included, without the policy applying.
func TestCreatesPolicyLeavesOthersAlone(t *testing.T) {
	admin := &user.DefaultInfo{Name: "admin", Groups: []string{user.SystemPrivilegedGroup, user.AllAuthenticated}}
	replicaSets := serviceaccount.UserInfo("kube-system", "replicaset-controller", "")
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}
	tests := []struct {
		name string
		who  user.Info
		pod  *corev1.Pod
	}{
		{"an administrator creating a privileged pod", admin, podtest.Pod(withSpec(func(s *corev1.PodSpec) { s.HostPID = true }))},
		{"the ReplicaSet controller creating a pod", replicaSets, podtest.Pod(podtest.Label("app", "web"))},
		{"a user creating a pod with the capacity-request label", alice, podtest.Pod(podtest.Label(scheduling.CapacityRequestLabel, "train"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if matched, denied := evalPolicy(t, CreatesPolicy(), policyRequest{op: admission.Create, object: tt.pod, user: tt.who}); matched || len(denied) > 0 {
				t.Errorf("the policy applies (denials %q); want it to leave the request alone", denied)
			}
		})
	}
}

// TestCreatesPolicyAdmitsDefaultImage: the controller's default image
// passes the image rule; a default moved to another repository needs the
// rule moved too.
func TestCreatesPolicyAdmitsDefaultImage(t *testing.T) {
	if !strings.HasPrefix(scheduling.DefaultCapacityRequestImage, CapacityRequestImagePrefix) {
		t.Errorf("DefaultCapacityRequestImage %q does not start with %q, which muster-pod-creates requires", scheduling.DefaultCapacityRequestImage, CapacityRequestImagePrefix)
	}
}
