package transformer

import "github.com/bomstream/bomstream/schemas"

// dynamoDisagg is what the collector makes of the Dynamo vLLM disagg graph
// (upstream dynamo examples/backends/vllm/deploy/disagg.yaml).
func dynamoDisagg() *schemas.Inputs {
	img := "nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.8.0"
	worker := func(name, sub, flag string) schemas.Component {
		loc := "spec.services." + name
		return schemas.Component{
			Name: name, Locator: loc, Roles: []string{"worker", sub},
			Fields: []schemas.Field{{Name: "componentType", Value: "worker", Locator: loc + ".componentType"}, {Name: "subComponentType", Value: sub, Locator: loc + ".subComponentType"}},
			Containers: []schemas.Container{{
				Name: "main", Locator: loc + ".extraPodSpec.mainContainer", Image: img,
				Command: []string{"python3", "-m", "dynamo.vllm"},
				Args:    []string{"--model", "Qwen/Qwen3-0.6B", flag},
				EnvFrom: []schemas.EnvSource{{Kind: "secret", Name: "hf-token-secret"}},
			}},
		}
	}
	w := schemas.Workload{Cluster: "dev", Namespace: "ml", APIVersion: "nvidia.com/v1alpha1", Kind: "DynamoGraphDeployment", Name: "vllm-disagg", UID: "u-dgd"}
	return &schemas.Inputs{
		Workload: w,
		Components: []schemas.Component{
			{Name: "Frontend", Locator: "spec.services.Frontend", Roles: []string{"frontend"},
				Fields:     []schemas.Field{{Name: "componentType", Value: "frontend", Locator: "spec.services.Frontend.componentType"}},
				Containers: []schemas.Container{{Name: "main", Locator: "spec.services.Frontend.extraPodSpec.mainContainer", Image: img}}},
			worker("VllmDecodeWorker", "decode", "--is-decode-worker"),
			worker("VllmPrefillWorker", "prefill", "--is-prefill-worker"),
		},
		Source: "file:disagg.yaml",
	}
}

// lwsVLLM is the LWS vLLM example (upstream lws docs/examples/vllm/GPU/lws.yaml).
func lwsVLLM() *schemas.Inputs {
	w := schemas.Workload{Cluster: "dev", Namespace: "ml", APIVersion: "leaderworkerset.x-k8s.io/v1", Kind: "LeaderWorkerSet", Name: "vllm", UID: "u-lws"}
	env := []schemas.EnvVar{{Name: "HF_TOKEN", Redacted: true}}
	return &schemas.Inputs{
		Workload: w,
		Components: []schemas.Component{
			{Name: "leader", Locator: "spec.leaderWorkerTemplate.leaderTemplate", Roles: []string{"leader"},
				Labels: map[string]string{"role": "leader"},
				Containers: []schemas.Container{{
					Name: "vllm-leader", Locator: "spec.leaderWorkerTemplate.leaderTemplate.spec.containers[0]", Image: "vllm/vllm-openai:v0.8.5", Env: env,
					Command: []string{"sh", "-c", "bash /vllm-workspace/examples/online_serving/multi-node-serving.sh leader --ray_cluster_size=$(LWS_GROUP_SIZE); \n python3 -m vllm.entrypoints.openai.api_server --port 8080 --model meta-llama/Llama-3.1-405B-Instruct --tensor-parallel-size 8 --pipeline_parallel_size 2"},
				}}},
			{Name: "worker", Locator: "spec.leaderWorkerTemplate.workerTemplate", Roles: []string{"worker"},
				Containers: []schemas.Container{{
					Name: "vllm-worker", Locator: "spec.leaderWorkerTemplate.workerTemplate.spec.containers[0]", Image: "vllm/vllm-openai:v0.8.5", Env: env,
					Command: []string{"sh", "-c", "bash /vllm-workspace/examples/online_serving/multi-node-serving.sh worker --ray_address=$(LWS_LEADER_ADDRESS)"},
				}}},
		},
	}
}
