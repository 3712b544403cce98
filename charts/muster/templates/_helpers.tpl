{{/*
Names are fixed, not prefixed with the release name: the APIService, the
webhook configurations, the policies and the PriorityClass are cluster-wide
and one per cluster, so one Muster per cluster is all that can be installed.
*/}}

{{/* Labels of every object. */}}
{{- define "muster.labels" -}}
app.kubernetes.io/part-of: muster
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{/* muster-apiserver's image: by digest if given, else by tag. */}}
{{- define "muster.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end }}

{{/* The Service's DNS name, which the serving certificate carries. */}}
{{- define "muster.serviceHost" -}}
muster-apiserver.{{ .Release.Namespace }}.svc
{{- end }}

{{/* The webhook Service's DNS name, which the serving certificate carries too. */}}
{{- define "muster.webhookServiceHost" -}}
muster-webhook.{{ .Release.Namespace }}.svc
{{- end }}

{{/*
"true" when muster-webhook serves only callers with a client certificate
from webhook.clientAuth.caSecret: mode Required, or mode Auto and that
Secret exists (lookup reads the cluster at install and upgrade; under
helm template it finds nothing).
*/}}
{{- define "muster.webhookClientAuth" -}}
{{- $auth := .Values.webhook.clientAuth -}}
{{- if eq $auth.mode "Required" -}}
true
{{- else if eq $auth.mode "Auto" -}}
{{- if lookup "v1" "Secret" .Release.Namespace $auth.caSecret -}}
true
{{- end -}}
{{- end -}}
{{- end }}

{{/* The serving certificate's Secret and its key and certificate items. */}}
{{- define "muster.servingCertSecret" -}}
{{- if eq .Values.certificates.mode "internal" -}}
{{ .Values.certificates.internal.secretName }}
{{- else -}}
muster-apiserver-serving-cert
{{- end -}}
{{- end }}

{{/* Namespaces Muster leaves alone: kube-system, its own, and any listed. */}}
{{- define "muster.excludedNamespaces" -}}
{{- $ns := list "kube-system" .Release.Namespace -}}
{{- range .Values.excludedNamespaces }}{{ if not (has . $ns) }}{{ $ns = append $ns . }}{{ end }}{{ end -}}
{{ toJson $ns }}
{{- end }}

{{/* --namespace-selector, in label selector syntax. */}}
{{- define "muster.namespaceSelectorFlag" -}}
kubernetes.io/metadata.name notin ({{ include "muster.excludedNamespaces" . | fromJsonArray | join "," }})
{{- end }}

{{/* The same selector, as a namespaceSelector. */}}
{{- define "muster.namespaceSelector" -}}
matchExpressions:
- key: kubernetes.io/metadata.name
  operator: NotIn
  values: {{ include "muster.excludedNamespaces" . }}
{{- end }}

{{/*
A static file of files/ with the namespace Muster excludes from its policy
bindings swapped for the release's: the files are written for muster-system,
which unit tests compare with the Go builders.
*/}}
{{- define "muster.staticFile" -}}
{{- $file := .root.Files.Get .path -}}
{{- $values := "" -}}
{{- range (include "muster.excludedNamespaces" .root | fromJsonArray) }}{{ $values = printf "%s        - %s\n" $values . }}{{ end -}}
{{ $file | replace "        - kube-system\n        - muster-system\n" $values }}
{{- end }}

{{/* Bundled etcd's client URLs, comma-separated. */}}
{{- define "muster.etcdServers" -}}
{{- if eq .Values.etcd.mode "external" -}}
{{ join "," .Values.etcd.external.endpoints }}
{{- else if eq (int .Values.etcd.replicas) 1 -}}
https://muster-etcd.{{ .Release.Namespace }}.svc:2379
{{- else -}}
{{- $urls := list -}}
{{- range $i := until (int .Values.etcd.replicas) }}{{ $urls = append $urls (printf "https://muster-etcd-%d.muster-etcd.%s.svc:2379" $i $.Release.Namespace) }}{{ end -}}
{{ join "," $urls }}
{{- end -}}
{{- end }}

{{/* The Secret of Muster's etcd client certificate. */}}
{{- define "muster.etcdClientSecret" -}}
{{- if eq .Values.etcd.mode "external" -}}
{{ .Values.etcd.external.secretName }}
{{- else -}}
muster-etcd-client
{{- end -}}
{{- end }}

{{/* The names a client dials bundled etcd by, for its certificate. */}}
{{- define "muster.etcdDNSNames" -}}
{{- $ns := .Release.Namespace -}}
{{- $names := list (printf "muster-etcd.%s.svc" $ns) (printf "muster-etcd.%s.svc.cluster.local" $ns) -}}
{{- range $i := until (int .Values.etcd.replicas) -}}
{{- $names = append $names (printf "muster-etcd-%d.muster-etcd.%s.svc" $i $ns) -}}
{{- $names = append $names (printf "muster-etcd-%d.muster-etcd.%s.svc.cluster.local" $i $ns) -}}
{{- end -}}
{{- $names = append $names "localhost" -}}
{{ toJson $names }}
{{- end }}

{{/* Fails rendering on values that cannot work together. */}}
{{- define "muster.validate" -}}
{{- if and (eq .Values.etcd.mode "bundled") (not (has (int .Values.etcd.replicas) (list 1 3))) -}}
{{- fail "etcd.replicas must be 1 or 3: an even number of members tolerates no more failures than one fewer" -}}
{{- end -}}
{{- if and (eq .Values.etcd.mode "external") (empty .Values.etcd.external.endpoints) -}}
{{- fail "etcd.mode external needs etcd.external.endpoints" -}}
{{- end -}}
{{- end }}
