package manifests

// ArtifactsDir is the folder, relative to the repository root, that holds
// the static manifests deployments apply. Every reader of those files (the
// tests that keep them equal to the builders, the test harness) goes
// through the names below, so that moving the files changes this block only.
const ArtifactsDir = "artifacts"

// The static manifests, relative to the repository root.
const (
	// WebhooksFile holds the mutating and the validating webhook
	// configuration, as MutatingWebhookConfiguration and
	// ValidatingWebhookConfiguration build them.
	WebhooksFile = ArtifactsDir + "/base/webhooks.yaml"
	// PoliciesFile holds the ValidatingAdmissionPolicies and their
	// bindings (PolicyDocuments).
	PoliciesFile = ArtifactsDir + "/base/policies.yaml"
	// PreparePolicyFile holds the opt-in PreparePolicy and its binding.
	PreparePolicyFile = ArtifactsDir + "/prepare-policy/mutating-policy.yaml"
	// PriorityClassFile holds PriorityClass.
	PriorityClassFile = ArtifactsDir + "/base/priorityclass.yaml"
	// RBACFile holds Muster's roles and bindings, which grant ConfinedVerb.
	RBACFile = ArtifactsDir + "/base/rbac.yaml"
)
