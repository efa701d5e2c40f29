package kubeplugin

import (
	"fmt"
	"strings"
)

// kindOf is the Kind bomstream records for what kubectl would accept as a
// resource: a short name (deploy, sts, lws, isvc), a resource name
// (deployments), or a Kind in any case. A word it does not know is taken
// as a Kind as given; the API's kind filter ignores case.
func kindOf(s string) string {
	switch strings.ToLower(s) {
	case "deploy", "deployment", "deployments":
		return "Deployment"
	case "sts", "statefulset", "statefulsets":
		return "StatefulSet"
	case "ds", "daemonset", "daemonsets":
		return "DaemonSet"
	case "rs", "replicaset", "replicasets":
		return "ReplicaSet"
	case "job", "jobs":
		return "Job"
	case "cj", "cronjob", "cronjobs":
		return "CronJob"
	case "po", "pod", "pods":
		return "Pod"
	case "lws", "leaderworkerset", "leaderworkersets":
		return "LeaderWorkerSet"
	case "isvc", "inferenceservice", "inferenceservices":
		return "InferenceService"
	case "llmisvc", "llminferenceservice", "llminferenceservices":
		return "LLMInferenceService"
	case "ksvc":
		return "Service" // Knative Serving
	case "ro", "rollout", "rollouts":
		return "Rollout"
	case "dgd", "dynamographdeployment", "dynamographdeployments":
		return "DynamoGraphDeployment"
	case "pcs", "podcliqueset", "podcliquesets":
		return "PodCliqueSet"
	case "nimservice", "nimservices":
		return "NIMService"
	case "vllmruntime", "vllmruntimes":
		return "VLLMRuntime"
	}
	return s
}

// parseRef reads KIND/NAME (deploy/llama, Deployment/llama).
func parseRef(s string) (kind, name string, err error) {
	k, n, ok := strings.Cut(s, "/")
	if !ok || k == "" || n == "" || strings.Contains(n, "/") {
		return "", "", fmt.Errorf("workload %q: want KIND/NAME, e.g. deploy/llama (use -n for the namespace)", s)
	}
	return kindOf(k), n, nil
}
