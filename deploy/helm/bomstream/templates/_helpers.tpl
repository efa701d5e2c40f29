{{/*
Names, labels and the shared pieces of the pod specs.
*/}}

{{- define "bomstream.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "bomstream.fullname" -}}
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

{{- define "bomstream.serviceAccountName" -}}
{{- default (printf "%s-collector" (include "bomstream.fullname" .)) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "bomstream.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "bomstream.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: bomstream
{{- end -}}

{{- define "bomstream.selectorLabels" -}}
app.kubernetes.io/name: {{ include "bomstream.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/*
An image reference: .repository pinned by .digest, or at the release's tag
(image.tag, default the appVersion of .root).
*/}}
{{- define "bomstream.imageRef" -}}
{{- if .digest -}}
{{- printf "%s@%s" .repository .digest -}}
{{- else -}}
{{- printf "%s:%s" .repository (default .root.Chart.AppVersion .root.Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{- define "bomstream.image" -}}
{{- include "bomstream.imageRef" (dict "repository" .Values.image.repository "digest" .Values.image.digest "root" .) -}}
{{- end -}}

{{/*
The collector Deployment's image: collector.image (bomstream-collector, the
build without the cloud sinks) at image.tag, or image when its repository is
empty.
*/}}
{{- define "bomstream.collectorImage" -}}
{{- $img := .Values.collector.image -}}
{{- if $img.repository -}}
{{- include "bomstream.imageRef" (dict "repository" $img.repository "digest" $img.digest "root" .) -}}
{{- else -}}
{{- include "bomstream.image" . -}}
{{- end -}}
{{- end -}}

{{/* distributed: true in the distributed shape. */}}
{{- define "bomstream.distributed" -}}
{{- if eq .Values.shape "distributed" }}true{{ end -}}
{{- end -}}

{{/* Checks that cannot be said in the schema. */}}
{{- define "bomstream.validate" -}}
{{- if and (eq .Values.watch.mode "namespaced") (not .Values.watch.namespaces) -}}
{{- fail "watch.namespaces: the namespaced mode needs the list of namespaces to read" -}}
{{- end -}}
{{- if and (eq .Values.watch.mode "cluster") .Values.watch.namespaces -}}
{{- fail "watch.namespaces: set only with watch.mode: namespaced" -}}
{{- end -}}
{{- if and (include "bomstream.distributed" .) (not .Values.nats.url) -}}
{{- fail "nats.url: the distributed shape needs the NATS cluster's URL" -}}
{{- end -}}
{{- if and .Values.nats.auth.credsKey .Values.nats.auth.nkeyKey -}}
{{- fail "nats.auth.credsKey and nats.auth.nkeyKey: set one (a .creds file holds the user's nkey seed with its JWT)" -}}
{{- end -}}
{{- if and .Values.api.enabled (not .Values.api.token.secretName) -}}
{{- fail "api.token.secretName: the API listens on the pod's address and needs a token: the Secret holding it (kubectl create secret generic bomstream-api --from-literal=token=...)" -}}
{{- end -}}
{{- include "bomstream.validateAPITLS" . -}}
{{- if and .Values.networkPolicy.enabled (not .Values.networkPolicy.apiServer.cidrs) -}}
{{- fail "networkPolicy.apiServer.cidrs: give the API server's addresses (kubectl get endpointslices -n default -l kubernetes.io/service-name=kubernetes)" -}}
{{- end -}}
{{- $s := .Values.sinks -}}
{{- if not (or $s.file.enabled $s.stdout.enabled $s.gcs.enabled $s.dependencytrack.enabled $s.oci.enabled) -}}
{{- fail "sinks: enable at least one sink" -}}
{{- end -}}
{{- if and $s.gcs.enabled (not $s.gcs.bucket) -}}
{{- fail "sinks.gcs.bucket: required" -}}
{{- end -}}
{{- if and $s.dependencytrack.enabled (not $s.dependencytrack.url) -}}
{{- fail "sinks.dependencytrack.url: required" -}}
{{- end -}}
{{- if and $s.dependencytrack.enabled (not $s.dependencytrack.apiKey.secretName) -}}
{{- fail "sinks.dependencytrack.apiKey.secretName: the Secret holding the API key" -}}
{{- end -}}
{{- end -}}

{{/* Paths inside the pods. */}}
{{- define "bomstream.dataDir" -}}/var/lib/bomstream{{- end -}}
{{- define "bomstream.configDir" -}}/etc/bomstream{{- end -}}
{{- define "bomstream.secretsDir" -}}/var/run/secrets/bomstream{{- end -}}

{{/*
The pod-level settings every bomstream pod shares. Call with
(dict "root" $ "component" "collector" "token" true).
*/}}
{{- define "bomstream.podSpec" -}}
{{- $ := .root -}}
serviceAccountName: {{ include "bomstream.serviceAccountName" $ }}
automountServiceAccountToken: {{ .token }}
enableServiceLinks: false
securityContext:
  {{- toYaml $.Values.podSecurityContext | nindent 2 }}
{{- with $.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $.Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with $.Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $.Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $.Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Pod template metadata: labels and the config checksum. */}}
{{- define "bomstream.podMeta" -}}
{{- $ := .root -}}
labels:
  {{- include "bomstream.selectorLabels" $ | nindent 2 }}
  app.kubernetes.io/component: {{ .component }}
  {{- with $.Values.podLabels }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
annotations:
  checksum/config: {{ include "bomstream.configFile" $ | sha256sum }}
  {{- with $.Values.podAnnotations }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end -}}

{{/*
The container settings every bomstream container shares: image (.image, or
the release's), security,
probes, the metrics port, the config file in the environment (so that
`kubectl exec ... bomstream history` reads it too).
*/}}
{{- define "bomstream.container" -}}
{{- $ := .root -}}
image: {{ .image | default (include "bomstream.image" $) }}
imagePullPolicy: {{ $.Values.image.pullPolicy }}
securityContext:
  {{- toYaml $.Values.securityContext | nindent 2 }}
ports:
  - name: http
    containerPort: {{ $.Values.http.port }}
    protocol: TCP
  {{- if and .api $.Values.api.enabled }}
  - name: api
    containerPort: {{ $.Values.api.port }}
    protocol: TCP
  {{- end }}
livenessProbe:
  httpGet:
    path: /healthz
    port: http
  periodSeconds: 20
  timeoutSeconds: 5
  failureThreshold: 3
readinessProbe:
  httpGet:
    path: /readyz
    port: http
  periodSeconds: 10
  timeoutSeconds: 5
  failureThreshold: 3
startupProbe:
  httpGet:
    path: /healthz
    port: http
  periodSeconds: 5
  failureThreshold: 60
workingDir: {{ include "bomstream.dataDir" $ }}
{{- end -}}

{{/* The component serving the inventory API. */}}
{{- define "bomstream.apiComponent" -}}
{{- if include "bomstream.distributed" . }}sink{{ else }}all-in-one{{ end -}}
{{- end -}}

{{/* The API's TLS settings that cannot be said in the schema. */}}
{{- define "bomstream.validateAPITLS" -}}
{{- $t := .Values.api.tls -}}
{{- $issuer := $t.certManager.issuerRef.name -}}
{{- if and $t.enabled (not .Values.api.enabled) -}}
{{- fail "api.tls.enabled: the API is off: set api.enabled=true too" -}}
{{- end -}}
{{- if and $t.enabled $t.secretName $issuer -}}
{{- fail "api.tls: api.tls.secretName (an existing Secret) and api.tls.certManager.issuerRef.name (a Certificate the chart renders) are alternatives: set one" -}}
{{- end -}}
{{- if and $t.enabled (not $t.secretName) (not $issuer) -}}
{{- fail "api.tls: give the certificate: api.tls.secretName (an existing kubernetes.io/tls Secret) or api.tls.certManager.issuerRef.name (a cert-manager Issuer for the Certificate the chart renders)" -}}
{{- end -}}
{{- if and (not $t.enabled) (or $t.secretName $issuer) -}}
{{- fail "api.tls: a certificate is given but api.tls.enabled is false, so the API would serve plain HTTP: set api.tls.enabled=true, or remove api.tls.secretName and api.tls.certManager.issuerRef.name" -}}
{{- end -}}
{{- end -}}

{{/* "true" when the API serves TLS, else empty. */}}
{{- define "bomstream.apiTLS" -}}
{{- if and .Values.api.enabled .Values.api.tls.enabled -}}true{{- end -}}
{{- end -}}

{{/* The Secret holding the API's certificate: the given one, or the Certificate's. */}}
{{- define "bomstream.apiTLSSecret" -}}
{{- .Values.api.tls.secretName | default (printf "%s-api-tls" (include "bomstream.fullname" .)) -}}
{{- end -}}

{{/* The inventory API's arguments, mounts and volumes (api.enabled). */}}
{{- define "bomstream.apiArgs" -}}
{{- if .Values.api.enabled }}
- --api-listen=:{{ .Values.api.port }}
- --api-token-file={{ include "bomstream.secretsDir" . }}/api/token
{{- end }}
{{- if include "bomstream.apiTLS" . }}
- --api-tls-cert={{ include "bomstream.secretsDir" . }}/api-tls/tls.crt
- --api-tls-key={{ include "bomstream.secretsDir" . }}/api-tls/tls.key
{{- end }}
{{- end -}}

{{- define "bomstream.apiMounts" -}}
{{- if .Values.api.enabled }}
- name: api-token
  mountPath: {{ include "bomstream.secretsDir" . }}/api
  readOnly: true
{{- end }}
{{- if include "bomstream.apiTLS" . }}
- name: api-tls
  mountPath: {{ include "bomstream.secretsDir" . }}/api-tls
  readOnly: true
{{- end }}
{{- end -}}

{{- define "bomstream.apiVolumes" -}}
{{- if .Values.api.enabled }}
- name: api-token
  secret:
    secretName: {{ .Values.api.token.secretName }}
    defaultMode: 0440
    items:
      - key: {{ .Values.api.token.key }}
        path: token
{{- end }}
{{- if include "bomstream.apiTLS" . }}
- name: api-tls
  secret:
    secretName: {{ include "bomstream.apiTLSSecret" . }}
    defaultMode: 0440
    items:
      - key: tls.crt
        path: tls.crt
      - key: tls.key
        path: tls.key
{{- end }}
{{- end -}}

{{/* Environment of every container: the config file and the pod. */}}
{{- define "bomstream.env" -}}
- name: BOMSTREAM_CONFIG
  value: {{ include "bomstream.configDir" . }}/bomstream.yaml
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
{{- end -}}

{{/* NATS credentials passed as variables (distributed shape). */}}
{{- define "bomstream.natsEnv" -}}
{{- $a := .Values.nats.auth -}}
{{- range $var, $key := dict "BOMSTREAM_NATS_USER" $a.userKey "BOMSTREAM_NATS_PASSWORD" $a.passwordKey "BOMSTREAM_NATS_TOKEN" $a.tokenKey }}
{{- if $key }}
- name: {{ $var }}
  valueFrom:
    secretKeyRef:
      name: {{ required "nats.auth.secretName: the Secret holding the NATS credentials" $a.secretName }}
      key: {{ $key }}
{{- end }}
{{- end }}
{{- end -}}

{{/* NATS files: volume mounts and volumes (distributed shape). */}}
{{- define "bomstream.natsMounts" -}}
{{- if or .Values.nats.auth.credsKey .Values.nats.auth.nkeyKey }}
- name: nats-auth
  mountPath: {{ include "bomstream.secretsDir" . }}/nats-auth
  readOnly: true
{{- end }}
{{- if .Values.nats.tls.secretName }}
- name: nats-tls
  mountPath: {{ include "bomstream.secretsDir" . }}/nats-tls
  readOnly: true
{{- end }}
{{- end -}}

{{- define "bomstream.natsVolumes" -}}
{{- $a := .Values.nats.auth -}}
{{- if or $a.credsKey $a.nkeyKey }}
- name: nats-auth
  secret:
    secretName: {{ required "nats.auth.secretName: the Secret holding the NATS credentials" $a.secretName }}
    defaultMode: 0440
    items:
      {{- with $a.credsKey }}
      - key: {{ . }}
        path: nats.creds
      {{- end }}
      {{- with $a.nkeyKey }}
      - key: {{ . }}
        path: nats.nk
      {{- end }}
{{- end }}
{{- $t := .Values.nats.tls -}}
{{- if $t.secretName }}
- name: nats-tls
  secret:
    secretName: {{ $t.secretName }}
    defaultMode: 0440
    items:
      {{- with $t.caKey }}
      - key: {{ . }}
        path: ca.crt
      {{- end }}
      {{- with $t.certKey }}
      - key: {{ . }}
        path: tls.crt
      {{- end }}
      {{- with $t.keyKey }}
      - key: {{ . }}
        path: tls.key
      {{- end }}
{{- end }}
{{- end -}}

{{/* The sinks' credential files: volume mounts and volumes. */}}
{{- define "bomstream.sinkMounts" -}}
{{- $s := .Values.sinks -}}
{{- if and $s.gcs.enabled $s.gcs.credentials.secretName }}
- name: gcs-credentials
  mountPath: {{ include "bomstream.secretsDir" . }}/gcs
  readOnly: true
{{- end }}
{{- if $s.dependencytrack.enabled }}
- name: dtrack-api-key
  mountPath: {{ include "bomstream.secretsDir" . }}/dtrack
  readOnly: true
{{- if $s.dependencytrack.ca.configMapName }}
- name: dtrack-ca
  mountPath: {{ include "bomstream.configDir" . }}/dtrack-ca
  readOnly: true
{{- end }}
{{- end }}
{{- if and $s.oci.enabled $s.oci.dockerConfig.secretName }}
- name: oci-docker-config
  mountPath: {{ include "bomstream.secretsDir" . }}/oci
  readOnly: true
{{- end }}
{{- if include "bomstream.signs" . }}
{{- if .Values.signing.key.secretName }}
- name: signing-key
  mountPath: {{ include "bomstream.secretsDir" . }}/signing
  readOnly: true
{{- end }}
{{- if .Values.signing.keyless.enabled }}
- name: sigstore-token
  mountPath: /var/run/secrets/tokens
  readOnly: true
{{- end }}
{{- end }}
{{- end -}}

{{/* "true" when an enabled oci or gcs sink signs (attest), else empty. */}}
{{- define "bomstream.signs" -}}
{{- $s := .Values.sinks -}}
{{- if or (and $s.oci.enabled $s.oci.attest) (and $s.gcs.enabled $s.gcs.attest) -}}true{{- end -}}
{{- end -}}

{{- define "bomstream.sinkVolumes" -}}
{{- $s := .Values.sinks -}}
{{- if and $s.gcs.enabled $s.gcs.credentials.secretName }}
- name: gcs-credentials
  secret:
    secretName: {{ $s.gcs.credentials.secretName }}
    defaultMode: 0440
    items:
      - key: {{ $s.gcs.credentials.key }}
        path: credentials.json
{{- end }}
{{- if $s.dependencytrack.enabled }}
- name: dtrack-api-key
  secret:
    secretName: {{ $s.dependencytrack.apiKey.secretName }}
    defaultMode: 0440
    items:
      - key: {{ $s.dependencytrack.apiKey.key }}
        path: api-key
{{- if $s.dependencytrack.ca.configMapName }}
- name: dtrack-ca
  configMap:
    name: {{ $s.dependencytrack.ca.configMapName }}
    items:
      - key: {{ $s.dependencytrack.ca.key }}
        path: ca.crt
{{- end }}
{{- end }}
{{- if and $s.oci.enabled $s.oci.dockerConfig.secretName }}
- name: oci-docker-config
  secret:
    secretName: {{ $s.oci.dockerConfig.secretName }}
    defaultMode: 0440
    items:
      - key: {{ $s.oci.dockerConfig.key }}
        path: config.json
{{- end }}
{{- if include "bomstream.signs" . }}
{{- if .Values.signing.key.secretName }}
- name: signing-key
  secret:
    secretName: {{ .Values.signing.key.secretName }}
    defaultMode: 0440
    items:
      - key: {{ .Values.signing.key.key }}
        path: signing.key
{{- end }}
{{- if .Values.signing.keyless.enabled }}
- name: sigstore-token
  projected:
    sources:
      - serviceAccountToken:
          audience: {{ .Values.signing.keyless.audience }}
          expirationSeconds: 3600
          path: sigstore
{{- end }}
{{- end }}
{{- end -}}

{{/* An edge's leaf-node link files: volume mounts and volumes (all-in-one shape). */}}
{{- define "bomstream.fleetMounts" -}}
{{- $h := .Values.fleet.edge.hub -}}
{{- if and $h.url $h.auth.credsKey }}
- name: fleet-hub-auth
  mountPath: {{ include "bomstream.secretsDir" . }}/fleet-hub-auth
  readOnly: true
{{- end }}
{{- if and $h.url $h.tls.secretName }}
- name: fleet-hub-tls
  mountPath: {{ include "bomstream.secretsDir" . }}/fleet-hub-tls
  readOnly: true
{{- end }}
{{- end -}}

{{- define "bomstream.fleetVolumes" -}}
{{- $h := .Values.fleet.edge.hub -}}
{{- if and $h.url $h.auth.credsKey }}
- name: fleet-hub-auth
  secret:
    secretName: {{ required "fleet.edge.hub.auth.secretName: the Secret holding the hub link's credentials" $h.auth.secretName }}
    defaultMode: 0440
    items:
      - key: {{ $h.auth.credsKey }}
        path: hub.creds
{{- end }}
{{- if and $h.url $h.tls.secretName }}
- name: fleet-hub-tls
  secret:
    secretName: {{ $h.tls.secretName }}
    defaultMode: 0440
    items:
      {{- with $h.tls.caKey }}
      - key: {{ . }}
        path: ca.crt
      {{- end }}
      {{- with $h.tls.certKey }}
      - key: {{ . }}
        path: tls.crt
      {{- end }}
      {{- with $h.tls.keyKey }}
      - key: {{ . }}
        path: tls.key
      {{- end }}
{{- end }}
{{- end -}}

{{/* "true" when the all-in-one pod is an edge that only collects
(fleet.edge.collectorOnly with fleet.edge.domain), else empty. */}}
{{- define "bomstream.edgeCollectorOnly" -}}
{{- if and (eq .Values.shape "all-in-one") .Values.fleet.edge.domain .Values.fleet.edge.collectorOnly -}}true{{- end -}}
{{- end -}}
