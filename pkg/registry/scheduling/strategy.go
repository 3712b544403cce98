package scheduling

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Strategy is what the strategies of every kind's main resource share,
// embedded in each: the kinds are namespaced, their names are generated as
// upstream's generic registry does, and writes follow the same rules
// below. Each kind adds its own preparation and validation.
type Strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
}

// NewStrategy is the shared part of a main resource's strategy.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	return Strategy{typer, names.SimpleNameGenerator}
}

func (Strategy) NamespaceScoped() bool { return true }

// GetResetFields says that writes to the main resource never set status.
func (Strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return MainResetFields()
}

func (Strategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }

func (Strategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

func (Strategy) Canonicalize(runtime.Object) {}

func (Strategy) AllowCreateOnUpdate(context.Context) bool { return false }

// AllowUnconditionalUpdate lets an update without a resourceVersion
// through, last writer wins, as upstream's Pod and Deployment storage do,
// so that "kubectl replace" of a manifest without one works.
// Every write that must not lose a race (the controller's status writes,
// which carry the resourceVersion they read) is conditional anyway.
func (Strategy) AllowUnconditionalUpdate(context.Context) bool { return true }
