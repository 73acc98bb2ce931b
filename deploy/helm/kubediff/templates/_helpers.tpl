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
