package backup

import (
	"fmt"
	"net/url"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Options are the flags of `muster-apiserver backup`. The etcd flags carry
// the names muster-apiserver (and kube-apiserver) give them, so the chart
// passes the same values to both.
type Options struct {
	// Servers are etcd's client URLs. A snapshot is one member's state, so
	// they are tried one at a time, in order, until one answers.
	Servers []string
	// CAFile, CertFile and KeyFile are the TLS files of a client etcd
	// accepts; all empty for plain HTTP.
	CAFile, CertFile, KeyFile string
	// Dir is where snapshots go: a volume of their own, not etcd's.
	Dir string
	// Keep is how many snapshots stay in Dir; older ones are deleted once
	// a new one is complete.
	Keep int
	// DialTimeout bounds how long a member may take to answer at all
	// before the next is tried.
	DialTimeout time.Duration
	// Timeout bounds one member's snapshot, dial to rename.
	Timeout time.Duration
}

// DefaultOptions are the flags' defaults.
func DefaultOptions() Options {
	return Options{Keep: 7, DialTimeout: 10 * time.Second, Timeout: 10 * time.Minute}
}

// validate says which flag is wrong and why; nothing runs until all are
// right.
func (o Options) validate() error {
	var errs field.ErrorList
	if len(o.Servers) == 0 {
		errs = append(errs, field.Required(field.NewPath("--etcd-servers"), "at least one etcd client URL"))
	}
	for i, s := range o.Servers {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, field.Invalid(field.NewPath("--etcd-servers").Index(i), s, "must be an http:// or https:// URL with a host"))
		}
	}
	if (o.CertFile == "") != (o.KeyFile == "") {
		errs = append(errs, field.Invalid(field.NewPath("--etcd-certfile"), o.CertFile, "--etcd-certfile and --etcd-keyfile go together"))
	}
	if o.Dir == "" {
		errs = append(errs, field.Required(field.NewPath("--dir"), "the directory snapshots are written to"))
	}
	if o.Keep < 1 {
		errs = append(errs, field.Invalid(field.NewPath("--keep"), o.Keep, "must keep at least 1 snapshot"))
	}
	if o.DialTimeout <= 0 {
		errs = append(errs, field.Invalid(field.NewPath("--dial-timeout"), o.DialTimeout.String(), "must be positive"))
	}
	if o.Timeout <= 0 {
		errs = append(errs, field.Invalid(field.NewPath("--timeout"), o.Timeout.String(), "must be positive"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid flags: %w", errs.ToAggregate())
	}
	return nil
}
