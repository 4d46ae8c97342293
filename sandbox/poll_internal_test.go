package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestPollSeesAnExitWrittenAsTheWrapperEnds replays the race where the
// wrapper writes its exit file and ends between the poll's first look at
// the exit file and its liveness check. The pid file is a FIFO, so the
// script blocks exactly between the two until the test has finished the
// turn; the poll must report the real exit code, not a killed agent.
func TestPollSeesAnExitWrittenAsTheWrapperEnds(t *testing.T) {
	d := t.TempDir()
	q := filepath.Join(t.TempDir(), "question")
	if err := os.WriteFile(filepath.Join(d, "events.ndjson"), []byte("{\"type\":\"result\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(d, "pid"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", pollScript, "asb-poll", d, "0", "65536", q)
	out := make(chan []byte, 1)
	go func() {
		b, err := cmd.Output()
		if err != nil {
			t.Errorf("poll script: %v", err)
		}
		out <- b
	}()
	// Opening the FIFO for writing waits until the script reads the pid,
	// which is after its first look at the exit file.
	opened := make(chan *os.File, 1)
	go func() {
		w, err := os.OpenFile(filepath.Join(d, "pid"), os.O_WRONLY, 0)
		if err != nil {
			t.Error(err)
		}
		opened <- w
	}()
	var w *os.File
	select {
	case w = <-opened:
	case b := <-out:
		t.Fatalf("the poll never read the pid file:\n%s", b)
	}
	if w == nil {
		t.FailNow()
	}
	if err := os.WriteFile(filepath.Join(d, "exit"), []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteString(strconv.Itoa(dead.Process.Pid) + "\n"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	pr, err := parsePoll(<-out)
	if err != nil {
		t.Fatal(err)
	}
	if !pr.exited || pr.exitCode != 0 || pr.alive {
		t.Fatalf("poll = exited %v code %d alive %v, want exited 0 and not alive", pr.exited, pr.exitCode, pr.alive)
	}
}
