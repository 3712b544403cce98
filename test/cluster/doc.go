// Package cluster runs a local Kubernetes control plane for tests and
// `make run`: etcd, kube-apiserver, kube-controller-manager, kube-scheduler
// and kwok fake nodes, all as processes on free 127.0.0.1 ports, plus
// Muster, installed as users install it. Several clusters can run at once;
// Cluster.Stop ends every process it started (each runs in its own process
// group, and dies with the harness if the harness is killed).
//
// # Muster, from the chart
//
// The harness installs Muster with `helm install muster charts/muster`
// (bin/helm; Cluster.HelmInstallCommand, and make run prints it). Before,
// it creates what docs/install.md asks an operator to create: the
// namespace muster-system, the Secret muster-etcd-client for an external
// etcd, and the Secret muster-webhook-client-ca. The values
// (Cluster.ChartValues) differ from a real cluster's only where kwok
// forces it:
//
//   - nodeSelector names a label no node has, so the chart's pods stay
//     Pending: kwok nodes run no containers, and a pod "running" on one
//     would only take capacity the tests count on. The harness runs the
//     process instead (below).
//   - service.port and service.webhookPort are the ports of that process
//     (or of the proxies in front of several): the Service's endpoint.
//     After the install the harness makes the chart's Service an
//     ExternalName for localhost, the one object it changes: Endpoints
//     refuse loopback addresses, and kube-apiserver resolves an
//     ExternalName to externalName:<port> for the APIService and the
//     webhooks alike, verifying Muster's certificate for
//     muster-apiserver.muster-system.svc as on any cluster.
//   - etcd.mode external, at an etcd the harness runs (MusterEtcdURL) with
//     TLS and client-certificate auth on a CA of its own, as the bundled
//     one has: the bundled etcd is a StatefulSet, which kwok cannot run.
//   - the Secret muster-webhook-client-ca, with the CA of the client
//     certificate the harness's kube-apiserver presents to webhooks
//     (admission.go), created before the install, so that the default
//     webhook.clientAuth.mode Auto serves the webhook to kube-apiserver
//     alone; Options.AnonymousWebhook leaves it out, as a managed control
//     plane would.
//   - replicas is Options.MusterReplicas, preparePolicy.enabled
//     Options.PreparePolicy, extraArgs Options.MusterArgs (shorter leader
//     election timers for the suites), and the internal certificates'
//     lifetimes Options.MusterCertLifetime and MusterCACertLifetime when
//     set.
//
// Certificates are Muster's own (certificates.mode internal, the default):
// it makes its CA and serving certificate, keeps them in the Secret
// muster-apiserver-certs and writes the caBundle of the APIService and the
// webhooks itself; the harness issues none for it. Tests that dial a
// process directly trust that CA (Cluster.MusterConfig, WebhookClientTLS).
//
// The harness then runs muster-apiserver as a kubelet would run the
// Deployment's pod (podspec.go): the container's args and env read back
// from the installed Deployment, the Secrets it mounts written under
// <work dir>/muster-pod/<generation>/ with the mount paths in the args
// rewritten to them, and a token of the chart's ServiceAccount from
// TokenRequest, in a kubeconfig (--kubeconfig, --authentication-kubeconfig
// and --authorization-kubeconfig) that stands in for the in-cluster
// config, since nothing routes to the kubernetes Service's address. The
// only other flags that differ are --secure-port and --webhook-port, set
// per process (pods have addresses of their own, processes share
// loopback), and --bind-address=127.0.0.1. HelmUpgrade runs helm upgrade
// and, if the pod template changed, rolls the processes as the
// Deployment's rolling update would. Options.MusterByHand keeps the old
// wiring (the harness's RBAC, APIService, webhooks and certificates).
//
// StartMusterImage (imagereplica.go) runs one more replica from the image
// under runc instead, as a kubelet would run the pod: the chart's args and
// env unchanged but for the ports and --bind-address, its Secrets at its
// own mount paths, and the service account token in
// /var/run/secrets/kubernetes.io/serviceaccount with
// KUBERNETES_SERVICE_HOST and _PORT naming kube-apiserver, so the
// container reads the real in-cluster config: the host's network
// namespace lets it reach 127.0.0.1, which kube-apiserver's certificate
// names.
//
// For the chaos suite, Options.MusterReplicas runs several muster-apiservers
// behind a proxy that stands in for their Service's endpoints (KillMusterReplica,
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
