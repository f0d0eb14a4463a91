{{/* Names, labels and small shared pieces of the chart. */}}

{{/* The chart name, or nameOverride. */}}
{{- define "mto.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The prefix of every object name: `<release>-<chart>`, or just the release name when it
already holds the chart name. Leaves room for the longest suffix ("-mcp-frontend"). */}}
{{- define "mto.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 50 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 50 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Names of the two components' objects. */}}
{{- define "mto.operator.fullname" -}}
{{- printf "%s-operator" (include "mto.fullname" .) }}
{{- end }}
{{- define "mto.operator.warmKeySecret" -}}
{{- printf "%s-warm-key" (include "mto.operator.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- define "mto.frontend.fullname" -}}
{{- printf "%s-mcp-frontend" (include "mto.fullname" .) }}
{{- end }}

{{/* Name of a cluster-scoped object: carries the release namespace, so releases of the same
name in two namespaces never share one. Argument: (list $ "suffix"). */}}
{{- define "mto.clusterName" -}}
{{- $ := index . 0 }}
{{- printf "%s-%s-%s" $.Release.Namespace (include "mto.fullname" $) (index . 1) | trunc 253 | trimSuffix "-" }}
{{- end }}

{{/* The example ClusterRole callers are bound to (authorization.mode=rbac). */}}
{{- define "mto.callerRoleName" -}}
{{- include "mto.clusterName" (list . "caller") }}
{{- end }}

{{/* chart label value. */}}
{{- define "mto.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels on every object. */}}
{{- define "mto.labels" -}}
helm.sh/chart: {{ include "mto.chart" . }}
app.kubernetes.io/name: {{ include "mto.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: mcp-task-operator
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Selector labels of a component. Argument: (list $ "operator"|"mcp-frontend"). */}}
{{- define "mto.selectorLabels" -}}
{{- $ := index . 0 -}}
app.kubernetes.io/name: {{ include "mto.name" $ }}
app.kubernetes.io/instance: {{ $.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end }}

{{/* All labels of a component's objects. Argument: (list $ "component"). */}}
{{- define "mto.componentLabels" -}}
{{ include "mto.labels" (index . 0) }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end }}

{{/* ServiceAccount names. */}}
{{- define "mto.operator.serviceAccountName" -}}
{{- if .Values.operator.serviceAccount.create }}
{{- default (include "mto.operator.fullname" .) .Values.operator.serviceAccount.name }}
{{- else }}
{{- required "operator.serviceAccount.name is required when operator.serviceAccount.create is false" .Values.operator.serviceAccount.name }}
{{- end }}
{{- end }}
{{- define "mto.frontend.serviceAccountName" -}}
{{- if .Values.frontend.serviceAccount.create }}
{{- default (include "mto.frontend.fullname" .) .Values.frontend.serviceAccount.name }}
{{- else }}
{{- required "frontend.serviceAccount.name is required when frontend.serviceAccount.create is false" .Values.frontend.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Image reference. Argument: (list $ .Values.<component>.image). */}}
{{- define "mto.image" -}}
{{- $ := index . 0 }}
{{- $image := index . 1 }}
{{- if $image.digest }}
{{- printf "%s@%s" $image.repository $image.digest }}
{{- else }}
{{- printf "%s:%s" $image.repository (default $.Chart.AppVersion $image.tag) }}
{{- end }}
{{- end }}

{{/* True (non-empty) when every rule is confined to the release namespace. */}}
{{- define "mto.namespaced" -}}
{{- if eq .Values.rbac.scope "namespace" }}true{{ end }}
{{- end }}

{{/* The namespace the front end serves. */}}
{{- define "mto.frontend.namespace" -}}
{{- if include "mto.namespaced" . }}
{{- if and .Values.frontend.namespace (ne .Values.frontend.namespace .Release.Namespace) }}
{{- fail "frontend.namespace must be empty or the release namespace with rbac.scope=namespace" }}
{{- end }}
{{- .Release.Namespace }}
{{- else }}
{{- default .Release.Namespace .Values.frontend.namespace }}
{{- end }}
{{- end }}

{{/* The audiences the front end accepts tokens for (tokenreview mode), comma-separated:
frontend.auth.tokenReview.audiences, or when that is empty the release's own,
`mcp-task-operator.<release namespace>.<fullname>`. Namespace and fullname name one install in
the cluster (namespaces hold no dots), so no two releases share the default. */}}
{{- define "mto.frontend.audiences" -}}
{{- $own := printf "mcp-task-operator.%s.%s" .Release.Namespace (include "mto.fullname" .) }}
{{- join "," (.Values.frontend.auth.tokenReview.audiences | default (list $own)) }}
{{- end }}

{{/* The audience callers mint tokens for: the first of mto.frontend.audiences. The front end
Service publishes it as annotation mcptasks.io/token-audience. */}}
{{- define "mto.frontend.audience" -}}
{{- first (splitList "," (include "mto.frontend.audiences" .)) }}
{{- end }}

{{/* The operator's Lease name. */}}
{{- define "mto.operator.leaseName" -}}
{{- default (include "mto.operator.fullname" .) .Values.operator.config.leaseName }}
{{- end }}

{{/* Fails rendering on values that the binaries would refuse at startup. */}}
{{- define "mto.validate" -}}
{{- $auth := .Values.frontend.auth }}
{{- if and (eq $auth.mode "none") (not $auth.allowUnauthenticated) }}
{{- fail "frontend.auth.mode=none needs frontend.auth.allowUnauthenticated=true (local development only)" }}
{{- end }}
{{- if and (eq $auth.mode "static") (not $auth.static.existingSecret) }}
{{- fail "frontend.auth.mode=static needs frontend.auth.static.existingSecret" }}
{{- end }}
{{- $opc := .Values.operator.config }}
{{- if ge (int $opc.leaseRenewDeadlineSeconds) (int $opc.leaseDurationSeconds) }}
{{- fail "operator.config.leaseRenewDeadlineSeconds must be below operator.config.leaseDurationSeconds: the leader must stop before a standby may take the Lease over" }}
{{- end }}
{{- if ge (int $opc.leaseRetryPeriodSeconds) (int $opc.leaseRenewDeadlineSeconds) }}
{{- fail "operator.config.leaseRetryPeriodSeconds must be below operator.config.leaseRenewDeadlineSeconds" }}
{{- end }}
{{- if le (int $opc.reconcileStallSeconds) (int $opc.apiTimeoutSeconds) }}
{{- fail "operator.config.reconcileStallSeconds must be above operator.config.apiTimeoutSeconds" }}
{{- end }}
{{- end }}

{{/* The PodDisruptionBudget spec body. Argument: the component's podDisruptionBudget values. */}}
{{- define "mto.pdbBudget" -}}
{{- if hasKey . "maxUnavailable" }}
maxUnavailable: {{ .maxUnavailable }}
{{- else }}
minAvailable: {{ .minAvailable }}
{{- end }}
{{- end }}

{{/*
OpenTelemetry env of both containers (values.yaml, tracing); empty while tracing is off. Each
binary names its own service (mcp-task-operator, mcp-task-frontend).
*/}}
{{- define "mto.tracingEnv" -}}
{{- with .Values.tracing }}
{{- if .otlpEndpoint }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ .otlpEndpoint | quote }}
- name: OTEL_TRACES_SAMPLER
  value: {{ .sampler | quote }}
{{- with .samplerArg }}
- name: OTEL_TRACES_SAMPLER_ARG
  value: {{ . | quote }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
