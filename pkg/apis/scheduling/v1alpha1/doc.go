// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/muster-dev/muster/pkg/apis/scheduling
// +k8s:defaulter-gen=TypeMeta
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=dev.muster.scheduling.v1alpha1
// +groupName=scheduling.muster.dev

// Package v1alpha1 is version v1alpha1 of Muster's scheduling.muster.dev API.
package v1alpha1
