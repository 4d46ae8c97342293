package app_test

import (
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/apptest"
)

// TestFinishedRunKeepsTheUploadedTreesCommitsForItsOwner checks that the
// commits an agent made on an uploaded working tree are collected when the
// run finishes, recorded by bundle name only (no controller path), and
// readable through RunBundle by the owner alone.
func TestFinishedRunKeepsTheUploadedTreesCommitsForItsOwner(t *testing.T) {
	ws := apptest.NewFakeWorkspaces()
	sb := apptest.NewFakeSandbox()
	const name = "asb-s-1-work-abcdef012345.bundle"
	sb.Bundles = func(box app.BoxRef, sources []app.Source) []app.Bundle {
		var out []app.Bundle
		for _, src := range sources {
			out = append(out, app.Bundle{Source: src, Path: "/srv/asb/bundles/" + name, Commits: []string{"abc", "def"}})
		}
		return out
	}
	sb.BundleFiles = map[string]string{name: "BUNDLE-BYTES"}
	forge := &apptest.FakeForge{}
	svc := app.NewService(app.Deps{Store: apptest.NewMemStore(), Sandbox: sb, Forge: forge, Workspaces: ws}, app.Config{PollInterval: time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	defer func() { cancel(); <-done }()
	alice := app.WithActor(ctx, app.Actor{Account: "alice", Name: "alice"})
	bob := app.WithActor(ctx, app.Actor{Account: "bob", Name: "bob"})

	id, err := svc.StageWorkspace(alice, strings.NewReader("tar"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := svc.Delegate(alice, app.DelegateRequest{Task: "fix it", Sources: []app.Source{{Workspace: id}}})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the run to finish", func() bool {
		v, err := svc.Session(alice, d.Session.ID)
		return err == nil && v.Current != nil && v.Current.State.Terminal()
	})
	v, _ := svc.Session(alice, d.Session.ID)
	r := v.Current
	if r.State != app.StateDone || len(forge.Calls()) != 0 {
		t.Fatalf("run %s (%s), %d publish calls", r.State, r.Error, len(forge.Calls()))
	}
	want := []app.BundleInfo{{Dir: "work", Commits: []string{"abc", "def"}, Name: name}}
	if !slices.EqualFunc(r.Result.Bundles, want, func(a, b app.BundleInfo) bool {
		return a.Dir == b.Dir && a.Name == b.Name && slices.Equal(a.Commits, b.Commits)
	}) {
		t.Fatalf("result bundles %+v", r.Result.Bundles)
	}
	if b, _ := json.Marshal(r.Result); strings.Contains(string(b), "/srv/asb") {
		t.Fatalf("the result carries a controller path: %s", b)
	}

	evs, err := svc.Events(alice, d.Session.ID, 0, 500)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(evs, func(e app.Event) bool {
		return strings.Contains(string(e.Data), "2 commit(s) on the uploaded working tree: `asb mcp` brings them back")
	}) {
		t.Fatalf("no event says where the commits went: %+v", evs)
	}

	rc, size, err := svc.RunBundle(alice, r.ID, "work")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(rc)
	rc.Close()
	if string(body) != "BUNDLE-BYTES" || size != int64(len(body)) {
		t.Fatalf("bundle %q, size %d", body, size)
	}
	admin := app.WithActor(ctx, app.Actor{Account: "root", Name: "root", Admin: true})
	for _, c := range []struct {
		name string
		ctx  context.Context
		run  app.RunID
		dir  string
		code string
	}{
		{"no caller", ctx, r.ID, "work", app.EUNAUTHORIZED},
		{"another owner", bob, r.ID, "work", app.ENOTFOUND},
		{"no such run", alice, "run_nope", "work", app.ENOTFOUND},
		{"no bundle in that folder", alice, r.ID, "other", app.ENOTFOUND},
		{"a path for a folder", alice, r.ID, "../bundles", app.EINVALID},
		{"a malformed run id", alice, "../run", "work", app.EINVALID},
		{"an admin", admin, r.ID, "work", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			rc, _, err := svc.RunBundle(c.ctx, c.run, c.dir)
			if err == nil {
				rc.Close()
			}
			if got := app.ErrorCode(err); got != c.code && !(c.code == "" && err == nil) {
				t.Fatalf("code %q (%v), want %q", got, err, c.code)
			}
		})
	}
}

func TestCheckBundleName(t *testing.T) {
	for name, ok := range map[string]bool{
		"asb-s-1-work-abcdef012345.bundle":   true,
		"a.b_c-d.bundle":                     true,
		"":                                   false,
		".bundle":                            false,
		"x.tar":                              false,
		"../x.bundle":                        false,
		"a/b.bundle":                         false,
		".hidden.bundle":                     false,
		"a..b.bundle":                        false,
		"a b.bundle":                         false,
		strings.Repeat("a", 250) + ".bundle": false,
	} {
		if err := app.CheckBundleName(name); (err == nil) != ok {
			t.Errorf("CheckBundleName(%q) = %v, want ok %v", name, err, ok)
		}
		if err := app.CheckBundleName(name); err != nil && app.ErrorCode(err) != app.EINVALID {
			t.Errorf("CheckBundleName(%q): code %s", name, app.ErrorCode(err))
		}
	}
}
