package server

import (
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	logsapi "k8s.io/component-base/logs/api/v1"
)

// Logging follows Kubernetes' own components: the logging feature gates
// (ContextualLogging, LoggingBetaOptions, ...) are registered in the
// process's feature gate, and applyLogging applies --logging-format, -v
// and the gates before anything logs. Without it, component-base keeps
// contextual logging off, and the values a sync adds to its logger (the
// PodGroup's key) never reach the log.
func init() {
	utilruntime.Must(logsapi.AddFeatureGates(utilfeature.DefaultMutableFeatureGate))
}

// applyLogging applies the logging options.
func (o *Options) applyLogging() error {
	return logsapi.ValidateAndApply(o.Logs, utilfeature.DefaultFeatureGate)
}
