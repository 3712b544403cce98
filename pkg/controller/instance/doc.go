// Package instance finds the workload instance that a pod belongs to, for a
// group named after it (scheduling.GroupByAnnotation): the walk up the
// pod's controllers to the instance's top owner, which owns the group so
// that the garbage collector deletes the group with the instance
// (walk.go), and the number of pods the instance runs, read from the
// owner's own spec so that the user does not repeat it (size.go). Reader
// reads owners of any kind through the dynamic client (reader.go).
package instance
