package manifests

// The static manifests, relative to the repository root: the files the chart
// (charts/muster) includes as they are, and its default rendering
// (dist/, make manifests). Every reader of those files (the tests that keep
// them equal to the builders, the test harness) goes through the names
// below, so that moving the files changes this block only.
const (
	// ChartFilesDir holds the chart's static files.
	ChartFilesDir = "charts/muster/files"
	// RenderingDir holds the chart's default rendering.
	RenderingDir = "dist"

	// WebhooksFile holds, among the rest of the install, the mutating and
	// the validating webhook configuration, as MutatingWebhookConfiguration
	// and ValidatingWebhookConfiguration build them.
	WebhooksFile = RenderingDir + "/muster.yaml"
	// PoliciesFile holds the ValidatingAdmissionPolicies and their
	// bindings (PolicyDocuments).
	PoliciesFile = ChartFilesDir + "/policies.yaml"
	// PreparePolicyFile holds the opt-in PreparePolicy and its binding.
	PreparePolicyFile = ChartFilesDir + "/mutating-policy.yaml"
	// PriorityClassFile holds PriorityClass.
	PriorityClassFile = ChartFilesDir + "/priorityclass.yaml"
	// RBACFile holds Muster's roles and bindings, which grant ConfinedVerb.
	RBACFile = RenderingDir + "/muster-rbac.yaml"
)
