package sandbox_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/asb-dev/asb/sandbox"
	"github.com/asb-dev/asb/sandbox/msbtest"
)

func TestBakeMakesABootableSnapshot(t *testing.T) {
	fake := msbtest.New(t, "node")
	m := sandbox.NewMSB(sandbox.NewLocalTransport(nil), fake.Path)
	var progress bytes.Buffer
	err := sandbox.Bake(bg, m, sandbox.BakeSpec{Name: "agent-base", Image: "node",
		Script: "set -e; mkdir -p /opt/agent && echo installed > /opt/agent/marker; echo done-installing", Progress: &progress}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(progress.String(), "done-installing") {
		t.Fatalf("progress = %q", progress.String())
	}
	if boxes := fake.Boxes(); len(boxes) != 0 {
		t.Fatalf("scratch box left behind: %v", boxes)
	}
	if err := m.Run(bg, sandbox.RunSpec{Name: "asb-s-fromsnap", Snapshot: "agent-base"}); err != nil {
		t.Fatal(err)
	}
	res, err := m.Exec(bg, "asb-s-fromsnap", sandbox.ExecSpec{}, "cat", "/opt/agent/marker")
	if err != nil || string(res.Stdout) != "installed\n" {
		t.Fatalf("snapshot lacks the install: %q %v", res.Stdout, err)
	}

	// A failing script leaves no box and no snapshot.
	err = sandbox.Bake(bg, m, sandbox.BakeSpec{Name: "broken", Image: "node", Script: "exit 3"}, nil)
	if err == nil || !strings.Contains(err.Error(), "exit 3") {
		t.Fatalf("failing script: %v", err)
	}
	if ok, _ := m.SnapshotExists(bg, "broken"); ok {
		t.Fatal("a failed bake left a snapshot")
	}
	for _, b := range fake.Boxes() {
		if strings.HasPrefix(b, "asb-bake-") {
			t.Fatalf("failed bake left %s", b)
		}
	}
	if !strings.Contains(sandbox.DefaultBakeScript("claude"), "@anthropic-ai/claude-code") ||
		strings.Contains(sandbox.DefaultBakeScript("my-agent"), "claude") {
		t.Fatal("default script installs the wrong agent")
	}
}
