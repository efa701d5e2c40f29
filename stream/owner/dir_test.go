package owner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// One claim at a time: a second claim (another open file description, as
// another process has) is refused naming the first one's pid and start
// time; Release removes the advertisement and frees the directory; Drop
// frees it and leaves the advertisement behind, as a crash does.
func TestClaimIsExclusive(t *testing.T) {
	dir := t.TempDir()
	d, err := Claim(dir)
	if err != nil {
		t.Fatal(err)
	}
	started := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	if err := d.Advertise(Record{PID: os.Getpid(), Started: started, URL: "nats://127.0.0.1:1", Token: "s3cret"}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, File))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("owner.json: %v, mode %v", err, fi.Mode())
	}
	_, err = Claim(dir)
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d, running since 2026-12-01T10:00:00Z", os.Getpid())) {
		t.Fatalf("second claim: %v", err)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("the refusal shows the credential: %v", err)
	}
	d.Release()
	if _, err := os.Stat(filepath.Join(dir, File)); !os.IsNotExist(err) {
		t.Fatalf("owner.json after Release: %v", err)
	}
	d.Release() // twice is harmless

	d, err = Claim(dir)
	if err != nil {
		t.Fatalf("claim after release: %v", err)
	}
	if err := d.Advertise(Record{PID: 1, URL: "nats://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	d.Drop()
	if r, err := Read(dir); err != nil || r.PID != 1 {
		t.Fatalf("owner.json after a crash: %+v, %v", r, err)
	}
	d, err = Claim(dir)
	if err != nil {
		t.Fatalf("claim after a crash: %v", err)
	}
	d.Release()
	var none *Dir
	none.Release()
	none.Drop()
}

// Without owner.json, the refusal names the pid written in the lock file.
func TestClaimRefusalWithoutAdvertisement(t *testing.T) {
	dir := t.TempDir()
	d, err := Claim(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Release()
	_, err = Claim(dir)
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d;", os.Getpid())) {
		t.Fatalf("second claim: %v", err)
	}
}

// Wait returns an advertisement once one appears, and the claim's refusal
// when none does; a damaged owner.json is an error naming the file.
func TestWaitForTheAdvertisement(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := Claim(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Release()
	_, refusal := Claim(dir)
	done := make(chan Record, 1)
	go func() {
		r, err := Wait(ctx, dir, refusal)
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	if err := d.Advertise(Record{PID: 7, URL: "nats://127.0.0.1:4222", User: "u", Password: "p"}); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.PID != 7 || len(r.Options()) != 1 {
		t.Fatalf("waited for %+v", r)
	}

	short, stop := context.WithCancel(ctx)
	stop()
	other := t.TempDir()
	if _, err := Wait(short, other, refusal); !errors.Is(err, context.Canceled) {
		t.Fatalf("wait with an ended context: %v", err)
	}
	if err := os.WriteFile(filepath.Join(other, File), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(other); err == nil || !strings.Contains(err.Error(), File) {
		t.Fatalf("damaged owner.json: %v", err)
	}
}

func TestExists(t *testing.T) {
	dir := t.TempDir()
	if ok, err := Exists(dir); !ok || err != nil {
		t.Fatalf("a directory: %v, %v", ok, err)
	}
	if ok, err := Exists(filepath.Join(dir, "typo")); ok || err != nil {
		t.Fatalf("a missing directory: %v, %v", ok, err)
	}
	f := filepath.Join(dir, "file")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Exists(f); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("a file: %v", err)
	}
}

// With no age limit retention touches nothing: not even the store.
func TestNoRetentionLimit(t *testing.T) {
	n, err := EnforceRetention(context.Background(), nil, nil, 0, nil)
	if n != 0 || err != nil {
		t.Fatalf("no limit: %d, %v", n, err)
	}
	KeepRetention(context.Background(), nil, nil, 0, nil) // returns at once
}
