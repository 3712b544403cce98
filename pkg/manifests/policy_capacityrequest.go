package manifests

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// CreatesPolicyName names the ValidatingAdmissionPolicy, and its binding,
// that confine the pods Muster's controller creates to capacity-request
// pods. RBAC can only grant "create pods", which would let the controller's
// credentials run any image with any volume, service account or host
// namespace in any namespace; this policy narrows it to a pause container
// that asks an autoscaler for room and can do nothing else.
const CreatesPolicyName = "muster-pod-creates"

// CapacityRequestImagePrefix is what the image of a capacity-request pod
// must start with: the repository of scheduling.DefaultCapacityRequestImage,
// any tag. An operator who points --capacity-request-image elsewhere must
// change the policy's rule too.
const CapacityRequestImagePrefix = "registry.k8s.io/pause:"

// celCapacityRequest holds when the pod at root carries
// scheduling.CapacityRequestLabel.
func celCapacityRequest(root string) string {
	return fmt.Sprintf("has(%[1]s.metadata.labels) && %[2]s in %[1]s.metadata.labels", root, celString(scheduling.CapacityRequestLabel))
}

// celCapacityRequestPod holds when the pod at root is one that Muster's
// controller created to ask for room (CreatesPolicy): the label
// scheduling.CapacityRequestLabel, the priority class
// scheduling.CapacityRequestPriorityClass, and one owner reference, as
// controller, to the PodGroup the label names. A tenant may put the label
// and the class on a pod of its own, but not that owner, unless it made
// its own PodGroup the pod's controller: then the pod is a capacity
// request of its own group, which only that group's gang needs.
func celCapacityRequestPod(root string) string {
	owner := scheduling.GroupName + "/" + v1alpha1.SchemeGroupVersion.Version
	owners := celList(root, "metadata.ownerReferences")
	return fmt.Sprintf("(%[1]s && has(%[2]s.spec.priorityClassName) && %[2]s.spec.priorityClassName == %[3]s && "+
		"%[4]s.size() == 1 && %[4]s[0].apiVersion == %[5]s && %[4]s[0].kind == 'PodGroup' && "+
		"has(%[4]s[0].controller) && %[4]s[0].controller && %[4]s[0].name == %[2]s.metadata.labels[%[6]s])",
		celCapacityRequest(root), root, celString(scheduling.CapacityRequestPriorityClass), owners, celString(owner), celString(scheduling.CapacityRequestLabel))
}

// CreatesPolicy returns the policy that lets Muster's controller create only
// capacity-request pods, as autoscaling.CapacityRequestTemplate shapes them
// and the controller names and owns them:
//   - the label scheduling.CapacityRequestLabel names a PodGroup, and the
//     group and managed labels are absent (it is never gated nor counted);
//   - its one owner reference is that PodGroup, as its controller, so the
//     pod goes with the group and no workload controller adopts it;
//   - priority class scheduling.CapacityRequestPriorityClass, so it never
//     preempts real work;
//   - one container, the pause image, with no command, arguments or
//     environment, no init or ephemeral containers;
//   - nothing to reach with: no volumes or resource claims, no service
//     account token, no host network, PID or IPC namespace, no privileged
//     container or added capability;
//   - no node name: kube-scheduler places it, or finds it unschedulable,
//     which is what an autoscaler reads.
//
// Anything else is denied, each rule naming its field. The scheduling
// constraints, requests and host ports, which are the gang's, are left free.
func CreatesPolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	labels := "metadata.labels"
	owner := scheduling.GroupName + "/" + v1alpha1.SchemeGroupVersion.Version
	vars := []admissionregistrationv1.Variable{
		{Name: "group", Expression: celKeyOpt("object", labels, scheduling.CapacityRequestLabel)},
		{Name: "owners", Expression: celList("object", "metadata.ownerReferences")},
		{Name: "containers", Expression: celList("object", "spec.containers")},
	}
	// notTrue holds when the bool at path on root is unset or false; the
	// field's parent must be present.
	notTrue := func(root, path string) string {
		return fmt.Sprintf("(!has(%[1]s.%[2]s) || !%[1]s.%[2]s)", root, path)
	}
	validations := []admissionregistrationv1.Validation{
		confinedCreate(fmt.Sprintf("variables.group.size() == 1 && variables.group[0].size() <= 253 && variables.group[0].matches('%s')", dns1123SubdomainRegexp),
			fmt.Sprintf("%s[%s]", labels, scheduling.CapacityRequestLabel),
			"it must carry the label, naming the PodGroup it asks room for (a lowercase RFC 1123 subdomain)"),
	}
	for _, key := range []string{scheduling.PodGroupLabel, scheduling.ManagedLabel} {
		validations = append(validations, confinedCreate(fmt.Sprintf("!(has(object.metadata.labels) && %s in object.metadata.labels)", celString(key)),
			fmt.Sprintf("%s[%s]", labels, key), "it may not carry the label: a capacity-request pod is never gated nor counted"))
	}
	validations = append(validations,
		confinedCreate(fmt.Sprintf("variables.owners.size() == 1 && variables.owners[0].apiVersion == %s && variables.owners[0].kind == 'PodGroup' && "+
			"has(variables.owners[0].controller) && variables.owners[0].controller && %s", celString(owner), notTrue("variables.owners[0]", "blockOwnerDeletion")),
			"metadata.ownerReferences", fmt.Sprintf("it must have exactly one owner reference, to its PodGroup (apiVersion %s, kind PodGroup, controller true, no blockOwnerDeletion)", owner)),
		confinedCreate("variables.owners.size() != 1 || variables.group.size() != 1 || variables.owners[0].name == variables.group[0]",
			"metadata.ownerReferences", fmt.Sprintf("its owner must be the PodGroup its label %s names", scheduling.CapacityRequestLabel)),
		confinedCreate(fmt.Sprintf("has(object.spec.priorityClassName) && object.spec.priorityClassName == %s", celString(scheduling.CapacityRequestPriorityClass)),
			"spec.priorityClassName", fmt.Sprintf("it must have the priority class %s", scheduling.CapacityRequestPriorityClass)),
		confinedCreate(fmt.Sprintf("variables.containers.size() == 1 && variables.containers[0].name == %s", celString(scheduling.CapacityRequestContainer)),
			"spec.containers", fmt.Sprintf("it must have exactly one container, named %s", scheduling.CapacityRequestContainer)),
		confinedCreate(fmt.Sprintf("variables.containers.all(c, has(c.image) && c.image.startsWith(%s))", celString(CapacityRequestImagePrefix)),
			"spec.containers[0].image", fmt.Sprintf("its container must run the image %s<tag>", CapacityRequestImagePrefix)),
	)
	for _, f := range []string{"command", "args", "env", "envFrom"} {
		validations = append(validations, confinedCreate(fmt.Sprintf("variables.containers.all(c, %s)", celEmpty("c", f)),
			"spec.containers[0]."+f, "its container may not set this field: the image's own entrypoint runs, and does nothing"))
	}
	for _, f := range []string{"spec.initContainers", "spec.ephemeralContainers", "spec.volumes", "spec.resourceClaims"} {
		validations = append(validations, confinedCreate(celEmpty("object", f), f,
			"it may not have this field: a capacity-request pod runs nothing but its pause container, and mounts or claims nothing"))
	}
	// A pod bound at creation skips kube-scheduler, and with it the taints
	// and the autoscaler's view of unschedulable pods.
	validations = append(validations, confinedCreate("!has(object.spec.nodeName) || object.spec.nodeName == ''", "spec.nodeName",
		"it must be unset: kube-scheduler places a capacity-request pod, or finds it unschedulable for the autoscaler"))
	validations = append(validations,
		confinedCreate("has(object.spec.automountServiceAccountToken) && !object.spec.automountServiceAccountToken",
			"spec.automountServiceAccountToken", "it must be false: a capacity-request pod holds no credentials"))
	for _, f := range []string{"hostNetwork", "hostPID", "hostIPC"} {
		validations = append(validations, confinedCreate(notTrue("object", "spec."+f), "spec."+f, "it must be unset or false"))
	}
	validations = append(validations,
		confinedCreate(fmt.Sprintf("variables.containers.all(c, !has(c.securityContext) || (%s && %s))",
			notTrue("c", "securityContext.privileged"), celEmpty("c", "securityContext.capabilities.add")),
			"spec.containers[0].securityContext", "its container may not be privileged nor add capabilities"))

	p := &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: CreatesPolicyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				MatchPolicy:   ptr.To(admissionregistrationv1.Equivalent),
				ResourceRules: policyPodRules(admissionregistrationv1.Create, "pods"),
			},
			MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "muster-controller", Expression: celIsMuster()}},
			Variables:       vars,
			Validations:     validations,
		},
	}
	return p
}

// celEmpty holds when the list or map at path on root, or any field on the
// way, is absent, or when it is empty.
func celEmpty(root, path string) string {
	parts := strings.Split(path, ".")
	guards := make([]string, len(parts))
	for i := range parts {
		guards[i] = fmt.Sprintf("has(%s.%s)", root, strings.Join(parts[:i+1], "."))
	}
	return fmt.Sprintf("(!(%s) || %s.%s.size() == 0)", strings.Join(guards, " && "), root, path)
}

// confinedCreate is the validation that denies Muster's create unless expr
// holds, naming fieldPath and, after what Muster may create at all, the
// rule broken.
func confinedCreate(expr, fieldPath, rule string) admissionregistrationv1.Validation {
	return admissionregistrationv1.Validation{
		Expression: expr,
		Message: fmt.Sprintf("%s: Forbidden: %s may only create capacity-request pods (label %s naming their PodGroup, "+
			"which owns them; priority class %s; one %s container of the image %s<tag>; no volumes, credentials or host namespaces); %s",
			fieldPath, musterWho, scheduling.CapacityRequestLabel, scheduling.CapacityRequestPriorityClass,
			scheduling.CapacityRequestContainer, CapacityRequestImagePrefix, rule),
		Reason: ptr.To(metav1.StatusReasonForbidden),
	}
}

// CreatesPolicyBinding binds CreatesPolicy in every namespace: the
// controller creates capacity-request pods in the namespace of each
// PodGroup, and its creates are confined everywhere.
func CreatesPolicyBinding() *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	b := PolicyBinding(Config{}, CreatesPolicyName)
	b.Spec.MatchResources = nil
	return b
}
