{{/*
The bomstream configuration file (the format of deploy/bomstream.yaml).
bomstream checks every key strictly, so only keys that exist are rendered,
and only when they are set. Secrets never appear here: they are files on
volumes or variables from Secrets, named here by path or variable.
*/}}

{{- define "bomstream.configFile" -}}
{{- $v := .Values -}}
{{- $cfg := dict "cluster" $v.cluster -}}

{{- /* stream */ -}}
{{- $stream := dict -}}
{{- if include "bomstream.distributed" . -}}
{{- $_ := set $stream "url" $v.nats.url -}}
{{- $_ := set $stream "replicas" (int $v.nats.streamReplicas) -}}
{{- $sec := printf "%s/" (include "bomstream.secretsDir" .) -}}
{{- if $v.nats.auth.credsKey }}{{ $_ := set $stream "credsFile" (print $sec "nats-auth/nats.creds") }}{{ end -}}
{{- if $v.nats.auth.nkeyKey }}{{ $_ := set $stream "nkeyFile" (print $sec "nats-auth/nats.nk") }}{{ end -}}
{{- if and $v.nats.tls.secretName $v.nats.tls.caKey }}{{ $_ := set $stream "tlsCA" (print $sec "nats-tls/ca.crt") }}{{ end -}}
{{- if and $v.nats.tls.secretName $v.nats.tls.certKey }}{{ $_ := set $stream "tlsCert" (print $sec "nats-tls/tls.crt") }}{{ end -}}
{{- if and $v.nats.tls.secretName $v.nats.tls.keyKey }}{{ $_ := set $stream "tlsKey" (print $sec "nats-tls/tls.key") }}{{ end -}}
{{- with $v.fleet.edges }}{{ $_ := set $stream "edges" . }}{{ end -}}
{{- else -}}
{{- $_ := set $stream "dataDir" (printf "%s/data" (include "bomstream.dataDir" .)) -}}
{{- $e := $v.fleet.edge -}}
{{- with $e.domain }}{{ $_ := set $stream "domain" . }}{{ end -}}
{{- if $e.hub.url -}}
{{- $sec := printf "%s/" (include "bomstream.secretsDir" .) -}}
{{- $hub := dict "url" $e.hub.url -}}
{{- if $e.hub.auth.credsKey }}{{ $_ := set $hub "credsFile" (print $sec "fleet-hub-auth/hub.creds") }}{{ end -}}
{{- if and $e.hub.tls.secretName $e.hub.tls.caKey }}{{ $_ := set $hub "tlsCA" (print $sec "fleet-hub-tls/ca.crt") }}{{ end -}}
{{- if and $e.hub.tls.secretName $e.hub.tls.certKey }}{{ $_ := set $hub "tlsCert" (print $sec "fleet-hub-tls/tls.crt") }}{{ end -}}
{{- if and $e.hub.tls.secretName $e.hub.tls.keyKey }}{{ $_ := set $hub "tlsKey" (print $sec "fleet-hub-tls/tls.key") }}{{ end -}}
{{- $_ := set $stream "hub" $hub -}}
{{- end -}}
{{- end -}}
{{- with $v.stream.maxAge }}{{ $_ := set $stream "maxAge" . }}{{ end -}}
{{- with $v.stream.maxBytes }}{{ $_ := set $stream "maxBytes" (int64 .) }}{{ end -}}
{{- $_ := set $cfg "stream" $stream -}}

{{- /* collector: normalization */ -}}
{{- $col := dict -}}
{{- with $v.collector.envAllow }}{{ $_ := set $col "envAllow" . }}{{ end -}}
{{- with $v.collector.labelAllow }}{{ $_ := set $col "labelAllow" . }}{{ end -}}
{{- with $v.collector.argAllow }}{{ $_ := set $col "argAllow" . }}{{ end -}}
{{- if $v.collector.profiles }}{{ $_ := set $col "profilesFile" (printf "%s/profiles.yaml" (include "bomstream.configDir" .)) }}{{ end -}}
{{- if $col }}{{ $_ := set $cfg "collector" $col }}{{ end -}}

{{- /* kubernetes: the cluster source */ -}}
{{- $k := dict -}}
{{- if eq $v.watch.mode "namespaced" -}}
{{- $_ := set $k "namespaces" $v.watch.namespaces -}}
{{- else if $v.watch.allNamespaces -}}
{{- $_ := set $k "allNamespaces" true -}}
{{- else -}}
{{- $_ := set $k "namespaceSelector" $v.watch.namespaceSelector -}}
{{- end -}}
{{- with $v.watch.probeInterval }}{{ $_ := set $k "probeInterval" . }}{{ end -}}
{{- with $v.watch.discoveryInterval }}{{ $_ := set $k "discoveryInterval" . }}{{ end -}}
{{- with $v.watch.watchTimeout }}{{ $_ := set $k "watchTimeout" . }}{{ end -}}
{{- with $v.watch.maxTombstoneShare }}{{ $_ := set $k "maxTombstoneShare" . }}{{ end -}}
{{- with $v.watch.qps }}{{ $_ := set $k "qps" . }}{{ end -}}
{{- with $v.watch.burst }}{{ $_ := set $k "burst" (int .) }}{{ end -}}
{{- if include "bomstream.distributed" . -}}
{{- $le := dict "namespace" .Release.Namespace -}}
{{- with $v.collector.leaderElection.leaseDuration }}{{ $_ := set $le "leaseDuration" . }}{{ end -}}
{{- with $v.collector.leaderElection.renewDeadline }}{{ $_ := set $le "renewDeadline" . }}{{ end -}}
{{- with $v.collector.leaderElection.retryPeriod }}{{ $_ := set $le "retryPeriod" . }}{{ end -}}
{{- $_ := set $k "leaderElection" $le -}}
{{- else if include "bomstream.edgeCollectorOnly" . -}}
{{- $_ := set $k "leaderElection" (dict "disabled" true) -}}
{{- end -}}
{{- $_ := set $cfg "kubernetes" $k -}}

{{- /* transformer */ -}}
{{- if $v.transformer.rules -}}
{{- $_ := set $cfg "transformer" (dict "rulesFile" (printf "%s/rules.yaml" (include "bomstream.configDir" .))) -}}
{{- end -}}

{{- /* sinks */ -}}
{{- $sinks := list -}}
{{- $s := $v.sinks -}}
{{- $sec := include "bomstream.secretsDir" . -}}
{{- if $s.file.enabled -}}
{{- $c := dict "dir" (printf "%s/boms" (include "bomstream.dataDir" .)) -}}
{{- if not $s.file.fsync }}{{ $_ := set $c "fsync" false }}{{ end -}}
{{- $sinks = append $sinks (include "bomstream.sinkEntry" (list $s.file "file" $c) | fromYaml) -}}
{{- end -}}
{{- if $s.stdout.enabled -}}
{{- $sinks = append $sinks (include "bomstream.sinkEntry" (list $s.stdout "stdout" dict) | fromYaml) -}}
{{- end -}}
{{- if $s.gcs.enabled -}}
{{- $g := $s.gcs -}}
{{- $c := dict "bucket" $g.bucket -}}
{{- with $g.prefix }}{{ $_ := set $c "prefix" . }}{{ end -}}
{{- with $g.pathTemplate }}{{ $_ := set $c "pathTemplate" . }}{{ end -}}
{{- with $g.endpoint }}{{ $_ := set $c "endpoint" . }}{{ end -}}
{{- if $g.anonymous }}{{ $_ := set $c "anonymous" true }}{{ end -}}
{{- if $g.credentials.secretName }}{{ $_ := set $c "credentialsFile" (printf "%s/gcs/credentials.json" $sec) }}{{ end -}}
{{- if $g.attest }}{{ $_ := set $c "attest" (include "bomstream.attestConfig" . | fromYaml) }}{{ end -}}
{{- $sinks = append $sinks (include "bomstream.sinkEntry" (list $g "gcs" $c) | fromYaml) -}}
{{- end -}}
{{- if $s.dependencytrack.enabled -}}
{{- $d := $s.dependencytrack -}}
{{- $c := dict "url" $d.url "apiKeyFile" (printf "%s/dtrack/api-key" $sec) -}}
{{- if $d.ca.configMapName }}{{ $_ := set $c "caFile" (printf "%s/dtrack-ca/ca.crt" (include "bomstream.configDir" .)) }}{{ end -}}
{{- range $key := list "projectName" "projectVersion" "clusterProject" "namespaceProject" "parentVersion" "parents" "collectionTag" "onTombstone" "requestTimeout" "processingTimeout" "pollInterval" -}}
{{- with index $d $key }}{{ $_ := set $c $key . }}{{ end -}}
{{- end -}}
{{- if not $d.hierarchy }}{{ $_ := set $c "hierarchy" false }}{{ end -}}
{{- if not $d.autoCreate }}{{ $_ := set $c "autoCreate" false }}{{ end -}}
{{- with $d.tags }}{{ $_ := set $c "tags" . }}{{ end -}}
{{- $sinks = append $sinks (include "bomstream.sinkEntry" (list $d "dependencytrack" $c) | fromYaml) -}}
{{- end -}}
{{- if $s.oci.enabled -}}
{{- $o := $s.oci -}}
{{- $c := dict -}}
{{- if $o.dockerConfig.secretName }}{{ $_ := set $c "dockerConfig" (printf "%s/oci/config.json" $sec) }}{{ end -}}
{{- with $o.repository }}{{ $_ := set $c "repository" . }}{{ end -}}
{{- if $o.plainHTTP }}{{ $_ := set $c "plainHTTP" true }}{{ end -}}
{{- with $o.checkRegistries }}{{ $_ := set $c "checkRegistries" . }}{{ end -}}
{{- if $o.attest }}{{ $_ := set $c "attest" (include "bomstream.attestConfig" . | fromYaml) }}{{ end -}}
{{- if and $o.attest (not $o.plainReferrer) }}{{ $_ := set $c "plainReferrer" false }}{{ end -}}
{{- $sinks = append $sinks (include "bomstream.sinkEntry" (list $o "oci" $c) | fromYaml) -}}
{{- end -}}
{{- $_ := set $cfg "sinks" $sinks -}}

{{- $_ := set $cfg "log" (dict "level" $v.log.level "format" $v.log.format) -}}
{{- toYaml $cfg -}}
{{- end -}}

{{/* One sinks: entry: (list sinkValues type config). */}}
{{- define "bomstream.sinkEntry" -}}
{{- $sv := index . 0 -}}
{{- $e := dict "name" $sv.name "type" (index . 1) -}}
{{- with index . 2 }}{{ $_ := set $e "config" . }}{{ end -}}
{{- with $sv.runner }}{{ $_ := set $e "runner" . }}{{ end -}}
{{- with $sv.specVersion }}{{ $_ := set $e "specVersion" . }}{{ end -}}
{{- toYaml $e -}}
{{- end -}}

{{/* The attest: block of the oci and gcs sinks, from .Values.signing. */}}
{{- define "bomstream.attestConfig" -}}
{{- $g := .Values.signing -}}
{{- $a := dict -}}
{{- if $g.key.secretName }}{{ $_ := set $a "keyFile" (printf "%s/signing/signing.key" (include "bomstream.secretsDir" .)) }}{{ end -}}
{{- with $g.kmsKey }}{{ $_ := set $a "kmsKey" . }}{{ end -}}
{{- if $g.keyless.enabled -}}
{{- $k := dict "tokenFile" "/var/run/secrets/tokens/sigstore" -}}
{{- range $key := list "fulcioURL" "rekorURL" "timestampURL" }}{{ with index $g.keyless $key }}{{ $_ := set $k $key . }}{{ end }}{{ end -}}
{{- if $g.keyless.noTransparencyLog }}{{ $_ := set $k "noTransparencyLog" true }}{{ end -}}
{{- $_ := set $a "keyless" $k -}}
{{- end -}}
{{- if not $a }}{{ fail "sinks.oci.attest or sinks.gcs.attest needs signing.key.secretName, signing.kmsKey or signing.keyless.enabled" }}{{ end -}}
{{- toYaml $a -}}
{{- end -}}
