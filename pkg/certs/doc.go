// Package certs lets muster-apiserver manage its own TLS: a CA it makes
// itself, a serving certificate for its API and webhook signed by that CA,
// both kept in one Secret that every replica shares, rotated long before
// they expire, and the CA bundle written into the APIService and the webhook
// configurations that kube-apiserver verifies Muster with.
//
// Rotation never fails a request because trust always runs ahead of use:
// a new CA is added to the published bundle first, signs serving
// certificates only once the bundle carrying it has been published for an
// overlap, and the CA it replaces stays in the bundle until it expires, so
// a replica still serving a certificate of the old CA stays trusted.
// docs/certificates.md describes the schedule.
package certs
