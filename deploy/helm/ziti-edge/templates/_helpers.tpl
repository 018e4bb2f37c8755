{{/*
Names and labels.
*/}}
{{- define "ziti-edge.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "ziti-edge.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "ziti-edge.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Name of one component's objects. Context: dict "root" $ "component" "<name>". */}}
{{- define "ziti-edge.componentName" -}}
{{- printf "%s-%s" (include "ziti-edge.fullname" .root) .component | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "ziti-edge.labels" -}}
helm.sh/chart: {{ include "ziti-edge.chart" . }}
app.kubernetes.io/name: {{ include "ziti-edge.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: ziti-edge
{{- end }}

{{/* Context: dict "root" $ "component" "<name>". */}}
{{- define "ziti-edge.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ziti-edge.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* Context: dict "root" $ "component" "<name>". */}}
{{- define "ziti-edge.componentLabels" -}}
{{ include "ziti-edge.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/*
The arguments of a service's node process: its node flags (values services.<name>.nodeArgs; deploy/bundles.ts
serviceRuntime) and its bundle in the image. deploy/check.ts holds both to the image. Context: dict "root" $ "name"
"<service>".
*/}}
{{- define "ziti-edge.nodeArgs" -}}
{{- range (index .root.Values.services .name).nodeArgs }}
- {{ . | quote }}
{{- end }}
- {{ printf "/app/dist/%s.mjs" .name | quote }}
{{- end }}

{{/* The label of the Services that name a health port, which the ServiceMonitor selects. Context: the root. */}}
{{- define "ziti-edge.metricsLabel" -}}
ziti-edge/metrics: {{ .Release.Name | quote }}
{{- end }}

{{- define "ziti-edge.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{- define "ziti-edge.secretName" -}}
{{- default (include "ziti-edge.fullname" .) .Values.existingSecret }}
{{- end }}

{{/*
What each service needs from the runtime contract (deploy/README.md): the session timeout, the environment
variable of its own database (also its key in the Secret), Redis, the at-rest secret key, the admin login, the
advertised address, the HTTPS listener, the optional PKI signer files, the audit records' retention, the routers'
control port (fabric). The gateway and fabric own no database (no migration Job). Use:
include "ziti-edge.traits" $ | fromYaml
*/}}
{{- define "ziti-edge.traits" -}}
gateway:
  sessionTimeout: true
  database: ""
  redis: true
  secretKey: false
  admin: false
  advertised: true
  https: true
  signer: false
  auditRetention: false
  control: false
auth:
  sessionTimeout: true
  database: AUTH_DATABASE_URL
  redis: true
  secretKey: true
  admin: true
  advertised: true
  https: false
  signer: false
  auditRetention: false
  control: false
pki-enrollment:
  sessionTimeout: false
  database: PKI_DATABASE_URL
  redis: false
  secretKey: true
  admin: false
  advertised: true
  https: false
  signer: true
  auditRetention: false
  control: false
policy:
  sessionTimeout: false
  database: POLICY_DATABASE_URL
  redis: false
  secretKey: false
  admin: false
  advertised: false
  https: false
  signer: false
  auditRetention: false
  control: false
inventory:
  sessionTimeout: false
  database: INVENTORY_DATABASE_URL
  redis: false
  secretKey: false
  admin: false
  advertised: false
  https: false
  signer: false
  auditRetention: false
  control: false
audit:
  sessionTimeout: false
  database: AUDIT_DATABASE_URL
  redis: false
  secretKey: false
  admin: false
  advertised: true
  https: false
  signer: false
  auditRetention: true
  control: false
fabric:
  sessionTimeout: false
  database: ""
  redis: true
  secretKey: false
  admin: false
  advertised: false
  https: false
  signer: false
  auditRetention: false
  control: true
{{- end }}

{{/* The traits of one service; fails on a name that is not one of the seven. Context: dict "root" $ "name" "<service>". */}}
{{- define "ziti-edge.serviceTraits" -}}
{{- $all := include "ziti-edge.traits" .root | fromYaml }}
{{- if not (hasKey $all .name) }}
{{- fail (printf "services.%s: unknown service; expected gateway, auth, pki-enrollment, policy, inventory, audit or fabric" .name) }}
{{- end }}
{{- index $all .name | toYaml }}
{{- end }}

{{/*
The host:port routers are told to use (fabric's ZITI_CTRL_ADVERTISED_ADDRESS): values fabric.advertisedAddress, else
advertisedAddress's host with the control Service's port. The control port serves the controller's server
certificate, which pki-enrollment issues for advertisedAddress's host and this one's (it is given this address too), so
the name routers dial is in it. Context: the root.
*/}}
{{- define "ziti-edge.ctrlAdvertisedAddress" -}}
{{- if .Values.fabric.advertisedAddress }}
{{- .Values.fabric.advertisedAddress }}
{{- else }}
{{- $address := required "advertisedAddress is required: the host:port clients use to reach the gateway, e.g. ziti.example.com:1280" .Values.advertisedAddress }}
{{- printf "%s:%v" (regexReplaceAll ":[0-9]+$" $address "") .Values.fabric.service.port }}
{{- end }}
{{- end }}

{{- define "ziti-edge.signerDir" -}}
/etc/ziti/pki-signer
{{- end }}

{{/*
Where each secret variable can come from instead: a Secret of the user's (its name and key in values). One line
per variable; deploy/check.ts reads this table.
*/}}
{{- define "ziti-edge.secretSources" -}}
{{- $own := dict }}
{{- $_ := set $own "ZITI_SECRET_KEY" (list .Values.secretKeyExistingSecret .Values.secretKeyExistingSecretKey) }}
{{- $_ := set $own "ZITI_ADMIN_PASSWORD" (list .Values.admin.existingSecret .Values.admin.existingSecretPasswordKey) }}
{{- $_ := set $own "NATS_URL" (list .Values.nats.existingSecret .Values.nats.existingSecretKey) }}
{{- $_ := set $own "REDIS_URL" (list .Values.redis.existingSecret .Values.redis.existingSecretKey) }}
{{- $_ := set $own "AUTH_DATABASE_URL" (list .Values.postgres.existingSecret .Values.postgres.existingSecretKeys.auth) }}
{{- $_ := set $own "PKI_DATABASE_URL" (list .Values.postgres.existingSecret .Values.postgres.existingSecretKeys.pki) }}
{{- $_ := set $own "POLICY_DATABASE_URL" (list .Values.postgres.existingSecret .Values.postgres.existingSecretKeys.policy) }}
{{- $_ := set $own "INVENTORY_DATABASE_URL" (list .Values.postgres.existingSecret .Values.postgres.existingSecretKeys.inventory) }}
{{- $_ := set $own "AUDIT_DATABASE_URL" (list .Values.postgres.existingSecret .Values.postgres.existingSecretKeys.audit) }}
{{- toYaml $own }}
{{- end }}

{{/*
The Secret and key a secret variable is read from: the user's own Secret for it when one is named, else
existingSecret or the chart's Secret under the variable's name. Context: dict "root" $ "key" "<NAME>".
*/}}
{{- define "ziti-edge.secretRef" -}}
{{- $sources := include "ziti-edge.secretSources" .root | fromYaml }}
{{- $own := index $sources .key | default (list) }}
{{- if and $own (first $own) }}
name: {{ first $own }}
key: {{ required (printf "the key in the Secret %s that holds %s is required" (first $own) .key) (last $own) }}
{{- else }}
name: {{ include "ziti-edge.secretName" .root }}
key: {{ .key }}
{{- end }}
{{- end }}

{{/* Whether the chart makes a Secret: no existingSecret and at least one variable not taken from the user's own Secrets. Non-empty = yes. */}}
{{- define "ziti-edge.chartSecret" -}}
{{- if not .Values.existingSecret }}
{{- range $key, $own := include "ziti-edge.secretSources" . | fromYaml }}
{{- if not (first $own) }}{{ $key }} {{ end }}
{{- end }}
{{- end }}
{{- end }}

{{/* A variable from its Secret (see ziti-edge.secretRef). Context: dict "root" $ "key" "<NAME>". */}}
{{- define "ziti-edge.secretEnv" -}}
- name: {{ .key }}
  valueFrom:
    secretKeyRef:
      {{- include "ziti-edge.secretRef" . | trim | nindent 6 }}
{{- end }}

{{/* The container environment of one service. Context: dict "root" $ "name" "<service>". */}}
{{- define "ziti-edge.env" -}}
{{- $root := .root }}
{{- $traits := include "ziti-edge.serviceTraits" . | fromYaml -}}
- name: ZITI_SERVICE
  value: {{ .name | quote }}
- name: LOG_LEVEL
  value: {{ $root.Values.logLevel | quote }}
- name: HEALTH_PORT
  value: "8080"
- name: HEALTH_BIND
  value: "0.0.0.0"
- name: ZITI_SNAPSHOT_DIR
  value: /var/lib/ziti/snapshots
{{ include "ziti-edge.secretEnv" (dict "root" $root "key" "NATS_URL") }}
{{- if $traits.redis }}
{{ include "ziti-edge.secretEnv" (dict "root" $root "key" "REDIS_URL") }}
{{- end }}
{{- if $traits.database }}
{{ include "ziti-edge.secretEnv" (dict "root" $root "key" $traits.database) }}
{{- end }}
{{- if $traits.secretKey }}
{{ include "ziti-edge.secretEnv" (dict "root" $root "key" "ZITI_SECRET_KEY") }}
{{- end }}
{{- if $traits.admin }}
- name: ZITI_ADMIN_USERNAME
  value: {{ required "admin.username is required" $root.Values.admin.username | quote }}
{{ include "ziti-edge.secretEnv" (dict "root" $root "key" "ZITI_ADMIN_PASSWORD") }}
{{- end }}
{{- if $traits.sessionTimeout }}
- name: ZITI_SESSION_TIMEOUT_MINUTES
  value: {{ $root.Values.sessionTimeoutMinutes | quote }}
{{- end }}
{{- if $traits.advertised }}
- name: ZITI_ADVERTISED_ADDRESS
  value: {{ required "advertisedAddress is required: the host:port clients use to reach the gateway, e.g. ziti.example.com:1280" $root.Values.advertisedAddress | quote }}
{{- end }}
{{- if $traits.https }}
- name: ZITI_BIND
  value: "0.0.0.0"
- name: ZITI_PORT
  value: "1280"
{{- end }}
{{- if $traits.signer }}
{{- /* The server certificate pki-enrollment issues names the control port's host too: routers verify it. */}}
- name: ZITI_CTRL_ADVERTISED_ADDRESS
  value: {{ include "ziti-edge.ctrlAdvertisedAddress" $root | quote }}
{{- end }}
{{- if and $traits.signer $root.Values.pki.signer.existingSecret }}
- name: ZITI_PKI_SIGNER_CERT_FILE
  value: {{ printf "%s/%s" (include "ziti-edge.signerDir" $root) $root.Values.pki.signer.certKey | quote }}
- name: ZITI_PKI_SIGNER_KEY_FILE
  value: {{ printf "%s/%s" (include "ziti-edge.signerDir" $root) $root.Values.pki.signer.keyKey | quote }}
{{- end }}
{{- if $traits.auditRetention }}
- name: ZITI_AUDIT_RETENTION_DAYS
  value: {{ $root.Values.audit.retentionDays | quote }}
{{- end }}
{{- if $traits.control }}
- name: ZITI_CTRL_BIND
  value: "0.0.0.0"
- name: ZITI_CTRL_PORT
  value: "6262"
- name: ZITI_CTRL_ADVERTISED_ADDRESS
  value: {{ include "ziti-edge.ctrlAdvertisedAddress" $root | quote }}
{{- end }}
{{- with (index $root.Values.services .name).extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Volumes of one service's pods: a writable /tmp (the root filesystem is read-only), the snapshots and the PKI
signer. Context: dict "root" $ "name" "<service>". */}}
{{- define "ziti-edge.volumes" -}}
{{- $traits := include "ziti-edge.serviceTraits" . | fromYaml -}}
- name: tmp
  emptyDir:
    sizeLimit: 256Mi
- name: snapshots
{{- if .root.Values.snapshots.existingClaim }}
  persistentVolumeClaim:
    claimName: {{ .root.Values.snapshots.existingClaim }}
{{- else }}
  emptyDir:
    sizeLimit: {{ .root.Values.snapshots.sizeLimit }}
{{- end }}
{{- if and $traits.signer .root.Values.pki.signer.existingSecret }}
- name: pki-signer
  secret:
    secretName: {{ .root.Values.pki.signer.existingSecret }}
    defaultMode: 288 # 0440: readable through fsGroup, by nobody else
    items:
      - key: {{ .root.Values.pki.signer.certKey }}
        path: {{ .root.Values.pki.signer.certKey }}
      - key: {{ .root.Values.pki.signer.keyKey }}
        path: {{ .root.Values.pki.signer.keyKey }}
{{- end }}
{{- end }}

{{/* Context: dict "root" $ "name" "<service>". */}}
{{- define "ziti-edge.volumeMounts" -}}
{{- $traits := include "ziti-edge.serviceTraits" . | fromYaml -}}
- name: tmp
  mountPath: /tmp
- name: snapshots
  mountPath: /var/lib/ziti/snapshots
{{- if and $traits.signer .root.Values.pki.signer.existingSecret }}
- name: pki-signer
  mountPath: {{ include "ziti-edge.signerDir" .root }}
  readOnly: true
{{- end }}
{{- end }}

{{/* Scheduling and security shared by every pod of the chart. Context: the root. */}}
{{- define "ziti-edge.podCommon" -}}
automountServiceAccountToken: false
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.podSecurityContext }}
securityContext:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
