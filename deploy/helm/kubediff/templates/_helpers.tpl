{{- define "kubediff.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "kubediff.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/*
Cluster-scoped objects (the ClusterRole, its binding, the webhook configuration) are one set for the whole
cluster: their names carry the release's namespace as well, so that installs in two namespaces never share
(and take over) each other's.
*/}}
{{- define "kubediff.clusterScopedName" -}}
{{- printf "%s-%s" (include "kubediff.fullname" .) .Release.Namespace -}}
{{- end -}}

{{- define "kubediff.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kubediff.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: watcher
{{- end -}}

{{- define "kubediff.labels" -}}
{{ include "kubediff.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "kubediff.serviceAccountName" -}}
{{- default (include "kubediff.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "kubediff.leaseName" -}}
{{- default (include "kubediff.fullname" .) .Values.leaderElection.leaseName -}}
{{- end -}}

{{- define "kubediff.admissionSecretName" -}}
{{- default (printf "%s-admission-tls" (include "kubediff.fullname" .)) .Values.admission.tlsSecretName -}}
{{- end -}}

{{/* admission.certificate=managed: the Secret kubediff keeps its CA and serving certificate in (rendered empty). */}}
{{- define "kubediff.admissionManagedSecretName" -}}
{{- printf "%s-admission-certificate" (include "kubediff.fullname" .) -}}
{{- end -}}

{{/* The ValidatingWebhookConfiguration (cluster-scoped: named per install, kubediff.clusterScopedName). */}}
{{- define "kubediff.admissionWebhookName" -}}
{{- printf "%s-who" (include "kubediff.clusterScopedName" .) -}}
{{- end -}}

{{- define "kubediff.admissionServiceName" -}}
{{- printf "%s-admission" (include "kubediff.fullname" .) -}}
{{- end -}}

{{/* The port the replicas post each other records on (--peers): the admission webhook's, else the audit's. */}}
{{- define "kubediff.peersPort" -}}
{{- if .Values.admission.enabled -}}{{ .Values.admission.port }}{{- else -}}{{ .Values.audit.port }}{{- end -}}
{{- end -}}

{{/* Whether the replicas post each other records: two or more of them, and a webhook to receive them. */}}
{{- define "kubediff.peers" -}}
{{- if and (gt (int .Values.replicaCount) 1) (or .Values.admission.enabled .Values.audit.enabled) -}}true{{- end -}}
{{- end -}}
