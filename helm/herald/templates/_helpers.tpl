{{/*
Names, labels and the pieces shared by the hub and broker templates. Component templates loop
over "hub" and "broker" and pass this context dict:
  $ctx := dict "root" $ "name" "hub" "values" $.Values.hub
  root      the chart's top-level context ($)
  name      "hub" or "broker"
  values    .Values.<name>
*/}}

{{- define "herald.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "herald.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "herald.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels on every object. Takes the root context. */}}
{{- define "herald.labels" -}}
helm.sh/chart: {{ include "herald.chart" . }}
app.kubernetes.io/name: {{ include "herald.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: herald
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "herald.componentName" -}}
{{- printf "%s-%s" (include "herald.fullname" .root) .name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "herald.selectorLabels" -}}
app.kubernetes.io/name: {{ include "herald.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .name }}
{{- end -}}

{{- define "herald.componentLabels" -}}
{{ include "herald.labels" .root }}
app.kubernetes.io/component: {{ .name }}
{{- end -}}

{{- define "herald.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "herald.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "herald.image" -}}
{{- $image := .Values.image -}}
{{- if $image.digest -}}
{{- printf "%s@%s" $image.repository $image.digest -}}
{{- else -}}
{{- printf "%s:%s" $image.repository (default .Chart.AppVersion $image.tag | toString) -}}
{{- end -}}
{{- end -}}

{{/* Redis Secret (URL, or passwords): the user's, or the one this chart creates from redis.url/password/sentinelPassword. */}}
{{- define "herald.redisSecretName" -}}
{{- if .Values.redis.existingSecret -}}
{{- .Values.redis.existingSecret -}}
{{- else -}}
{{- printf "%s-redis" (include "herald.fullname" .) -}}
{{- end -}}
{{- end -}}

{{- define "herald.redisSecretKey" -}}
{{- if .Values.redis.existingSecret -}}
{{- .Values.redis.existingSecretKey -}}
{{- else -}}
redis-url
{{- end -}}
{{- end -}}

{{/*
A component's key material: a map of environment variable → Secret key, and the map of
environment variable → value when the chart creates the Secret. Returned as YAML:
  existing: <secret name or "">
  refs: {ENV_NAME: secret-key, ...}      variables read from the Secret
  data: {secret-key: value, ...}         contents of a chart-created Secret (empty with existing)
*/}}
{{- define "herald.keyMaterial" -}}
{{- $refs := dict -}}
{{- $data := dict -}}
{{- $existing := "" -}}
{{- if eq .name "hub" -}}
{{- $jwt := .values.jwt -}}
{{- $existing = $jwt.existingSecret -}}
{{- $pairs := list (list "MERCURE_PUBLISHER_JWT_KEY" $jwt.secretKeys.publisherJwtKey $jwt.publisherJwtKey) (list "MERCURE_SUBSCRIBER_JWT_KEY" $jwt.secretKeys.subscriberJwtKey $jwt.subscriberJwtKey) -}}
{{- range $pairs -}}
{{- $env := index . 0 -}}{{- $key := index . 1 -}}{{- $value := index . 2 -}}
{{- if and $key (or $existing $value) -}}
{{- $_ := set $refs $env $key -}}
{{- if not $existing -}}{{- $_ := set $data $key $value -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- else -}}
{{- $auth := .values.auth -}}
{{- $existing = $auth.existingSecret -}}
{{- $pairs := list (list "JWT_SECRET" $auth.secretKeys.secret $auth.secret) (list "JWT_PUBLIC_KEY" $auth.secretKeys.publicKey $auth.publicKey) -}}
{{- range $pairs -}}
{{- $env := index . 0 -}}{{- $key := index . 1 -}}{{- $value := index . 2 -}}
{{- if and $key (or $existing $value) -}}
{{- $_ := set $refs $env $key -}}
{{- if not $existing -}}{{- $_ := set $data $key $value -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- toYaml (dict "existing" $existing "refs" $refs "data" $data) -}}
{{- end -}}

{{- define "herald.keySecretName" -}}
{{- $material := include "herald.keyMaterial" . | fromYaml -}}
{{- default (include "herald.componentName" .) $material.existing -}}
{{- end -}}

{{/* Seconds between SIGTERM's preStop and SIGKILL: preStop + drain (hub) + shutdown + margin. */}}
{{- define "herald.minimumGracePeriod" -}}
{{- $values := .values -}}
{{- $drain := 0 -}}
{{- if eq .name "hub" }}{{ $drain = int $values.drainWindowSeconds }}{{ end -}}
{{- add (int $values.preStopSleepSeconds) $drain (int $values.shutdownTimeoutSeconds) -}}
{{- end -}}

{{- define "herald.terminationGracePeriod" -}}
{{- $minimum := include "herald.minimumGracePeriod" . | int -}}
{{- $explicit := .values.terminationGracePeriodSeconds -}}
{{- if kindIs "invalid" $explicit -}}
{{- add $minimum 5 -}}
{{- else if lt (int $explicit) $minimum -}}
{{- fail (printf "%s.terminationGracePeriodSeconds (%d) is below preStopSleepSeconds + %sshutdownTimeoutSeconds = %d: pods would be killed mid-drain" .name (int $explicit) (ternary "drainWindowSeconds + " "" (eq .name "hub")) $minimum) -}}
{{- else -}}
{{- int $explicit -}}
{{- end -}}
{{- end -}}

{{/* Lowest replica count the component runs with: decides whether a PDB makes sense. */}}
{{- define "herald.minimumReplicas" -}}
{{- if .values.autoscaling.enabled -}}
{{- int .values.autoscaling.minReplicas -}}
{{- else -}}
{{- int .values.replicaCount -}}
{{- end -}}
{{- end -}}

{{- define "herald.scheme" -}}
{{- if .values.tls.enabled }}HTTPS{{ else }}HTTP{{ end -}}
{{- end -}}

{{/* PromQL label matchers selecting one component of this release (ServiceMonitor defaults). */}}
{{- define "herald.promSelector" -}}
{{- $rule := .values.metrics.prometheusRule -}}
{{- if $rule.selector -}}
{{- $rule.selector -}}
{{- else -}}
{{- printf "job=%q,namespace=%q" (include "herald.componentName" .) .root.Release.Namespace -}}
{{- end -}}
{{- end -}}

{{/* JWKS URLs a component fetches keys from (decides NetworkPolicy egress ports). */}}
{{- define "herald.jwksUrls" -}}
{{- $urls := list -}}
{{- if eq .name "hub" -}}
{{- $urls = compact (list .values.mercure.publisherJwksUrl .values.mercure.subscriberJwksUrl) -}}
{{- else -}}
{{- $urls = compact (list .values.auth.jwksUrl) -}}
{{- end -}}
{{- toYaml $urls -}}
{{- end -}}

{{/* One `- name/value` env entry, omitted when the value is null or empty (service default). */}}
{{- define "herald.envVar" -}}
{{- $name := index . 0 -}}
{{- $value := index . 1 -}}
{{- if not (or (kindIs "invalid" $value) (and (kindIs "string" $value) (eq $value ""))) }}
- name: {{ $name }}
{{- /* Numbers arrive as float64: print integers without an exponent (1e+06). */}}
  value: {{ ternary (printf "%d" (int64 $value)) (toString $value) (kindIs "float64" $value) | quote }}
{{- end -}}
{{- end -}}

{{/*
The Redis topology (docs/contracts.md, "Redis topology"): exactly one of REDIS_URL,
REDIS_SENTINELS, REDIS_CLUSTER_NODES, by redis.mode; passwords only through a Secret.
*/}}
{{- define "herald.env.redis" -}}
{{- $redis := .Values.redis -}}
{{- $secretName := include "herald.redisSecretName" . -}}
{{- if eq $redis.mode "standalone" }}
- name: REDIS_URL
  valueFrom:
    secretKeyRef:
      name: {{ $secretName }}
      key: {{ include "herald.redisSecretKey" . }}
{{- else }}
{{- if eq $redis.mode "sentinel" }}
- name: REDIS_SENTINELS
  value: {{ join "," $redis.sentinel.nodes | quote }}
- name: REDIS_SENTINEL_MASTER
  value: {{ $redis.sentinel.masterName | quote }}
{{- include "herald.envVar" (list "REDIS_SENTINEL_USERNAME" $redis.sentinel.username) }}
{{- if or $redis.existingSecret $redis.sentinelPassword }}
- name: REDIS_SENTINEL_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $secretName }}
      key: {{ ternary $redis.sentinelPasswordKey "redis-sentinel-password" (not (empty $redis.existingSecret)) }}
      {{- if $redis.existingSecret }}
      optional: true
      {{- end }}
{{- end }}
{{- else }}
- name: REDIS_CLUSTER_NODES
  value: {{ join "," $redis.cluster.nodes | quote }}
{{- end }}
{{- include "herald.envVar" (list "REDIS_USERNAME" $redis.username) }}
{{- if or $redis.existingSecret $redis.password }}
- name: REDIS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $secretName }}
      key: {{ ternary $redis.passwordKey "redis-password" (not (empty $redis.existingSecret)) }}
      {{- if $redis.existingSecret }}
      optional: true
      {{- end }}
{{- end }}
{{- if $redis.tls }}
- name: REDIS_TLS
  value: "true"
{{- end }}
{{- include "herald.envVar" (list "REDIS_COMMAND_TIMEOUT" $redis.commandTimeout) }}
{{- end }}
{{- end -}}

{{/* Environment shared by both services (docs/contracts.md, "Common to both services"). */}}
{{- define "herald.env.common" -}}
{{- $values := .values -}}
- name: PORT
  value: {{ printf "%d" (int $values.containerPort) | quote }}
- name: HOST
  value: {{ $values.host | quote }}
- name: LOG_LEVEL
  value: {{ $values.logLevel | quote }}
- name: SHUTDOWN_TIMEOUT
  value: {{ printf "%ds" (int $values.shutdownTimeoutSeconds) | quote }}
{{- /* Always Redis: the in-process backend is for one development node, never for this chart. */}}
{{- include "herald.env.redis" .root }}
{{- include "herald.envVar" (list "TRUSTED_PROXIES" (join "," $values.trustedProxies)) }}
{{- if $values.tls.enabled }}
- name: TLS_CERT_FILE
  value: /etc/herald/tls/tls.crt
- name: TLS_KEY_FILE
  value: /etc/herald/tls/tls.key
{{- end }}
{{- $material := include "herald.keyMaterial" . | fromYaml }}
{{- $secretName := include "herald.keySecretName" . }}
{{- range $env, $key := $material.refs }}
- name: {{ $env }}
  valueFrom:
    secretKeyRef:
      name: {{ $secretName }}
      key: {{ $key }}
{{- end }}
{{- end -}}

{{- define "herald.env.hub" -}}
{{- $mercure := .values.mercure -}}
- name: MERCURE_DRAIN_WINDOW
  value: {{ printf "%ds" (int .values.drainWindowSeconds) | quote }}
{{- if .values.h2c.enabled }}
- name: MERCURE_H2C_PORT
  value: {{ printf "%d" (int .values.h2c.containerPort) | quote }}
- name: MERCURE_H2C_MAX_STREAMS
  value: {{ printf "%d" (int .values.h2c.maxStreams) | quote }}
{{- end }}
- name: MERCURE_DEV
  value: {{ $mercure.dev | toString | quote }}
- name: MERCURE_ANONYMOUS
  value: {{ $mercure.anonymous | toString | quote }}
- name: MERCURE_SUBSCRIPTIONS
  value: {{ $mercure.subscriptions | toString | quote }}
- name: MERCURE_TOPICS_FIELD
  value: {{ $mercure.topicsField | default false | toString | quote }}
- name: MERCURE_LEGACY_CLAIMS
  value: {{ $mercure.legacyClaims | toString | quote }}
- name: MERCURE_PUBLISHER_JWT_ALG
  value: {{ $mercure.publisherJwtAlg | quote }}
- name: MERCURE_SUBSCRIBER_JWT_ALG
  value: {{ $mercure.subscriberJwtAlg | quote }}
{{- include "herald.envVar" (list "MERCURE_PUBLISHER_JWKS_URL" $mercure.publisherJwksUrl) }}
{{- include "herald.envVar" (list "MERCURE_SUBSCRIBER_JWKS_URL" $mercure.subscriberJwksUrl) }}
{{- include "herald.envVar" (list "MERCURE_PUBLIC_URL" $mercure.publicUrl) }}
{{- include "herald.envVar" (list "MERCURE_CORS_ORIGINS" (join "," $mercure.corsOrigins)) }}
{{- include "herald.envVar" (list "MERCURE_PUBLISH_ORIGINS" (join "," $mercure.publishOrigins)) }}
{{- include "herald.envVar" (list "MERCURE_COOKIE_NAME" $mercure.cookieName) }}
{{- include "herald.envVar" (list "MERCURE_HEARTBEAT" $mercure.heartbeat) }}
{{- include "herald.envVar" (list "MERCURE_WRITE_TIMEOUT" $mercure.writeTimeout) }}
{{- include "herald.envVar" (list "MERCURE_DISPATCH_TIMEOUT" $mercure.dispatchTimeout) }}
{{- include "herald.envVar" (list "MERCURE_MAX_CONNECTION_QUEUE_BYTES" $mercure.maxConnectionQueueBytes) }}
{{- include "herald.envVar" (list "MERCURE_HISTORY_SIZE" $mercure.historySize) }}
{{- include "herald.envVar" (list "MERCURE_HISTORY_TTL" $mercure.historyTtl) }}
{{- include "herald.envVar" (list "MERCURE_LIMIT_SUBSCRIPTIONS" $mercure.limitSubscriptions) }}
{{- include "herald.envVar" (list "MERCURE_LIMIT_PUBLISH_RATE" $mercure.limitPublishRate) }}
{{- include "herald.envVar" (list "MERCURE_LIMIT_LEASE" $mercure.limitLease) }}
{{- end -}}

{{- define "herald.env.broker" -}}
{{- $auth := .values.auth -}}
- name: JWT_ENABLED
  value: {{ $auth.enabled | toString | quote }}
- name: JWT_ALGORITHM
  value: {{ $auth.algorithm | quote }}
{{- include "herald.envVar" (list "JWT_JWKS_URL" $auth.jwksUrl) }}
{{- include "herald.envVar" (list "JWT_CLOCK_SKEW" $auth.clockSkew) }}
{{- include "herald.envVar" (list "JWT_ISSUER" $auth.issuer) }}
{{- include "herald.envVar" (list "JWT_AUDIENCE" $auth.audience) }}
{{- include "herald.envVar" (list "JWT_ROLES_CLAIM" $auth.rolesClaim) }}
{{- include "herald.envVar" (list "JWT_ROLES_ARRAY_CLAIM" $auth.rolesArrayClaim) }}
{{- include "herald.envVar" (list "JWT_ROLE_ADMIN" $auth.roles.admin) }}
{{- include "herald.envVar" (list "JWT_ROLE_READ_WRITE" $auth.roles.readWrite) }}
{{- include "herald.envVar" (list "JWT_ROLE_READ_ONLY" $auth.roles.readOnly) }}
{{- include "herald.envVar" (list "JWT_ROLE_WRITE_ONLY" $auth.roles.writeOnly) }}
{{- include "herald.envVar" (list "JWT_SKIP_PATHS" (join "," $auth.skipPaths)) }}
{{- include "herald.envVar" (list "NODE_OPTIONS" .values.nodeOptions) }}
{{- include "herald.envVar" (list "DEFAULT_BATCH_SIZE" .values.defaultBatchSize) }}
{{- include "herald.envVar" (list "DEFAULT_TIMEOUT" .values.defaultTimeout) }}
{{- include "herald.envVar" (list "BROKER_METRICS_MAX_QUEUES" .values.metricsMaxQueues) }}
{{- include "herald.envVar" (list "BROKER_BODY_LIMIT_BYTES" .values.bodyLimitBytes) }}
{{- include "herald.envVar" (list "BROKER_MAX_PAYLOAD_BYTES" .values.maxPayloadBytes) }}
{{- include "herald.envVar" (list "BROKER_BODY_BUDGET_BYTES" .values.bodyBudgetBytes) }}
{{- include "herald.envVar" (list "BROKER_BODY_BUDGET_WAIT" .values.bodyBudgetWait) }}
{{- include "herald.envVar" (list "BROKER_MIN_REPLICAS_ACK" .values.minReplicasAck) }}
{{- include "herald.envVar" (list "BROKER_MIN_REPLICAS_ACK_TIMEOUT" .values.minReplicasAckTimeout) }}
{{- with .values.limits }}
{{- include "herald.envVar" (list "BROKER_LIMIT_TENANT" .tenant) }}
{{- include "herald.envVar" (list "BROKER_LIMIT_PUSH_RATE" .pushRate) }}
{{- include "herald.envVar" (list "BROKER_LIMIT_IN_FLIGHT" .inFlight) }}
{{- end }}
{{- /* The outbox relay (docs/broker-outbox.md): all three only with a hub URL (a key without one stops the broker). */}}
{{- with .values.hub }}
{{- if .url }}
- name: BROKER_HUB_URL
  value: {{ .url | quote }}
- name: BROKER_HUB_JWT_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .existingSecret }}
      key: {{ .secretKeys.jwtKey }}
- name: BROKER_HUB_JWT_ALG
  value: {{ .jwtAlg | quote }}
{{- end }}
{{- end }}
{{- with .values.encryption }}
{{- if .existingSecret }}
- name: QUEEN_ENCRYPTION_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .existingSecret }}
      key: {{ .secretKeys.key }}
{{- if .secretKeys.oldKeys }}
{{- /* Optional: the Secret holds retired keys only after a rotation. */}}
- name: QUEEN_ENCRYPTION_OLD_KEYS
  valueFrom:
    secretKeyRef:
      name: {{ .existingSecret }}
      key: {{ .secretKeys.oldKeys }}
      optional: true
{{- end }}
{{- end }}
{{- end }}
{{- end -}}
