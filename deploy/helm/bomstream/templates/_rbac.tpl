{{/*
The read rules of the collector: get, list and watch on every workload and
owner kind of the built-in profiles (collector/profiles.yaml), and on
ConfigMaps (the collector keeps the data only of those the workloads
read: env values, envFrom, mounted start scripts and config files),
nothing else. Kinds whose CRDs are not installed may stay listed: the
collector watches what discovery serves. No Secrets, no write verb.
*/}}
{{- define "bomstream.readRules" -}}
- apiGroups: [""]
  resources: [pods, replicationcontrollers, configmaps{{ if .cluster }}, namespaces{{ end }}]
  verbs: [get, list, watch]
- apiGroups: [apps]
  resources: [deployments, statefulsets, daemonsets, replicasets]
  verbs: [get, list, watch]
- apiGroups: [batch]
  resources: [jobs, cronjobs]
  verbs: [get, list, watch]
{{- if .cluster }}
- apiGroups: [apiextensions.k8s.io]
  resources: [customresourcedefinitions]
  verbs: [get, list, watch]
{{- end }}
- apiGroups: [nvidia.com]
  resources: [dynamographdeployments, dynamocomponentdeployments]
  verbs: [get, list, watch]
- apiGroups: [grove.io]
  resources: [podcliquesets, podcliques, podcliquescalinggroups]
  verbs: [get, list, watch]
- apiGroups: [argoproj.io]
  resources: [rollouts]
  verbs: [get, list, watch]
- apiGroups: [kaito.sh]
  resources: [workspaces, inferencesets, multiroleinferences, ragengines]
  verbs: [get, list, watch]
- apiGroups: [kubeai.org]
  resources: [models]
  verbs: [get, list, watch]
- apiGroups: [mlops.seldon.io]
  resources: [servers, models]
  verbs: [get, list, watch]
- apiGroups: [machinelearning.seldon.io]
  resources: [seldondeployments]
  verbs: [get, list, watch]
- apiGroups: [inference.llmaz.io]
  resources: [playgrounds, services]
  verbs: [get, list, watch]
{{- if .cluster }}
- apiGroups: [llmaz.io]
  resources: [openmodels]
  verbs: [get, list, watch]
{{- end }}
- apiGroups: [ome.io]
  resources: [inferenceservices]
  verbs: [get, list, watch]
- apiGroups: [gmc.opea.io]
  resources: [gmconnectors]
  verbs: [get, list, watch]
- apiGroups: [ray.io]
  resources: [rayservices, rayclusters]
  verbs: [get, list, watch]
- apiGroups: [leaderworkerset.x-k8s.io]
  resources: [leaderworkersets]
  verbs: [get, list, watch]
- apiGroups: [disaggregatedset.x-k8s.io]
  resources: [disaggregatedsets]
  verbs: [get, list, watch]
- apiGroups: [serving.kserve.io]
  resources: [inferenceservices, llminferenceservices, servingruntimes, trainedmodels{{ if .cluster }}, clusterservingruntimes{{ end }}]
  verbs: [get, list, watch]
- apiGroups: [serving.knative.dev]
  resources: [services, revisions, configurations]
  verbs: [get, list, watch]
- apiGroups: [apps.nvidia.com]
  resources: [nimservices, nimcaches]
  verbs: [get, list, watch]
- apiGroups: [production-stack.vllm.ai]
  resources: [vllmruntimes]
  verbs: [get, list, watch]
{{- range .root.Values.rbac.extraRules }}
- apiGroups: {{ toJson .apiGroups }}
  resources: {{ toJson .resources }}
  verbs: [get, list, watch]
{{- end }}
{{- end -}}
