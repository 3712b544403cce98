// Package capacity is Muster's model of the cluster's free capacity and the
// gang placement computed on it. The controller keeps a Tracker up to date
// from informers (nodes, pods bound outside Muster, Muster's own pods and the
// placements recorded in PodGroup status), takes a Snapshot of it for each
// admission cycle, and places whole gangs on that snapshot with Place: all
// of a gang or none of it.
//
// The fit rules are the scheduler's own, through k8s.io/component-helpers:
// effective pod requests (init containers, sidecars, overhead), required node
// affinity and nodeSelector, and taint toleration. Why a gang waits is a
// Cause (cause.go), never a PodGroup condition reason: the admission mode
// maps it to one. docs/controller.md
// ("Capacity") explains the model and why it never double-books.
package capacity
