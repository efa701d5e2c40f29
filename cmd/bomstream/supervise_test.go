package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bomstream/bomstream/schemas"
)

// freeLoopbackAddr returns a loopback address with a port nobody listens on
// right now.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// Defect 7: one failing stage stopped all. A sink consumer deleted under a
// running pipeline is created again by its stage while the transformer and
// the other sink keep exporting; /readyz says which stage is down and then
// that all are up; the process never exits.
func TestDeletedConsumerIsRecreatedWhileOthersExport(t *testing.T) {
	tree := t.TempDir()
	copyManifests(t, examplesDir, tree)
	dir := t.TempDir()
	sinkA, sinkB, data := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "data")
	conf := filepath.Join(dir, "bomstream.yaml")
	writeFile(t, conf, fmt.Sprintf(`sinks:
- {name: a, type: file, config: {dir: %q}}
- {name: b, type: file, config: {dir: %q}}
`, sinkA, sinkB))
	natsAddr := freeLoopbackAddr(t)
	c := newCLI(t)
	c.httpAddr = make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan result, 1)
	go func() {
		done <- c.runCtx(ctx, "run", "--config", conf, "--manifests", tree, "--interval", "100ms", "--data-dir", data,
			"--http-listen", "127.0.0.1:0", "--nats-listen", natsAddr)
	}()
	var base string
	select {
	case addr := <-c.httpAddr:
		base = "http://" + addr
	case r := <-done:
		t.Fatalf("run ended: %v\n%s", r.err, tail(r.stderr, 4000))
	}
	want := serving(expect(t, tree, "default"))
	chat := want["ml/Deployment/chat"]
	for _, root := range []string{sinkA, sinkB} {
		eventually(t, "the first BOMs in "+root, func() bool {
			_, err := os.Stat(filepath.Join(root, bomFilePath(chat.Workload, chat.BomHash)))
			return err == nil
		})
	}
	eventually(t, "/readyz 200", func() bool { code, _ := httpGet(t, base+"/readyz"); return code == http.StatusOK })

	bus := openBus(t, "", "nats://"+natsAddr)
	_, js := bus.Raw()
	if err := js.DeleteConsumer(ctx, schemas.StreamBOMs, "sink-a"); err != nil {
		t.Fatal(err)
	}
	// The edit reaches both sinks: b at once, a once its consumer is back.
	replaceIn(t, filepath.Join(tree, "vllm-deployment.yaml"), "vllm/vllm-openai:v0.10.1", "vllm/vllm-openai:v0.11.0")
	chat2 := serving(expect(t, tree, "default"))["ml/Deployment/chat"]
	for _, root := range []string{sinkB, sinkA} {
		eventually(t, "the edited BOM in "+root, func() bool {
			_, err := os.Stat(filepath.Join(root, bomFilePath(chat2.Workload, chat2.BomHash)))
			return err == nil
		})
	}
	eventually(t, "/readyz 200 with every stage up", func() bool {
		code, body := httpGet(t, base+"/readyz")
		return code == http.StatusOK && strings.Contains(body, "sink a: up") && strings.Contains(body, "sink b: up") && strings.Contains(body, "transformer: up")
	})
	select {
	case r := <-done:
		t.Fatalf("run exited: %v\n%s", r.err, tail(r.stderr, 4000))
	default:
	}
	cancel()
	if r := <-done; r.err != nil {
		t.Fatalf("run: %v", r.err)
	}
}
