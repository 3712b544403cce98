// Package cluster runs a local Kubernetes control plane for tests and
// `make run`: etcd, kube-apiserver, kube-controller-manager, kube-scheduler
// and kwok fake nodes, all as processes on free 127.0.0.1 ports, plus
// Muster's apiserver registered with the aggregator. Several clusters can
// run at once; Cluster.Stop ends every process it started (each runs in its
// own process group, and dies with the harness if the harness is killed).
// Muster serves its pod webhook on a port of its own (MusterWebhookURL),
// only to the client certificate that kube-apiserver presents through its
// AdmissionConfiguration (admission.go, WebhookClientTLS).
//
// For the chaos suite, Options.MusterReplicas runs several muster-apiservers
// behind a proxy that stands in for their Service (KillMusterReplica,
// RestartMusterReplica, MusterLeader), Options.MusterEtcd gives Muster an
// etcd of its own, and Restart kills etcd, Muster's etcd or kube-apiserver
// and starts it again on the same ports with the same data (Kill and
// StartAgain leave it down in between).
//
// The binaries come from hack/build-tools.sh. kube-controller-manager runs
// the upstream default controllers, as on a real cluster: service accounts
// and their tokens, namespace deletion, the garbage collector, node
// lifecycle (which takes the not-ready taint off a fake node once kwok
// reports it Ready), and the Job, ReplicaSet, Deployment, StatefulSet and
// ResourceClaim controllers. A client that creates pods in a new namespace
// waits for its "default" ServiceAccount first (WaitForDefaultServiceAccount).
//
// Pods bound to the fake nodes follow the kwok Stages in stages/:
//
//   - they start Running and Ready at once, or after the duration in
//     annotation sim.muster.dev/start-after;
//   - with sim.muster.dev/run-for: <duration> they exit after that long,
//     Succeeded, or Failed with the code in sim.muster.dev/exit-code when it
//     is not 0; without run-for they run until deleted;
//   - when deleted they are killed (exit 137, Failed) when the grace period
//     ends, or exit 143 after sim.muster.dev/stop-after: <duration>; they are
//     then removed once they have no finalizers.
package cluster
