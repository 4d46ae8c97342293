package sandbox_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/sandbox/msbtest"
)

// TestShipOfAVanishedTreeFailsTheRun checks that a local tree that is gone
// from the controller (an uploaded workspace is deleted once shipped)
// fails the run with a clear reason instead of being retried for ever.
func TestShipOfAVanishedTreeFailsTheRun(t *testing.T) {
	e := newE2E(t, filepath.Join(t.TempDir(), "asb.db"), msbtest.New(t, "node"))
	gone := filepath.Join(t.TempDir(), "deleted-upload")
	d, err := e.svc.Delegate(e.ctx, app.DelegateRequest{Task: "t", Sources: []app.Source{{Dir: "work", LocalPath: gone}}})
	if err != nil {
		t.Fatal(err)
	}
	r := e.wait(t, d.Run.ID, app.StateFailed)
	if !strings.Contains(r.Error, "no longer on the controller") || strings.Contains(r.Error, gone) {
		t.Fatalf("error %q", r.Error)
	}
}
