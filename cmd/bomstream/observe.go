package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
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

func newLogger(c LogConfig, sink zapcore.WriteSyncer) *zap.Logger {
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

// observer owns the metrics registry and the readiness flag of one process.
type observer struct {
	reg   *prometheus.Registry
	ready atomic.Bool
}

func newObserver() *observer {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return &observer{reg: reg}
}

// serve runs the HTTP endpoint until ctx is done. It returns the bound address
// through addr (useful with port 0) once listening.
func (o *observer) serve(ctx context.Context, c HTTPConfig, log *zap.Logger, addr chan<- string) error {
	if c.Listen == "" {
		return nil
	}
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return fmt.Errorf("http.listen %s: %w", c.Listen, err)
	}
	if addr != nil {
		addr <- ln.Addr().String()
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(o.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !o.ready.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ready\n"))
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
