// Package admission is the seam between the PodGroup controller and its
// admission modes (--admission=count or capacity). A mode reads a group as
// plain values (Group) and returns a Decision: whether the gang is
// admitted, why, and what status must record for it (placements,
// reservations, a preemption, conditions and events). Only the controller
// (pkg/controller/podgroup) turns a Decision into status, conditions and
// events, in the status write that records it, before any pod write acts
// on it. docs/controller.md, step 6, tells the order.
package admission
