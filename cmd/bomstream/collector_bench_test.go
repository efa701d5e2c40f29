package main

// BenchmarkCollector measures the cluster collector against a real API
// server (envtest) holding N Deployments in opted-in namespaces, each with
// its ReplicaSet and one pod reporting an image digest, each reading a
// ConfigMap of its own (its MODEL_ID through envFrom, and a vLLM config
// file it mounts), beside a ConfigMap of 64 KiB that no one reads for every
// tenth Deployment (BOMSTREAM_BENCH_CONFIGMAPS=false: no ConfigMaps):
//
//   - time from the start of the collector process to the last BOM in the
//     file sink (collector -> external JetStream -> transformer -> file sink);
//   - the collector's RSS once every BOM is there, and after the idle window
//     (VmRSS of its process, and VmHWM, the peak);
//   - API requests per minute during the idle window, from its
//     bomstream_kube_requests_total (the Lease apart);
//   - its writes: every create, update, patch or delete that is not its Lease.
//
// It runs only when BOMSTREAM_BENCH_COLLECTOR lists the sizes:
//
//	BOMSTREAM_BENCH_COLLECTOR=1000,10000 BOMSTREAM_BENCH_IDLE=5m \
//	  go test -run '^$' -bench Collector -benchtime 1x -timeout 60m ./cmd/bomstream/
//
// (`make bench-collector`). BOMSTREAM_BENCH_TAGS are build tags of the
// collector's binary; unset, nocloudsinks: the build without the cloud sinks
// (sinks_local.go) that the bomstream-collector image ships and the chart's
// collector runs. Set and empty, the full binary of the bomstream image. BOMSTREAM_BENCH_GOMEMLIMIT sets GOMEMLIMIT of the
// collector process; BOMSTREAM_BENCH_FSYNC=false turns the file sink's fsync
// off.

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/bomstream/bomstream/collector/kube/kubetest"
	"github.com/bomstream/bomstream/sinks/registry"
	"github.com/bomstream/bomstream/stream/streamtest"
)

func BenchmarkCollector(b *testing.B) {
	sizes := os.Getenv("BOMSTREAM_BENCH_COLLECTOR")
	if sizes == "" {
		b.Skip("set BOMSTREAM_BENCH_COLLECTOR=1000,10000 (make bench-collector)")
	}
	idle := 5 * time.Minute
	if v := os.Getenv("BOMSTREAM_BENCH_IDLE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatal(err)
		}
		idle = d
	}
	// The binary the bomstream-collector image ships, or the one
	// BOMSTREAM_BENCH_TAGS builds.
	tags, set := os.LookupEnv("BOMSTREAM_BENCH_TAGS")
	if !set {
		tags = "nocloudsinks"
	}
	fmt.Printf("collector binary: go build -tags %q\n", tags)
	bin := filepath.Join(b.TempDir(), "bomstream")
	if out, err := exec.Command("go", "build", "-tags", tags, "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("build bomstream: %v\n%s", err, out)
	}
	for s := range strings.SplitSeq(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("deployments=%d", n), func(b *testing.B) {
			for range b.N {
				benchCollector(b, bin, n, idle)
			}
		})
	}
}

func benchCollector(b *testing.B, bin string, n int, idle time.Duration) {
	kenv := kubetest.Start(b)
	populate(b, kenv.Config, n)
	url := streamtest.StartExternal(b)
	streamtest.WaitJetStream(b, url)
	dir := b.TempDir()
	sinkDir := filepath.Join(dir, "boms")
	cfgFile := filepath.Join(dir, "bomstream.yaml")
	fsync := "true"
	if os.Getenv("BOMSTREAM_BENCH_FSYNC") == "false" {
		fsync = "false"
	}
	if err := os.WriteFile(cfgFile, []byte("cluster: bench\nsinks:\n- {name: file, type: file, config: {dir: "+sinkDir+", fsync: "+fsync+"}}\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for _, stage := range []string{"transformer", "sink"} {
		wg.Go(func() {
			var out, errb syncBuffer
			e := &env{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }, sinks: registry.Builtin()}
			if err := run(ctx, []string{stage, "--config", cfgFile, "--nats-url", url, "--log-level", "warn"}, e); err != nil && ctx.Err() == nil {
				b.Errorf("%s: %v\n%s", stage, err, errb.String())
			}
		})
	}
	defer wg.Wait()
	defer cancel()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	cmd := exec.Command(bin, "collector", "--config", cfgFile, "--cluster", "bench", "--nats-url", url,
		"--kubeconfig", kenv.Kubeconfig, "--http-listen", addr, "--log-level", logLevel())
	cmd.Env = append(os.Environ(), "POD_NAMESPACE=default")
	if v := os.Getenv("BOMSTREAM_BENCH_GOMEMLIMIT"); v != "" {
		cmd.Env = append(cmd.Env, "GOMEMLIMIT="+v)
	}
	var logs syncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}()
	js := streamtest.Connect(b, url)
	var onChanges time.Duration
	deadline := start.Add(10 * time.Minute)
	for countLatest(sinkDir) < n {
		if onChanges == 0 {
			if st, err := js.Stream(ctx, "CHANGES"); err == nil {
				if info, err := st.Info(ctx); err == nil && info.State.Msgs >= uint64(n) {
					onChanges = time.Since(start)
				}
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d BOMs after 10 minutes; collector log:\n%s", countLatest(sinkDir), n, tail(logs.String(), 3000))
		}
		time.Sleep(20 * time.Millisecond)
	}
	toLast := time.Since(start)
	if os.Getenv("BOMSTREAM_BENCH_LOG") != "" {
		fmt.Printf("collector started %s; its log:\n%s\n", start.UTC().Format(time.RFC3339Nano), logs.String())
	}
	rssSync := procStatus(cmd.Process.Pid, "VmRSS")
	anonSync, fileSync := procStatus(cmd.Process.Pid, "RssAnon"), procStatus(cmd.Process.Pid, "RssFile")
	before := scrapeRequests(b, addr)
	time.Sleep(idle)
	after := scrapeRequests(b, addr)
	rssSteady := procStatus(cmd.Process.Pid, "VmRSS")
	hwm := procStatus(cmd.Process.Pid, "VmHWM")
	var idleReq, leaseReq, writes float64
	for k, v := range after {
		d := v - before[k]
		verb, res, _ := strings.Cut(k, " ")
		if res == "leases" {
			leaseReq += d
			continue
		}
		idleReq += d
		if isWriteVerb(verb) {
			writes += v
		}
	}
	perMin := idleReq / idle.Minutes()
	anon, file := procStatus(cmd.Process.Pid, "RssAnon"), procStatus(cmd.Process.Pid, "RssFile")
	fmt.Printf("collector RSS split (anonymous + file-backed, i.e. heap and stacks + the mapped binary): after sync %.1f + %.1f MiB, after idle %.1f + %.1f MiB\n",
		anonSync, fileSync, anon, file)
	if onChanges == 0 {
		onChanges = toLast
	}
	fmt.Printf("collector, %d Deployments: every event on CHANGES %.2fs after start (the collector's part); the transformer and the file sink after it\n", n, onChanges.Seconds())
	b.ReportMetric(onChanges.Seconds(), "s-to-last-event")
	fmt.Printf("collector, %d Deployments (+%d ReplicaSets, %d pods): last BOM in the file sink %.2fs after start; "+
		"RSS after sync %.1f MiB, after %s idle %.1f MiB (peak %.1f MiB); idle API requests %.2f/min (Lease: %.1f/min); writes except the Lease: %.0f\n",
		n, n, n, toLast.Seconds(), rssSync, idle, rssSteady, hwm, perMin, leaseReq/idle.Minutes(), writes)
	b.ReportMetric(toLast.Seconds(), "s-to-last-BOM")
	b.ReportMetric(rssSync, "MiB-RSS-synced")
	b.ReportMetric(rssSteady, "MiB-RSS-steady")
	b.ReportMetric(perMin, "idle-req/min")
	b.ReportMetric(writes, "writes")
}

func logLevel() string {
	if os.Getenv("BOMSTREAM_BENCH_LOG") != "" {
		return "info"
	}
	return "warn"
}

func isWriteVerb(v string) bool {
	switch v {
	case "create", "update", "patch", "delete":
		return true
	}
	return false
}

// populate creates n Deployments in opted-in namespaces, each with its
// ReplicaSet and one pod whose status reports an image digest.
func populate(b *testing.B, cfg *rest.Config, n int) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 5000, 10000
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	const perNS = 500
	for i := 0; i*perNS < n; i++ {
		ns := fmt.Sprintf("bench-%d", i)
		if _, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"bomstream.dev/enabled": "true"}}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		if _, err := kc.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	start := time.Now()
	work := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range 16 {
		wg.Go(func() {
			for i := range work {
				if err := populateOne(ctx, kc, fmt.Sprintf("bench-%d", i/perNS), i); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	if firstErr != nil {
		b.Fatal(firstErr)
	}
	b.Logf("created %d Deployments, ReplicaSets and pods in %s", n, time.Since(start).Round(time.Second))
}

func populateOne(ctx context.Context, kc kubernetes.Interface, ns string, i int) error {
	name := fmt.Sprintf("llm-%d", i)
	rep := int32(1)
	image := fmt.Sprintf("vllm/vllm-openai:v0.%d.0", 8+i%4)
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "vllm", Image: image,
			Args: []string{"--model", fmt.Sprintf("org/model-%d", i%50), "--tensor-parallel-size", "1"}}}},
	}
	if os.Getenv("BOMSTREAM_BENCH_CONFIGMAPS") != "false" {
		if err := benchConfigMaps(ctx, kc, ns, name, i, &tmpl); err != nil {
			return err
		}
	}
	yes := true
	d, err := kc.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       appsv1.DeploymentSpec{Replicas: &rep, Selector: &metav1.LabelSelector{MatchLabels: tmpl.Labels}, Template: tmpl},
	}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	rs, err := kc.AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-5d8f", OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: name, UID: d.UID, Controller: &yes}}},
		Spec:       appsv1.ReplicaSetSpec{Replicas: &rep, Selector: d.Spec.Selector, Template: tmpl},
	}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	p, err := kc.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-5d8f-x", Labels: tmpl.Labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: &yes}}},
		Spec: tmpl.Spec,
	}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "vllm", Image: "docker.io/" + image, Ready: true,
		ImageID: fmt.Sprintf("docker.io/vllm/vllm-openai@sha256:%064x", 8+i%4)}}
	_, err = kc.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	return err
}

// benchConfigMaps creates the ConfigMap a bench Deployment reads (its
// MODEL_ID through envFrom, a vLLM config file it mounts, as vllm serve
// --config reads it), and, for every tenth, one of 64 KiB no one reads.
func benchConfigMaps(ctx context.Context, kc kubernetes.Interface, ns, name string, i int, tmpl *corev1.PodTemplateSpec) error {
	cms := kc.CoreV1().ConfigMaps(ns)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name + "-config"}, Data: map[string]string{
		"MODEL_ID":    fmt.Sprintf("org/model-%d", i%50),
		"HF_HOME":     "/cache",
		"config.yaml": fmt.Sprintf("model: org/model-%d\ntensor-parallel-size: 1\nmax-model-len: 8192\n", i%50),
	}}
	if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return err
	}
	if i%10 == 0 {
		big := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name + "-unread"}, Data: map[string]string{"blob": strings.Repeat("x", 64<<10)}}
		if _, err := cms.Create(ctx, big, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	c := &tmpl.Spec.Containers[0]
	c.Args = append(c.Args, "--config", "/etc/vllm/config.yaml")
	c.EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name}}}}
	c.VolumeMounts = []corev1.VolumeMount{{Name: "config", MountPath: "/etc/vllm/config.yaml", SubPath: "config.yaml"}}
	tmpl.Spec.Volumes = []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name}}}}}
	return nil
}

// procStatus reads a "Vm..." line of /proc/PID/status in MiB.
func procStatus(pid int, field string) float64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, _ := strconv.ParseFloat(strings.Fields(v)[0], 64)
			return kb / 1024
		}
	}
	return 0
}

// countLatest counts the workloads with a BOM in a file-sink tree.
func countLatest(root string) int {
	n := 0
	_ = filepath.WalkDir(root, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "latest.cdx.json" {
			n++
		}
		return nil
	})
	return n
}

// scrapeRequests reads bomstream_kube_requests_total as "verb resource" -> count.
func scrapeRequests(b *testing.B, addr string) map[string]float64 {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, "bomstream_kube_requests_total{")
		if !ok {
			continue
		}
		labels, val, _ := strings.Cut(rest, "} ")
		var verb, res string
		for kv := range strings.SplitSeq(labels, ",") {
			k, v, _ := strings.Cut(kv, "=")
			v = strings.Trim(v, `"`)
			switch k {
			case "verb":
				verb = v
			case "resource":
				res = v
			}
		}
		f, _ := strconv.ParseFloat(val, 64)
		out[verb+" "+res] = f
	}
	return out
}
