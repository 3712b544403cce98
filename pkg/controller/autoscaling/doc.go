// Package autoscaling makes the demand of gangs that do not fit the nodes
// there are visible to a cluster autoscaler, without running any part of a
// gang: an autoscaler adds nodes only for pods the scheduler tried and found
// unschedulable, and a gated pod is never tried.
//
// A Requester is one way of asking: capacity-request pods (pods.go), which
// any autoscaler reads (Karpenter, cluster-autoscaler), or a
// ProvisioningRequest (provisioningrequest.go), cluster-autoscaler's
// all-or-nothing scale-up. The podgroup controller decides which gangs ask
// and for how long (docs/controller.md, "Autoscaled clusters"); a Requester
// only makes a group's request exist or not, and reports what exists of it.
package autoscaling
