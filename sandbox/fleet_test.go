package sandbox_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/apptest"
	"github.com/asb-dev/asb/app/sqlite"
	"github.com/asb-dev/asb/sandbox"
	"github.com/asb-dev/asb/sandbox/msbtest"
)

var bg = context.Background()

func defaults() sandbox.BoxDefaults {
	return sandbox.BoxDefaults{
		Image: "node", MemoryMiB: 64, IdleTimeout: 15 * time.Minute, MaxDuration: time.Hour,
		Egress: sandbox.Egress{Domains: []string{"api.anthropic.com"}},
	}
}

type fleetHost struct {
	name     string
	fake     *msbtest.Host
	maxBoxes int
}

func newFleet(t *testing.T, store app.Store, d sandbox.BoxDefaults, hosts ...fleetHost) *sandbox.Fleet {
	t.Helper()
	var specs []sandbox.HostSpec
	for _, h := range hosts {
		specs = append(specs, sandbox.HostSpec{Name: h.name, Transport: sandbox.NewLocalTransport(nil), MSBPath: h.fake.Path, MaxBoxes: h.maxBoxes})
	}
	f, err := sandbox.NewFleet(sandbox.FleetConfig{Hosts: specs, Defaults: d, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func rows(t *testing.T, s app.Store) []app.Box {
	t.Helper()
	var out []app.Box
	if err := s.View(bg, func(tx app.Tx) error {
		var err error
		out, err = tx.ListBoxes("")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestColdBootReuseRestartAndVanish(t *testing.T) {
	fake := msbtest.New(t, "node")
	store := apptest.NewMemStore()
	f := newFleet(t, store, defaults(), fleetHost{"local", fake, 5})
	spec := app.BoxSpec{Session: "ses_abc", Owner: app.OperatorAccount}

	box, err := f.EnsureBox(bg, spec)
	if err != nil {
		t.Fatal(err)
	}
	if box.Name != "asb-s-abc" || box.Host != "local" || !slices.Equal(fake.Boxes(), []string{"asb-s-abc"}) {
		t.Fatalf("box %+v, host has %v", box, fake.Boxes())
	}
	if r := rows(t, store); len(r) != 1 || r[0].Status != "Running" || r[0].Role != app.BoxSession || r[0].Egress != "deny+api.anthropic.com" {
		t.Fatalf("rows = %+v", r)
	}
	// The box got /workspace and the egress allowlist.
	if out, _, code := fake.Run("exec", box.Name, "--", "test", "-d", "/workspace"); code != 0 {
		t.Fatalf("no /workspace in the box: %s", out)
	}
	inspect, _, _ := fake.Run("inspect", box.Name, "--format", "json")
	for _, want := range []string{`"api.anthropic.com"`, `"idle_timeout_secs": 900`, `"max_duration_secs": 3600`} {
		if !strings.Contains(inspect, want) {
			t.Errorf("inspect lacks %s:\n%s", want, inspect)
		}
	}

	again, err := f.EnsureBox(bg, spec)
	if err != nil || again != box || len(fake.Boxes()) != 1 {
		t.Fatalf("second EnsureBox = %+v %v, boxes %v", again, err, fake.Boxes())
	}

	// An idle-stopped box is started again.
	if _, stderr, code := fake.Run("stop", box.Name); code != 0 {
		t.Fatal(stderr)
	}
	if _, err := f.EnsureBox(bg, spec); err != nil {
		t.Fatal(err)
	}
	if out, _, _ := fake.Run("ls", "--running", "-q"); !strings.Contains(out, box.Name) {
		t.Fatalf("box not running again: %q", out)
	}

	// A box removed behind asb's back is replaced.
	fake.Run("rm", "--force", box.Name)
	box2, err := f.EnsureBox(bg, spec)
	if err != nil || box2.Name != box.Name || len(fake.Boxes()) != 1 {
		t.Fatalf("after vanish: %+v %v %v", box2, err, fake.Boxes())
	}

	if err := f.Remove(bg, box2); err != nil {
		t.Fatal(err)
	}
	if len(fake.Boxes()) != 0 || len(rows(t, store)) != 0 {
		t.Fatalf("after remove: boxes %v rows %v", fake.Boxes(), rows(t, store))
	}
	if err := f.Remove(bg, box2); err != nil {
		t.Fatalf("removing twice: %v", err)
	}
}

func TestBootFailureLeavesNothing(t *testing.T) {
	fake := msbtest.New(t) // nothing pulled: --pull never must fail
	store := apptest.NewMemStore()
	f := newFleet(t, store, defaults(), fleetHost{"local", fake, 5})
	_, err := f.EnsureBox(bg, app.BoxSpec{Session: "ses_x"})
	if app.ErrorCode(err) != app.EINVALID || !sandbox.IsKind(err, sandbox.KindImageNotCached) {
		t.Fatalf("err = %v", err)
	}
	if len(fake.Boxes()) != 0 || len(rows(t, store)) != 0 {
		t.Fatalf("leftovers: boxes %v rows %v", fake.Boxes(), rows(t, store))
	}

	fake2 := msbtest.New(t, "node")
	fake2.SetKnob(t, "FAKE_MSB_BOOT_FAIL=asb-*")
	f2 := newFleet(t, store, defaults(), fleetHost{"local", fake2, 5})
	if _, err := f2.EnsureBox(bg, app.BoxSpec{Session: "ses_y"}); !sandbox.IsKind(err, sandbox.KindBootFailed) {
		t.Fatalf("boot failure: %v", err)
	}
	if len(fake2.Boxes()) != 0 || len(rows(t, store)) != 0 {
		t.Fatalf("leftovers after boot failure: boxes %v rows %v", fake2.Boxes(), rows(t, store))
	}
}

// Fifty sessions asking at once for boxes from a pool of ten: every warm
// box goes to exactly one session, the rest boot their own, and the pool
// refills.
func TestConcurrentClaimsNeverShareABox(t *testing.T) {
	fake := msbtest.New(t, "node")
	store, err := sqlite.Open(bg, filepath.Join(t.TempDir(), "asb.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	d := defaults()
	d.PoolSize = 10
	f := newFleet(t, store, d, fleetHost{"local", fake, 100})
	f.Probe(bg)
	f.Refill(bg)
	if n := countRole(rows(t, store), app.BoxPoolFree); n != 10 || len(fake.Boxes()) != 10 {
		t.Fatalf("pool has %d free rows, host %d boxes", n, len(fake.Boxes()))
	}

	const n = 50
	got := make([]app.BoxRef, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			box, err := f.EnsureBox(bg, app.BoxSpec{Session: app.SessionID(fmt.Sprintf("ses_c%02d", i))})
			if err != nil {
				t.Error(err)
			}
			got[i] = box
		}(i)
	}
	wg.Wait()
	seen := map[app.BoxRef]int{}
	for i, b := range got {
		if prev, dup := seen[b]; dup {
			t.Fatalf("sessions %d and %d got the same box %s", prev, i, b.Name)
		}
		seen[b] = i
	}
	r := rows(t, store)
	if c := countRole(r, app.BoxPoolClaimed); c != 10 {
		t.Fatalf("%d warm boxes claimed, want 10", c)
	}
	if c := countRole(r, app.BoxSession); c != n-10 {
		t.Fatalf("%d cold boots, want %d", c, n-10)
	}
	f.Refill(bg)
	if c := countRole(rows(t, store), app.BoxPoolFree); c != 10 {
		t.Fatalf("pool refilled to %d, want 10", c)
	}
	// Concurrent refills do not overshoot.
	var rw sync.WaitGroup
	for i := 0; i < 5; i++ {
		rw.Add(1)
		go func() { defer rw.Done(); f.Refill(bg) }()
	}
	rw.Wait()
	if c := countRole(rows(t, store), app.BoxPoolFree); c != 10 {
		t.Fatalf("concurrent refills made %d free boxes, want 10", c)
	}
	if len(fake.Boxes()) != n+10 {
		t.Fatalf("host has %d boxes, want %d", len(fake.Boxes()), n+10)
	}
}

func TestPoolOnlyServesFittingRequests(t *testing.T) {
	fake := msbtest.New(t, "node")
	store := apptest.NewMemStore()
	d := defaults()
	d.PoolSize = 1
	f := newFleet(t, store, d, fleetHost{"local", fake, 10})
	f.Probe(bg)
	f.Refill(bg)
	// A request needing an extra domain cannot use the warm box.
	box, err := f.EnsureBox(bg, app.BoxSpec{Session: "ses_wide", AllowDomains: []string{"pypi.org"}})
	if err != nil {
		t.Fatal(err)
	}
	if box.Name != "asb-s-wide" {
		t.Fatalf("a request with more egress got warm box %s", box.Name)
	}
	box, err = f.EnsureBox(bg, app.BoxSpec{Session: "ses_fit"})
	if err != nil || box.Name == "asb-s-fit" {
		t.Fatalf("a fitting request cold-booted: %+v %v", box, err)
	}
}

func TestPlacementSpreadsByCapacityAndSkipsDownHosts(t *testing.T) {
	h1, h2, h3 := msbtest.New(t, "node"), msbtest.New(t, "node"), msbtest.New(t, "node")
	store := apptest.NewMemStore()
	f := newFleet(t, store, defaults(), fleetHost{"h1", h1, 1}, fleetHost{"h2", h2, 2}, fleetHost{"h3", h3, 3})
	for i := 0; i < 6; i++ {
		id := app.SessionID(fmt.Sprintf("ses_p%d", i))
		addSession(t, store, id)
		if _, err := f.EnsureBox(bg, app.BoxSpec{Session: id}); err != nil {
			t.Fatal(err)
		}
	}
	if len(h1.Boxes()) != 1 || len(h2.Boxes()) != 2 || len(h3.Boxes()) != 3 {
		t.Fatalf("spread = %d/%d/%d, want 1/2/3", len(h1.Boxes()), len(h2.Boxes()), len(h3.Boxes()))
	}
	if _, err := f.EnsureBox(bg, app.BoxSpec{Session: "ses_full"}); app.ErrorCode(err) != app.EUNAVAILABLE || !strings.Contains(err.Error(), "no sandbox host has room") {
		t.Fatalf("full fleet: %v", err)
	}
	// Free room on h3, then take h3 down: the next box goes nowhere else
	// but h3 had the room, so it is refused; bring h3 back and it fits.
	hosts, _ := f.Hosts(bg)
	for _, h := range hosts {
		if !h.Healthy {
			t.Fatalf("host %s unhealthy: %s", h.Name, h.Problem)
		}
	}
	var r3 app.BoxRef
	for _, b := range rows(t, store) {
		if b.Host == "h3" {
			r3 = b.BoxRef
		}
	}
	if err := f.Remove(bg, r3); err != nil {
		t.Fatal(err)
	}
	broken := *h3
	broken.Path = filepath.Join(t.TempDir(), "no-msb-here")
	down := newFleet(t, store, defaults(), fleetHost{"h1", h1, 1}, fleetHost{"h2", h2, 2}, fleetHost{"h3", &broken, 3})
	down.Probe(bg)
	hosts, _ = down.Hosts(bg)
	if hosts[2].Healthy || hosts[2].Problem == "" || hosts[2].Boxes != 2 {
		t.Fatalf("down host reported as %+v", hosts[2])
	}
	if _, err := down.EnsureBox(bg, app.BoxSpec{Session: "ses_more"}); app.ErrorCode(err) != app.EUNAVAILABLE {
		t.Fatalf("placed on a down host: %v", err)
	}
	onH3 := func() int {
		n := 0
		for _, b := range rows(t, store) {
			if b.Host == "h3" {
				n++
			}
		}
		return n
	}
	if rep, _ := down.Reconcile(bg); !slices.Contains(rep.Skipped, "h3") || onH3() != 2 {
		t.Fatalf("reconcile touched a down host's boxes: %+v, %d rows on h3", rep, onH3())
	}
	f.Probe(bg) // h3 answers again through the first fleet
	box, err := f.EnsureBox(bg, app.BoxSpec{Session: "ses_more"})
	if err != nil || box.Host != "h3" {
		t.Fatalf("after recovery: %+v %v", box, err)
	}
}

func TestReconcile(t *testing.T) {
	fake := msbtest.New(t, "node")
	store := apptest.NewMemStore()
	d := defaults()
	d.PoolSize = 1
	f := newFleet(t, store, d, fleetHost{"local", fake, 10})
	ctx := app.WithActor(bg, app.OperatorActor)
	svc := app.NewService(app.Deps{Store: store, Sandbox: apptest.NewFakeSandbox()}, app.Config{})
	mk := func(task string) app.SessionID {
		dl, err := svc.Delegate(ctx, app.DelegateRequest{Task: task})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.EnsureBox(bg, app.BoxSpec{Session: dl.Session.ID}); err != nil {
			t.Fatal(err)
		}
		return dl.Session.ID
	}
	live, closed, pinned, vanished := mk("live"), mk("closed"), mk("pinned"), mk("vanished")
	if _, err := svc.Pin(ctx, pinned, true); err != nil {
		t.Fatal(err)
	}
	for _, id := range []app.SessionID{closed, pinned} {
		// Teardown's own box removal goes to the fake sandbox; the real
		// box stays, as if the controller died before removing it.
		if _, err := svc.Teardown(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	fake.Run("rm", "--force", sandbox.SessionBoxName(vanished))
	fake.Run("run", "-d", "--name", "asb-s-orphan", "--pull", "never", "node", "--", "sleep", "infinity")
	fake.Run("run", "-d", "--name", "someone-elses", "--pull", "never", "node", "--", "sleep", "infinity")
	f.Probe(bg)
	f.Refill(bg)
	var pool app.Box
	for _, b := range rows(t, store) {
		if b.Role == app.BoxPoolFree {
			pool = b
		}
	}
	fake.Run("stop", pool.Name) // a warm box that idle-stopped is useless

	rep, err := f.Reconcile(bg)
	if err != nil {
		t.Fatal(err)
	}
	removed := map[string]bool{}
	for _, r := range rep.Removed {
		removed[r.Name] = true
	}
	want := map[string]bool{sandbox.SessionBoxName(closed): true, "asb-s-orphan": true, pool.Name: true}
	if fmt.Sprint(removed) != fmt.Sprint(want) {
		t.Fatalf("removed %v, want %v", removed, want)
	}
	if len(rep.Missing) != 1 || rep.Missing[0].Name != sandbox.SessionBoxName(vanished) {
		t.Fatalf("missing = %+v", rep.Missing)
	}
	boxes := fake.Boxes()
	for _, keep := range []string{sandbox.SessionBoxName(live), sandbox.SessionBoxName(pinned), "someone-elses"} {
		if !slices.Contains(boxes, keep) {
			t.Errorf("reconcile removed %s", keep)
		}
	}
	// A second pass changes nothing.
	rep, err = f.Reconcile(bg)
	if err != nil || len(rep.Removed) != 0 || len(rep.Missing) != 0 {
		t.Fatalf("second pass: %+v %v", rep, err)
	}
}

// addSession records an active session, as the core does before it asks
// for a box.
func addSession(t *testing.T, s app.Store, id app.SessionID) {
	t.Helper()
	err := s.Tx(bg, func(tx app.Tx) error {
		return tx.InsertSession(&app.Session{ID: id, Owner: app.OperatorAccount, State: app.SessionActive, Title: "t",
			Origin: app.Origin{Kind: app.OriginAPI}, CreatedAt: time.Now(), UpdatedAt: time.Now()})
	})
	if err != nil {
		t.Fatal(err)
	}
}

func countRole(bs []app.Box, role app.BoxRole) int {
	n := 0
	for _, b := range bs {
		if b.Role == role {
			n++
		}
	}
	return n
}

// TestDrainingHostTakesNoNewBoxes: a host in SANDBOX_DRAIN keeps its
// sessions' boxes but gets no new ones, cold or warm, and its free warm
// boxes are removed, so it can leave service once its sessions end.
func TestDrainingHostTakesNoNewBoxes(t *testing.T) {
	h1, h2 := msbtest.New(t, "node"), msbtest.New(t, "node")
	store := apptest.NewMemStore()
	d := defaults()
	d.PoolSize = 2
	f := newFleet(t, store, d, fleetHost{"h1", h1, 10}, fleetHost{"h2", h2, 10})
	f.Probe(bg)
	f.Refill(bg)
	addSession(t, store, "ses_old")
	old, err := f.EnsureBox(bg, app.BoxSpec{Session: "ses_old"})
	if err != nil {
		t.Fatal(err)
	}

	specs := []sandbox.HostSpec{
		{Name: "h1", Transport: sandbox.NewLocalTransport(nil), MSBPath: h1.Path, MaxBoxes: 10},
		{Name: "h2", Transport: sandbox.NewLocalTransport(nil), MSBPath: h2.Path, MaxBoxes: 10},
	}
	drainHost, drainFake, keepFake := old.Host, h1, h2
	if drainHost == "h2" {
		drainFake, keepFake = h2, h1
	}
	for i := range specs {
		specs[i].Drain = specs[i].Name == drainHost
	}
	drained, err := sandbox.NewFleet(sandbox.FleetConfig{Hosts: specs, Defaults: d, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	drained.Probe(bg)
	drained.Refill(bg)
	for _, b := range rows(t, store) {
		if b.Host == drainHost && b.Role == app.BoxPoolFree {
			t.Fatalf("a warm box stays on the draining host: %+v", b)
		}
	}
	// The session already there keeps its box.
	if again, err := drained.EnsureBox(bg, app.BoxSpec{Session: "ses_old"}); err != nil || again != old {
		t.Fatalf("the draining host's session lost its box: %+v %v", again, err)
	}
	if got := drainFake.Boxes(); len(got) != 1 {
		t.Fatalf("draining host has %d boxes, want only the session's: %v", len(got), got)
	}
	for i := 0; i < 4; i++ {
		id := app.SessionID(fmt.Sprintf("ses_new%d", i))
		addSession(t, store, id)
		box, err := drained.EnsureBox(bg, app.BoxSpec{Session: id})
		if err != nil || box.Host == drainHost {
			t.Fatalf("new session %d placed on %+v (%v)", i, box, err)
		}
	}
	if n := len(keepFake.Boxes()); n < 4 {
		t.Fatalf("the other host has %d boxes", n)
	}
	hosts, _ := drained.Hosts(bg)
	for _, h := range hosts {
		if h.Draining != (h.Name == drainHost) {
			t.Fatalf("host %s reported draining=%v", h.Name, h.Draining)
		}
	}
	// With only a draining host, the refusal says why.
	specs[0].Drain = true
	only, err := sandbox.NewFleet(sandbox.FleetConfig{Hosts: specs[:1], Defaults: sandbox.BoxDefaults{Image: "node"}, Store: apptest.NewMemStore()})
	if err != nil {
		t.Fatal(err)
	}
	only.Probe(bg)
	if _, err := only.EnsureBox(bg, app.BoxSpec{Session: "ses_x"}); app.ErrorCode(err) != app.EUNAVAILABLE || !strings.Contains(err.Error(), "draining") {
		t.Fatalf("only a draining host: %v", err)
	}
}

// TestSampleMetricsFillsTheFleetView: the fleet records each running box's
// memory (and CPU) from msb metrics on its row, and clears them for a box
// that stopped.
func TestSampleMetricsFillsTheFleetView(t *testing.T) {
	fake := msbtest.New(t, "node")
	store := apptest.NewMemStore()
	f := newFleet(t, store, defaults(), fleetHost{"local", fake, 10})
	f.Probe(bg)
	addSession(t, store, "ses_m")
	box, err := f.EnsureBox(bg, app.BoxSpec{Session: "ses_m"})
	if err != nil {
		t.Fatal(err)
	}
	// Something resident in the box, so its memory is more than a rounding error.
	if _, stderr, code := fake.Run("exec", box.Name, "--", "sh", "-c", "nohup sleep 300 >/dev/null 2>&1 &"); code != 0 {
		t.Fatal(stderr)
	}
	f.SampleMetrics(bg)
	row := func() app.Box {
		for _, b := range rows(t, store) {
			if b.BoxRef == box {
				return b
			}
		}
		t.Fatalf("no row for %s", box.Name)
		return app.Box{}
	}
	if r := row(); r.MemMiB <= 0 || r.CPUPct < 0 {
		t.Fatalf("running box sampled as cpu %.1f%% mem %d MiB", r.CPUPct, r.MemMiB)
	}
	if _, stderr, code := fake.Run("stop", box.Name); code != 0 {
		t.Fatal(stderr)
	}
	f.SampleMetrics(bg)
	if r := row(); r.MemMiB != 0 || r.CPUPct != 0 {
		t.Fatalf("stopped box still shows cpu %.1f%% mem %d MiB", r.CPUPct, r.MemMiB)
	}
}
