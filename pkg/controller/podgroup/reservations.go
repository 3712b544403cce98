package podgroup

import (
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// reservedPlaces is how many places status.reservations holds: capacity
// admission reserves them for the pods of createdLater roles
// (capacityreservations.go), and a release counts them as present
// (holdShort).
func reservedPlaces(pg *v1alpha1.PodGroup) int32 {
	var n int32
	for _, r := range pg.Status.Reservations {
		n += r.Count
	}
	return n
}
