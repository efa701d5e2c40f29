package process

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/bomstream/bomstream/stream/engine"
)

// LogConfig chooses the zap logger.
type LogConfig struct {
	Level  string `yaml:"level"`  // debug, info, warn, error; default info
	Format string `yaml:"format"` // console or json; default console
}

// Validate names the field that is wrong.
func (c LogConfig) Validate() error {
	if c.Level != "" {
		if _, err := zapcore.ParseLevel(c.Level); err != nil {
			return fmt.Errorf("log.level: %w", err)
		}
	}
	switch c.Format {
	case "", "console", "json":
	default:
		return fmt.Errorf("log.format: %q is neither console nor json", c.Format)
	}
	return nil
}

// NewLogger is the logger c asks for, writing to sink.
func NewLogger(c LogConfig, sink zapcore.WriteSyncer) *zap.Logger {
	level := zapcore.InfoLevel
	if c.Level != "" {
		level, _ = zapcore.ParseLevel(c.Level)
	}
	ec := zap.NewProductionEncoderConfig()
	ec.EncodeTime = zapcore.ISO8601TimeEncoder
	var enc zapcore.Encoder
	if c.Format == "json" {
		enc = zapcore.NewJSONEncoder(ec)
	} else {
		ec.EncodeLevel = zapcore.CapitalLevelEncoder
		enc = zapcore.NewConsoleEncoder(ec)
	}
	return zap.New(zapcore.NewCore(enc, sink, level))
}

// HTTPConfig is the observability endpoint: /metrics, /healthz, /readyz.
type HTTPConfig struct {
	Listen string `yaml:"listen"` // e.g. ":9090"; empty = off
}

// Validate names the field that is wrong.
func (c HTTPConfig) Validate() error {
	if c.Listen == "" {
		return nil
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return fmt.Errorf("http.listen: %w", err)
	}
	return nil
}

// observer owns the metrics registry of one process and the health of its
// stages.
type observer struct {
	reg *prometheus.Registry

	mu     sync.Mutex
	stages []*stageState
}

// stageState is one stage as /readyz sees it: its own health report and
// whether its supervisor is restarting it.
type stageState struct {
	name    string
	health  func() engine.Health
	crashed atomic.Pointer[string] // set while the supervisor waits to restart it
}

func (s *stageState) report() engine.Health {
	if c := s.crashed.Load(); c != nil {
		return engine.Health{State: engine.StateDown, Reason: "restarting after: " + *c}
	}
	return s.health()
}

func newObserver() *observer {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return &observer{reg: reg}
}

// stage registers a stage for /readyz.
func (o *observer) stage(name string, health func() engine.Health) *stageState {
	st := &stageState{name: name, health: health}
	o.mu.Lock()
	o.stages = append(o.stages, st)
	o.mu.Unlock()
	return st
}

// readiness reports every stage, one per line, and whether all are up.
func (o *observer) readiness() (string, bool) {
	o.mu.Lock()
	stages := append([]*stageState(nil), o.stages...)
	o.mu.Unlock()
	if len(stages) == 0 {
		return "no stage running\n", false
	}
	var b strings.Builder
	ok := true
	for _, st := range stages {
		h := st.report()
		if h.State != engine.StateUp {
			ok = false
			fmt.Fprintf(&b, "%s: %s: %s\n", st.name, h.State, h.Reason)
		} else {
			fmt.Fprintf(&b, "%s: up\n", st.name)
		}
	}
	return b.String(), ok
}

// listen binds the HTTP endpoint's address, so that a busy or wrong address
// fails the start at once with the OS's error; nil when there is none.
func (o *observer) listen(c HTTPConfig) (net.Listener, error) {
	if c.Listen == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return nil, fmt.Errorf("http.listen %s: %w", c.Listen, err)
	}
	return ln, nil
}

// serve runs the HTTP endpoint on ln until ctx is done. It reports the
// bound address through addr (useful with port 0).
func (o *observer) serve(ctx context.Context, ln net.Listener, log *zap.Logger, addr chan<- string) error {
	if ln == nil {
		return nil
	}
	if addr != nil {
		addr <- ln.Addr().String()
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(o.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		body, ok := o.readiness()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_, _ = w.Write([]byte(body))
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	log.Info("http endpoint listening", zap.String("addr", ln.Addr().String()))
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("http endpoint: %w", err)
	}
	return nil
}
