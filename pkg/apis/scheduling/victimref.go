package scheduling

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"

	"k8s.io/apimachinery/pkg/types"
)

// victimRefPrefix starts every VictimRef.
const victimRefPrefix = "sha256:"

// VictimRefRule is the rule a preemption victim's ref follows, for
// validation messages.
const VictimRefRule = `must be "sha256:" followed by 64 lowercase hexadecimal digits`

var victimRefPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// VictimRef is what a group's status.preemption records of a victim in
// another namespace, in place of its namespace, name and UID: the
// hexadecimal SHA-256 of its UID. A tenant who may read the preemptor
// learns nothing of the victim from it (a UID is random, so it cannot be
// guessed to test), and Muster's controller, which knows every object's
// UID, finds the victim by it.
func VictimRef(uid types.UID) string {
	sum := sha256.Sum256([]byte(uid))
	return victimRefPrefix + hex.EncodeToString(sum[:])
}

// IsVictimRef reports whether ref has the form VictimRef gives.
func IsVictimRef(ref string) bool { return victimRefPattern.MatchString(ref) }
