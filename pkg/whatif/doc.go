// Package whatif turns a WhatIfReview's workload into what Muster's
// admission would see if the workload were submitted now (issue 37): the
// pods its controller would create, as kube-apiserver would admit them,
// the PodGroup they would form, as it would be stored, and how many of the
// pods must be placed at once. capacityadmission.Mode.WhatIf then runs the
// admission cycle on that gang.
//
// Every step is done by the code that does it for real, or by a faithful
// model of a component Muster does not run:
//
//   - the pods: the Job controller's and the JobSet controller's pod
//     creation (job.go, jobset.go), a Pod as given, a List's Pods in order
//     (object.go), or, for spec.podGroup alone, the pods of its roles made
//     from their templates as admission takes a role's pod to be
//     (roles.go);
//   - kube-apiserver's admission of each pod: the API's defaults
//     (k8s.io/kubernetes/pkg/apis/core/v1), the Priority plugin
//     (priority.go), then Muster's own webhooks, by pods.Prepare, which
//     applies the very patch the mutating webhook returns and runs the
//     validating webhook on the result (admit.go);
//   - the group: spec.podGroup through the PodGroup API's create path
//     (defaults, the PodGroupWorkloadExists plugin, the strategy's
//     preparation and validation), or the group that stands under the
//     pods' group name, or the one the controller would create from the
//     pods' annotations, sized by the object through instance.Walk as the
//     controller sizes it (group.go, store.go).
//
// It is pure: it reads the cluster only through Lookup, writes nothing,
// and answers the same review the same way. What it does not model is
// said where it matters: admission plugins whose input lives elsewhere
// (LimitRanger, RuntimeClass overhead, DefaultTolerationSeconds,
// ResourceQuota), kube-apiserver's own validation of the pod beyond
// Muster's rules, the webhooks' namespace selector, and the group the
// controller builds from role annotations (refused, with the way round).
package whatif
