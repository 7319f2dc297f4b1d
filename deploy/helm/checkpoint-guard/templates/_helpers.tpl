{{- define "checkpoint-guard.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "checkpoint-guard.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "checkpoint-guard.labels" -}}
app.kubernetes.io/name: {{ include "checkpoint-guard.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "checkpoint-guard.selector" -}}
app.kubernetes.io/name: {{ include "checkpoint-guard.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "checkpoint-guard.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "checkpoint-guard.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "checkpoint-guard.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* CG_* environment of every container: Kafka, security (secrets by reference), topics, config. */}}
{{- define "checkpoint-guard.env" -}}
- name: CG_BROKER
  value: {{ printf "kafka://%s" (.Values.kafka.bootstrapServers | replace "," ";") | quote }}
- name: CG_SECURITY_PROTOCOL
  value: {{ .Values.kafka.securityProtocol | quote }}
{{- if hasPrefix "SASL" .Values.kafka.securityProtocol }}
- name: CG_SASL_MECHANISM
  value: {{ .Values.kafka.sasl.mechanism | quote }}
- name: CG_SASL_USERNAME
  value: {{ required "kafka.sasl.username is required with SASL" .Values.kafka.sasl.username | quote }}
- name: CG_SASL_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ required "kafka.sasl.passwordSecret.name is required with SASL (secrets never go in values)" .Values.kafka.sasl.passwordSecret.name }}
      key: {{ .Values.kafka.sasl.passwordSecret.key }}
{{- end }}
{{- if .Values.kafka.tls.caSecret.name }}
- name: CG_SSL_CAFILE
  value: /etc/checkpoint-guard/kafka-ca/{{ .Values.kafka.tls.caSecret.key }}
{{- end }}
{{- if .Values.kafka.tls.clientSecret.name }}
- name: CG_SSL_CERTFILE
  value: /etc/checkpoint-guard/kafka-client/{{ .Values.kafka.tls.clientSecret.certKey }}
- name: CG_SSL_KEYFILE
  value: /etc/checkpoint-guard/kafka-client/{{ .Values.kafka.tls.clientSecret.keyKey }}
{{- end }}
- name: CG_COMPACTION_TOPIC
  value: {{ .Values.topics.compaction | quote }}
- name: CG_ARTIFACT_TOPIC
  value: {{ .Values.topics.artifact | quote }}
- name: CG_ALERTS_TOPIC
  value: {{ .Values.topics.alerts | quote }}
- name: CG_VERDICTS_TOPIC
  value: {{ .Values.topics.verdicts | quote }}
- name: CG_STATUS_TOPIC
  value: {{ .Values.topics.status | quote }}
- name: CG_DEADLETTER_TOPIC
  value: {{ .Values.topics.deadletter | quote }}
- name: CG_REMEDIATION_TOPIC
  value: {{ .Values.topics.remediation | quote }}
- name: CG_REMEDIATION_GROUP
  value: {{ .Values.remediation.group | quote }}
{{- range $name, $value := .Values.config }}
- name: {{ $name }}
  value: {{ $value | quote }}
{{- end }}
{{- end -}}

{{/* Volumes for the Kafka TLS secrets, and /tmp (the root filesystem is read-only). */}}
{{- define "checkpoint-guard.volumes" -}}
- name: tmp
  emptyDir: {}
{{- if .Values.kafka.tls.caSecret.name }}
- name: kafka-ca
  secret:
    secretName: {{ .Values.kafka.tls.caSecret.name }}
{{- end }}
{{- if .Values.kafka.tls.clientSecret.name }}
- name: kafka-client
  secret:
    secretName: {{ .Values.kafka.tls.clientSecret.name }}
{{- end }}
{{- end -}}

{{- define "checkpoint-guard.volumeMounts" -}}
- name: tmp
  mountPath: /tmp
{{- if .Values.kafka.tls.caSecret.name }}
- name: kafka-ca
  mountPath: /etc/checkpoint-guard/kafka-ca
  readOnly: true
{{- end }}
{{- if .Values.kafka.tls.clientSecret.name }}
- name: kafka-client
  mountPath: /etc/checkpoint-guard/kafka-client
  readOnly: true
{{- end }}
{{- end -}}
