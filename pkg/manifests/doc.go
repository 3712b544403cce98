// Package manifests builds every object that installs Muster beside its
// API server: the pod webhooks' configurations, the admission policies and
// their bindings, and the PriorityClass of capacity-request pods. The local
// cluster of the tests installs what these builders return; deployments
// apply the static files named in artifacts.go, which tests keep equal to
// the builders.
//
// It imports only the API (pkg/apis/scheduling) and libraries, never the
// controller or the webhook that run beside what it builds: the test
// harness and the tools import it without them.
package manifests
