package scheduling

import "fmt"

// The texts below state a rule that more than one part of Muster enforces or
// explains: the webhook and the admission policies check a pod's labels and
// annotations alike, and the controller and the StatefulSet warning give
// the same fix. Each is said once here, so that the parts never disagree.

// PodGroupLabelRule says what the value of PodGroupLabel must be.
const PodGroupLabelRule = "must be the name of a PodGroup in the pod's namespace"

// MinCountRule says what the value of MinCountAnnotation must be.
var MinCountRule = fmt.Sprintf(`must be a positive integer in base 10, such as "8", at most %d (MaxGangMinCount): the placements of a gang are recorded in its status, which holds %d`,
	MaxGangMinCount, MaxPlacements)

// OrderedReadyFix is what a user must do about a StatefulSet with
// podManagementPolicy OrderedReady whose pods form a gang of more than one,
// said by the group's condition, its event and the admission warning alike.
// The field is immutable, so the StatefulSet must be created again.
const OrderedReadyFix = "create the StatefulSet again with podManagementPolicy: Parallel (the field cannot be changed)"
