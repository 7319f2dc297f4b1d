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

{{/* Partition count (config.CG_PARTITIONS, the setting's default 4 when unset). */}}
{{- define "checkpoint-guard.partitions" -}}
{{- index .Values.config "CG_PARTITIONS" | default 4 | int -}}
{{- end -}}

{{- define "checkpoint-guard.appId" -}}
{{- index .Values.config "CG_APP_ID" | default "checkpoint-guard" -}}
{{- end -}}

{{/* The workers create their own topics (state log, faust's leader topic) unless told not to,
     or unless Strimzi KafkaTopics declare every topic. */}}
{{- define "checkpoint-guard.createTopics" -}}
{{- and .Values.worker.createTopics (not .Values.strimzi.topics.enabled) -}}
{{- end -}}

{{/* The topics Job runs unless the Strimzi KafkaTopics declare the topics. */}}
{{- define "checkpoint-guard.topicsJob" -}}
{{- and .Values.topics.job.enabled (not .Values.strimzi.topics.enabled) -}}
{{- end -}}

{{- define "checkpoint-guard.kafkaUser" -}}
{{- .Values.strimzi.user.name | default (include "checkpoint-guard.fullname" .) -}}
{{- end -}}

{{/* SASL user and password secret: the values, else the chart's KafkaUser (its secret has its name). */}}
{{- define "checkpoint-guard.saslUsername" -}}
{{- .Values.kafka.sasl.username | default (ternary (include "checkpoint-guard.kafkaUser" .) "" .Values.strimzi.user.enabled) -}}
{{- end -}}
{{- define "checkpoint-guard.saslSecret" -}}
{{- .Values.kafka.sasl.passwordSecret.name | default (ternary (include "checkpoint-guard.kafkaUser" .) "" .Values.strimzi.user.enabled) -}}
{{- end -}}
{{- define "checkpoint-guard.clientSecret" -}}
{{- .Values.kafka.tls.clientSecret.name | default (ternary (include "checkpoint-guard.kafkaUser" .) "" (and .Values.strimzi.user.enabled (eq .Values.strimzi.user.authentication "tls"))) -}}
{{- end -}}

{{/* Checks JSON Schema cannot make (values.schema.json makes the others): each fails the
     render with the values to change. */}}
{{- define "checkpoint-guard.validate" -}}
{{- $partitions := include "checkpoint-guard.partitions" . | int -}}
{{- if gt (int .Values.worker.replicas) $partitions -}}
{{- fail (printf "worker.replicas=%d is more than config.CG_PARTITIONS=%d: at most %d workers get partitions, the others idle; set worker.replicas <= %d, or raise config.CG_PARTITIONS (new topics and a new CG_APP_ID, docs/OPERATIONS.md §3)" (int .Values.worker.replicas) $partitions $partitions $partitions) -}}
{{- end -}}
{{- if and .Values.monitoring.serviceMonitor.enabled .Values.monitoring.podMonitor.enabled -}}
{{- fail "monitoring.serviceMonitor.enabled and monitoring.podMonitor.enabled would scrape every worker twice: enable one" -}}
{{- end -}}
{{- if .Values.strimzi.user.enabled -}}
{{- if and (eq .Values.strimzi.user.authentication "scram-sha-512") (not (and (hasPrefix "SASL" .Values.kafka.securityProtocol) (eq .Values.kafka.sasl.mechanism "SCRAM-SHA-512"))) -}}
{{- fail (printf "strimzi.user.authentication=scram-sha-512 needs kafka.securityProtocol=SASL_SSL (or SASL_PLAINTEXT) and kafka.sasl.mechanism=SCRAM-SHA-512, not %s / %s" .Values.kafka.securityProtocol .Values.kafka.sasl.mechanism) -}}
{{- end -}}
{{- if and (eq .Values.strimzi.user.authentication "tls") (ne .Values.kafka.securityProtocol "SSL") -}}
{{- fail (printf "strimzi.user.authentication=tls needs kafka.securityProtocol=SSL, not %s" .Values.kafka.securityProtocol) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The alert rules' job selector: monitoring.prometheusRule.selector, else the job of the
     chart's own ServiceMonitor (the Service's name) or PodMonitor (<namespace>/<name>). */}}
{{- define "checkpoint-guard.jobSelector" -}}
{{- if .Values.monitoring.prometheusRule.selector -}}
{{- .Values.monitoring.prometheusRule.selector -}}
{{- else if .Values.monitoring.serviceMonitor.enabled -}}
{{- printf "job=%q, namespace=%q" (include "checkpoint-guard.fullname" .) .Release.Namespace -}}
{{- else if .Values.monitoring.podMonitor.enabled -}}
{{- printf "job=%q" (printf "%s/%s" .Release.Namespace (include "checkpoint-guard.fullname" .)) -}}
{{- else -}}
job=~".*checkpoint-guard.*"
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
  value: {{ required "kafka.sasl.username is required with SASL (or strimzi.user.enabled)" (include "checkpoint-guard.saslUsername" .) | quote }}
- name: CG_SASL_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ required "kafka.sasl.passwordSecret.name is required with SASL (secrets never go in values; or strimzi.user.enabled)" (include "checkpoint-guard.saslSecret" .) }}
      key: {{ .Values.kafka.sasl.passwordSecret.key }}
{{- end }}
{{- if .Values.kafka.tls.caSecret.name }}
- name: CG_SSL_CAFILE
  value: /etc/checkpoint-guard/kafka-ca/{{ .Values.kafka.tls.caSecret.key }}
{{- end }}
{{- if include "checkpoint-guard.clientSecret" . }}
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
- name: CG_CREATE_TOPICS
  value: {{ include "checkpoint-guard.createTopics" . | quote }}
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
{{- with include "checkpoint-guard.clientSecret" . }}
- name: kafka-client
  secret:
    secretName: {{ . }}
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
{{- if include "checkpoint-guard.clientSecret" . }}
- name: kafka-client
  mountPath: /etc/checkpoint-guard/kafka-client
  readOnly: true
{{- end }}
{{- end -}}
