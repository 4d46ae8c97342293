package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/asb-dev/asb/app"
)

// HostSpec configures one msb host.
type HostSpec struct {
	// Name is the configured host ("local" or "ssh://user@host:port").
	Name      string
	Transport Transport
	MSBPath   string
	// MaxBoxes caps session boxes on the host (free pool boxes do not count).
	MaxBoxes int
	// Drain keeps new boxes off the host: its sessions go on, its warm
	// boxes are removed, and it can leave service once they are gone.
	Drain bool
}

// BoxDefaults describe the boxes asb boots.
type BoxDefaults struct {
	// Image or Snapshot (Snapshot wins when both are set).
	Image       string
	Snapshot    string
	MemoryMiB   int
	IdleTimeout time.Duration
	MaxDuration time.Duration
	// Egress is the base policy; a session's AllowDomains are added to it.
	Egress Egress
	// PoolSize is how many warm boxes each healthy host keeps.
	PoolSize int
}

func (d BoxDefaults) imageKey() string {
	if d.Snapshot != "" {
		return "snapshot:" + d.Snapshot
	}
	return "image:" + d.Image
}

// FleetConfig configures a Fleet.
type FleetConfig struct {
	Hosts    []HostSpec
	Defaults BoxDefaults
	Store    app.Store
	Clock    app.Clock
	Logger   *slog.Logger
	// Interval is how often Run probes hosts, reconciles and refills the
	// pool (default 30s).
	Interval time.Duration
	// ProbeTimeout bounds one host probe (default 15s).
	ProbeTimeout time.Duration
	// BootingGrace is how long a box row may wait for its box to show up
	// in msb ls before reconcile calls it missing (default 5m).
	BootingGrace time.Duration
}

// Fleet places boxes on hosts, keeps a warm pool on each, and reconciles
// what the database believes with what msb reports. It is the box half of
// the app.Sandbox port; the agent half (launch, poll, collect) builds on
// it.
//
// Box rows are written before msb is asked to act, so a controller that
// dies half-way finds the row on restart and either re-attaches the box or
// removes it; nothing asb created is forgotten and nothing else is touched.
type Fleet struct {
	cfg   FleetConfig
	hosts []*host
	store app.Store
	clock app.Clock
	log   *slog.Logger
	kick  chan struct{}
}

// host is one msb host and what the last probe learned about it.
type host struct {
	name     string
	t        Transport
	msb      *MSB
	maxBoxes int
	drain    bool

	mu        sync.Mutex
	probed    bool
	healthy   bool
	problem   string
	checked   time.Time
	freeMiB   int // -1 when unknown
	refilling bool
}

// Box names: asb owns exactly the boxes whose names start with these.
const (
	boxPrefix     = "asb-"
	sessionPrefix = "asb-s-"
	poolPrefix    = "asb-p-"
)

// Box row statuses beyond msb's own (Running, Stopped, …).
const (
	statusBooting = "booting"
	statusMissing = "missing"
)

// NewFleet builds a fleet over the given hosts.
func NewFleet(cfg FleetConfig) (*Fleet, error) {
	if cfg.Store == nil {
		return nil, errors.New("sandbox: a fleet needs a store")
	}
	if cfg.Clock == nil {
		cfg.Clock = app.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 30 * time.Second
	}
	if cfg.ProbeTimeout <= 0 {
		cfg.ProbeTimeout = 15 * time.Second
	}
	if cfg.BootingGrace <= 0 {
		cfg.BootingGrace = 5 * time.Minute
	}
	if cfg.Defaults.Image == "" && cfg.Defaults.Snapshot == "" {
		return nil, errors.New("sandbox: set an image (MSB_IMAGE) or a snapshot (MSB_SNAPSHOT)")
	}
	f := &Fleet{cfg: cfg, store: cfg.Store, clock: cfg.Clock, log: cfg.Logger, kick: make(chan struct{}, 1)}
	seen := map[string]bool{}
	for _, hs := range cfg.Hosts {
		if hs.Name == "" || hs.Transport == nil {
			return nil, errors.New("sandbox: every host needs a name and a transport")
		}
		if seen[hs.Name] {
			return nil, fmt.Errorf("sandbox: host %s is configured twice", hs.Name)
		}
		seen[hs.Name] = true
		max := hs.MaxBoxes
		if max <= 0 {
			max = 5
		}
		f.hosts = append(f.hosts, &host{name: hs.Name, t: hs.Transport, msb: NewMSB(hs.Transport, hs.MSBPath), maxBoxes: max, drain: hs.Drain, freeMiB: -1})
	}
	return f, nil
}

func (f *Fleet) host(name string) *host {
	for _, h := range f.hosts {
		if h.name == name {
			return h
		}
	}
	return nil
}

// MSB returns the driver for a configured host.
func (f *Fleet) MSB(hostName string) (*MSB, bool) {
	h := f.host(hostName)
	if h == nil {
		return nil, false
	}
	return h.msb, true
}

// Run probes, reconciles and refills every Interval (and when kicked)
// until ctx ends.
func (f *Fleet) Run(ctx context.Context) error {
	for {
		f.Probe(ctx)
		if _, err := f.Reconcile(ctx); err != nil && ctx.Err() == nil {
			f.log.Warn("reconcile boxes", "err", err)
		}
		f.Refill(ctx)
		f.SampleMetrics(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-f.kick:
		case <-f.clock.After(f.cfg.Interval):
		}
	}
}

// SampleMetrics records each running box's CPU and memory (one `msb
// metrics` per healthy host) on its row, for the fleet views. A host that
// does not answer keeps its last figures; the probe reports it.
func (f *Fleet) SampleMetrics(ctx context.Context) {
	for _, h := range f.hosts {
		if !h.isHealthy() {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, f.cfg.ProbeTimeout)
		samples, err := h.msb.Metrics(sctx, "")
		cancel()
		if err != nil {
			f.log.Debug("sample box metrics", "host", h.name, "err", err)
			continue
		}
		byName := make(map[string]Metrics, len(samples))
		for _, m := range samples {
			byName[m.Name] = m
		}
		err = f.store.Tx(ctx, func(tx app.Tx) error {
			rows, err := tx.ListBoxes(h.name)
			if err != nil {
				return err
			}
			for _, b := range rows {
				m, ok := byName[b.Name]
				cpu, mem := 0.0, 0
				if ok && m.State == "running" {
					cpu, mem = m.CPUPercent, int(m.MemoryBytes>>20)
				}
				if b.CPUPct == cpu && b.MemMiB == mem {
					continue
				}
				b.CPUPct, b.MemMiB = cpu, mem
				if err := tx.UpsertBox(b); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil && ctx.Err() == nil {
			f.log.Warn("record box metrics", "host", h.name, "err", err)
		}
	}
}

func (f *Fleet) kickLoop() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// Probe checks every host (in parallel): msb answers `ls`, and how much
// memory the host has free.
func (f *Fleet) Probe(ctx context.Context) {
	var wg sync.WaitGroup
	for _, h := range f.hosts {
		wg.Add(1)
		go func(h *host) {
			defer wg.Done()
			f.probe(ctx, h)
		}(h)
	}
	wg.Wait()
}

func (f *Fleet) probe(ctx context.Context, h *host) {
	pctx, cancel := context.WithTimeout(ctx, f.cfg.ProbeTimeout)
	defer cancel()
	_, err := h.msb.List(pctx)
	free := -1
	if err == nil {
		free = memAvailableMiB(pctx, h.t)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	was := h.healthy
	h.probed, h.checked = true, f.clock.Now()
	h.healthy = err == nil
	h.freeMiB = free
	h.problem = ""
	if err != nil {
		h.problem = app.ErrorMessage(err)
		if was || !h.probed {
			f.log.Warn("sandbox host is not answering; its boxes are kept and reported", "host", h.name, "err", err)
		}
	} else if !was {
		f.log.Info("sandbox host answers", "host", h.name, "free_mib", free)
	}
}

// memAvailableMiB reads MemAvailable from the host's /proc/meminfo; -1
// when it cannot (then only MaxBoxes limits placement).
func memAvailableMiB(ctx context.Context, t Transport) int {
	res, err := t.Run(ctx, Command{Argv: []string{"cat", "/proc/meminfo"}, MaxOutput: 64 << 10})
	if err != nil || res.ExitCode != 0 {
		return -1
	}
	sc := bufio.NewScanner(bytes.NewReader(res.Stdout))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemAvailable:" {
			kb, err := strconv.Atoi(fields[1])
			if err == nil {
				return kb / 1024
			}
		}
	}
	return -1
}

// Hosts reports each host's health and load.
func (f *Fleet) Hosts(ctx context.Context) ([]app.Host, error) {
	var boxes []app.Box
	if err := f.store.View(ctx, func(tx app.Tx) error {
		var err error
		boxes, err = tx.ListBoxes("")
		return err
	}); err != nil {
		return nil, err
	}
	out := make([]app.Host, 0, len(f.hosts))
	for _, h := range f.hosts {
		n := 0
		for _, b := range boxes {
			if b.Host == h.name && b.Role != app.BoxPoolFree {
				n++
			}
		}
		h.mu.Lock()
		out = append(out, app.Host{Name: h.name, Healthy: h.healthy, Draining: h.drain, Capacity: h.maxBoxes, Boxes: n,
			FreeMiB: h.freeMiB, Checked: h.checked, Problem: h.problem})
		h.mu.Unlock()
	}
	return out, nil
}

func (f *Fleet) ensureProbed(ctx context.Context) {
	for _, h := range f.hosts {
		h.mu.Lock()
		probed := h.probed
		h.mu.Unlock()
		if !probed {
			f.probe(ctx, h)
		}
	}
}

// egressFor is the policy a session's box needs.
func (f *Fleet) egressFor(spec app.BoxSpec) Egress {
	e := f.cfg.Defaults.Egress
	e.Domains = append(append([]string(nil), e.Domains...), spec.AllowDomains...)
	return e
}

// EnsureBox returns the session's box, running. It re-uses the session's
// box (starting it if it idle-stopped), else claims a warm box that fits,
// else boots one on the host with the most room.
func (f *Fleet) EnsureBox(ctx context.Context, spec app.BoxSpec) (app.BoxRef, error) {
	f.ensureProbed(ctx)
	egress := f.egressFor(spec)
	for attempt := 0; attempt < 3; attempt++ {
		box, ok, err := f.sessionBox(ctx, spec.Session)
		if err != nil {
			return app.BoxRef{}, err
		}
		if !ok {
			box, ok, err = f.claim(ctx, spec, egress)
			if err != nil {
				return app.BoxRef{}, err
			}
			if ok {
				f.kickLoop() // refill the pool behind the claim
			}
		}
		if !ok {
			return f.boot(ctx, spec, egress)
		}
		h := f.host(box.Host)
		if h == nil {
			return app.BoxRef{}, app.Errorf(app.EUNAVAILABLE, "the session's box is on %s, which is no longer configured", box.Host)
		}
		err = f.ensureRunning(ctx, h, box.Name)
		if err == nil {
			return box.BoxRef, nil
		}
		if !IsKind(err, KindNotFound) {
			return app.BoxRef{}, err
		}
		// The box vanished (host reset, removed by hand): forget it and
		// get the session another one.
		f.log.Warn("box vanished; getting another", "box", box.Name, "host", box.Host, "session", spec.Session)
		if err := f.deleteRow(ctx, box.BoxRef); err != nil {
			return app.BoxRef{}, err
		}
	}
	return app.BoxRef{}, app.Errorf(app.EUNAVAILABLE, "could not get a box for session %s", spec.Session)
}

// sessionBox finds the box assigned to a session.
func (f *Fleet) sessionBox(ctx context.Context, id app.SessionID) (app.Box, bool, error) {
	var out app.Box
	var found bool
	err := f.store.View(ctx, func(tx app.Tx) error {
		boxes, err := tx.ListBoxes("")
		if err != nil {
			return err
		}
		for _, b := range boxes {
			if b.SessionID == id && b.Role != app.BoxPoolFree {
				out, found = b, true
				return nil
			}
		}
		return nil
	})
	return out, found, err
}

// ensureRunning starts a box that msb reports stopped.
func (f *Fleet) ensureRunning(ctx context.Context, h *host, name string) error {
	list, err := h.msb.List(ctx)
	if err != nil {
		return err
	}
	for _, e := range list {
		if e.Name != name {
			continue
		}
		if e.Running() {
			return nil
		}
		f.log.Info("starting a stopped box", "box", name, "host", h.name, "status", e.Status)
		return h.msb.Start(ctx, name)
	}
	return (&Error{Host: h.name, Op: "ls", Kind: KindNotFound, Exit: 1, Msg: "sandbox not found: " + name}).asAppError()
}

// claim hands a fitting warm box to the session. The claim is one store
// transaction, so concurrent claims never get the same box.
func (f *Fleet) claim(ctx context.Context, spec app.BoxSpec, egress Egress) (app.Box, bool, error) {
	if f.cfg.Defaults.PoolSize <= 0 {
		return app.Box{}, false, nil
	}
	image, key := f.cfg.Defaults.imageKey(), egress.Key()
	now := f.clock.Now()
	var out app.Box
	var ok bool
	err := f.store.Tx(ctx, func(tx app.Tx) error {
		ok = false
		boxes, err := tx.ListBoxes("")
		if err != nil {
			return err
		}
		for _, b := range boxes {
			if b.Role != app.BoxPoolFree || b.Status != "Running" || b.Image != image || b.Egress != key {
				continue
			}
			if h := f.host(b.Host); h == nil || !h.isHealthy() || h.drain {
				continue
			}
			// A box past half its lifetime would leave the session too little.
			if md := f.cfg.Defaults.MaxDuration; md > 0 && now.Sub(b.CreatedAt) > md/2 {
				continue
			}
			b.Role, b.SessionID = app.BoxPoolClaimed, spec.Session
			if err := tx.UpsertBox(b); err != nil {
				return err
			}
			out, ok = b, true
			return nil
		}
		return nil
	})
	return out, ok, err
}

func (h *host) isHealthy() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.healthy
}

// room is how many more session boxes of memMiB fit on the host.
func (h *host) room(used, memMiB int) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.healthy || h.drain {
		return 0
	}
	r := h.maxBoxes - used
	if h.freeMiB >= 0 && memMiB > 0 {
		r = min(r, h.freeMiB/memMiB)
	}
	return r
}

// reserve picks the host with the most room and records the box row
// (status booting) in the same transaction, so concurrent boots never
// overshoot a host's capacity.
func (f *Fleet) reserve(ctx context.Context, name string, role app.BoxRole, session app.SessionID, egress Egress, onHost *host) (*host, error) {
	mem := f.cfg.Defaults.MemoryMiB
	var chosen *host
	err := f.store.Tx(ctx, func(tx app.Tx) error {
		chosen = nil
		boxes, err := tx.ListBoxes("")
		if err != nil {
			return err
		}
		used := map[string]int{}
		for _, b := range boxes {
			if b.Role != app.BoxPoolFree {
				used[b.Host]++
			}
		}
		if onHost != nil {
			chosen = onHost
		} else {
			best := 0
			for _, h := range f.hosts {
				if r := h.room(used[h.name], mem); r > best {
					best, chosen = r, h
				}
			}
		}
		if chosen == nil {
			return app.Errorf(app.EUNAVAILABLE, "no sandbox host has room for another box (%s)", f.capacitySummary(used))
		}
		return tx.UpsertBox(app.Box{BoxRef: app.BoxRef{Host: chosen.name, Name: name}, Role: role, SessionID: session,
			Status: statusBooting, Image: f.cfg.Defaults.imageKey(), Egress: egress.Key(), CreatedAt: f.clock.Now()})
	})
	if err == nil && mem > 0 {
		chosen.mu.Lock()
		if chosen.freeMiB >= 0 {
			chosen.freeMiB = max(0, chosen.freeMiB-mem)
		}
		chosen.mu.Unlock()
	}
	return chosen, err
}

func (f *Fleet) capacitySummary(used map[string]int) string {
	var parts []string
	for _, h := range f.hosts {
		h.mu.Lock()
		state := fmt.Sprintf("%s: %d/%d boxes", h.name, used[h.name], h.maxBoxes)
		if !h.healthy {
			state = h.name + ": not answering"
		} else if h.drain {
			state += ", draining"
		} else if h.freeMiB >= 0 {
			state += fmt.Sprintf(", %d MiB free", h.freeMiB)
		}
		h.mu.Unlock()
		parts = append(parts, state)
	}
	if len(parts) == 0 {
		return "no hosts configured"
	}
	return strings.Join(parts, "; ")
}

// SessionBoxName is the name of a session's cold-booted box. It is
// derived from the session id, so booting again after a restart finds
// (msb run reuses) the same box.
func SessionBoxName(id app.SessionID) string {
	return sessionPrefix + strings.TrimPrefix(string(id), "ses_")
}

func (f *Fleet) runSpec(name string, egress Egress) RunSpec {
	d := f.cfg.Defaults
	s := RunSpec{Name: name, MemoryMiB: d.MemoryMiB, IdleTimeout: d.IdleTimeout, MaxDuration: d.MaxDuration, Egress: egress}
	if d.Snapshot != "" {
		s.Snapshot = d.Snapshot
	} else {
		s.Image = d.Image
	}
	return s
}

// boot cold-boots a box for the session.
func (f *Fleet) boot(ctx context.Context, spec app.BoxSpec, egress Egress) (app.BoxRef, error) {
	name := SessionBoxName(spec.Session)
	h, err := f.reserve(ctx, name, app.BoxSession, spec.Session, egress, nil)
	if err != nil {
		return app.BoxRef{}, err
	}
	ref := app.BoxRef{Host: h.name, Name: name}
	if err := f.bootOn(ctx, h, f.runSpec(name, egress)); err != nil {
		if delErr := f.deleteRow(context.WithoutCancel(ctx), ref); delErr != nil {
			f.log.Warn("forget failed box", "box", name, "err", delErr)
		}
		return app.BoxRef{}, err
	}
	return ref, f.setStatus(ctx, ref, "Running")
}

// bootOn runs msb and prepares /workspace. On failure the half-made box
// is removed so nothing leaks.
func (f *Fleet) bootOn(ctx context.Context, h *host, s RunSpec) error {
	if err := h.msb.Run(ctx, s); err != nil {
		if rmErr := h.msb.Remove(context.WithoutCancel(ctx), s.Name); rmErr != nil {
			f.log.Warn("remove half-made box", "box", s.Name, "host", h.name, "err", rmErr)
		}
		return err
	}
	res, err := h.msb.Exec(ctx, s.Name, ExecSpec{}, "mkdir", "-p", "/workspace")
	if err == nil && res.ExitCode != 0 {
		err = app.Errorf(app.EUNAVAILABLE, "box %s on %s could not create /workspace (exit %d)", s.Name, h.name, res.ExitCode)
	}
	if err != nil {
		if rmErr := h.msb.Remove(context.WithoutCancel(ctx), s.Name); rmErr != nil {
			f.log.Warn("remove half-made box", "box", s.Name, "host", h.name, "err", rmErr)
		}
	}
	return err
}

func (f *Fleet) setStatus(ctx context.Context, ref app.BoxRef, status string) error {
	return f.store.Tx(ctx, func(tx app.Tx) error {
		boxes, err := tx.ListBoxes(ref.Host)
		if err != nil {
			return err
		}
		for _, b := range boxes {
			if b.BoxRef == ref {
				b.Status = status
				return tx.UpsertBox(b)
			}
		}
		return app.Errorf(app.ENOTFOUND, "box %s is not recorded", ref.Name)
	})
}

func (f *Fleet) deleteRow(ctx context.Context, ref app.BoxRef) error {
	return f.store.Tx(ctx, func(tx app.Tx) error { return tx.DeleteBox(ref) })
}

// Remove destroys a box and forgets it. A box that is already gone is fine.
func (f *Fleet) Remove(ctx context.Context, ref app.BoxRef) error {
	h := f.host(ref.Host)
	if h == nil {
		return app.Errorf(app.EUNAVAILABLE, "box %s is on %s, which is no longer configured", ref.Name, ref.Host)
	}
	if err := h.msb.Remove(ctx, ref.Name); err != nil {
		return err
	}
	return f.deleteRow(ctx, ref)
}

// Refill boots warm boxes until each healthy host has PoolSize free ones.
// Concurrent calls do not overshoot: one refill runs per host at a time,
// and it counts the box rows (booting ones included) before each boot.
func (f *Fleet) Refill(ctx context.Context) {
	for _, h := range f.hosts {
		if h.drain && h.isHealthy() {
			f.emptyPool(ctx, h)
		}
	}
	if f.cfg.Defaults.PoolSize <= 0 {
		return
	}
	var wg sync.WaitGroup
	for _, h := range f.hosts {
		if !h.isHealthy() || h.drain {
			continue
		}
		h.mu.Lock()
		busy := h.refilling
		h.refilling = true
		h.mu.Unlock()
		if busy {
			continue
		}
		wg.Add(1)
		go func(h *host) {
			defer wg.Done()
			defer func() {
				h.mu.Lock()
				h.refilling = false
				h.mu.Unlock()
			}()
			f.refillHost(ctx, h)
		}(h)
	}
	wg.Wait()
}

// emptyPool removes a draining host's free warm boxes. Claims skip
// draining hosts, so none of them is handed out meanwhile.
func (f *Fleet) emptyPool(ctx context.Context, h *host) {
	var free []app.Box
	if err := f.store.View(ctx, func(tx app.Tx) error {
		boxes, err := tx.ListBoxes(h.name)
		for _, b := range boxes {
			if b.Role == app.BoxPoolFree {
				free = append(free, b)
			}
		}
		return err
	}); err != nil {
		f.log.Warn("list warm boxes of a draining host", "host", h.name, "err", err)
		return
	}
	for _, b := range free {
		if err := f.Remove(ctx, b.BoxRef); err != nil && app.ErrorCode(err) != app.ENOTFOUND {
			f.log.Warn("remove a warm box of a draining host", "box", b.Name, "host", h.name, "err", err)
			continue
		}
		f.log.Info("removed a warm box of a draining host", "box", b.Name, "host", h.name)
	}
}

func (f *Fleet) refillHost(ctx context.Context, h *host) {
	egress := f.cfg.Defaults.Egress
	for ctx.Err() == nil {
		have, err := f.poolCount(ctx, h.name)
		if err != nil || have >= f.cfg.Defaults.PoolSize {
			return
		}
		name := poolPrefix + randomHex(6)
		if _, err := f.reserve(ctx, name, app.BoxPoolFree, "", egress, h); err != nil {
			f.log.Warn("reserve warm box", "host", h.name, "err", err)
			return
		}
		ref := app.BoxRef{Host: h.name, Name: name}
		if err := f.bootOn(ctx, h, f.runSpec(name, egress)); err != nil {
			f.log.Warn("boot warm box", "host", h.name, "err", err)
			if delErr := f.deleteRow(context.WithoutCancel(ctx), ref); delErr != nil {
				f.log.Warn("forget failed warm box", "box", name, "err", delErr)
			}
			return
		}
		if err := f.setStatus(ctx, ref, "Running"); err != nil {
			f.log.Warn("record warm box", "box", name, "err", err)
			return
		}
	}
}

// poolCount counts free warm boxes (booting ones too) on a host that fit
// the current defaults.
func (f *Fleet) poolCount(ctx context.Context, hostName string) (int, error) {
	image, key := f.cfg.Defaults.imageKey(), f.cfg.Defaults.Egress.Key()
	n := 0
	err := f.store.View(ctx, func(tx app.Tx) error {
		boxes, err := tx.ListBoxes(hostName)
		if err != nil {
			return err
		}
		for _, b := range boxes {
			if b.Role == app.BoxPoolFree && b.Image == image && b.Egress == key {
				n++
			}
		}
		return nil
	})
	return n, err
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read does not fail on supported platforms
	return hex.EncodeToString(b)
}
