// +k8s:deepcopy-gen=package
// +groupName=scheduling.muster.dev

// Package scheduling is the internal version of Muster's API: Workload, a
// gang-scheduling policy, and PodGroup, one runtime group of pods.
package scheduling
