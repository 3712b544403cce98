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

// TopologyKeyRequired says what a level of the topology needs, in
// schedulingConstraints and in the topology annotations alike.
const TopologyKeyRequired = "a node label key is required, such as topology.kubernetes.io/zone"

// TopologyDiffersRule says why a preferred level, or the slice's key, may
// not be the required level's key: it is tried within one domain of the
// required level, so it must be a narrower level.
const TopologyDiffersRule = "must differ from the required level's key: it names a narrower level, used within one domain of the required one"

// TopologySliceSizeRule says what a slice's size must be.
var TopologySliceSizeRule = fmt.Sprintf("must be an integer in base 10 from 1 to %d (MaxPlacements): how many of the group's pods share one domain of the slice's key",
	MaxPlacements)
