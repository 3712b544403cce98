// Package visibility serves the API's views of admission (issue 37): a
// WhatIfReview, answered by running the cycle a gang would meet, and the
// admission queue as PendingPodGroups. Both read the state of the
// replica that leads, which alone runs admission: the leader answers from
// its own controller, and any other replica forwards the request to the
// leader, authenticated as itself, and answers its own caller with what the
// leader said, redacted for that caller. Nothing here writes, reserves or
// records anything.
//
// Tenancy: a caller sees the names of the gangs of the namespace it asks
// about; of the gangs of other namespaces only their number, priorities and
// sizes, unless it may get pods in their namespace (the preemptions of a
// what-if), which the cluster's authorizer decides.
package visibility
