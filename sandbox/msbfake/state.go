package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"syscall"
	"time"
)

// Sandbox statuses, spelled like Rust's Debug of SandboxStatus.
const (
	statusRunning = "Running"
	statusStopped = "Stopped"
	statusCrashed = "Crashed"
)

// State is the whole persisted catalogue (the real msb keeps it in SQLite).
type State struct {
	NextID    int64               `json:"next_id"`
	Sandboxes map[string]*Sandbox `json:"sandboxes"`
	Images    []*Image            `json:"images"`
	Snapshots []*Snapshot         `json:"snapshots"`
}

// Sandbox is one catalogue row plus its runtime bookkeeping.
type Sandbox struct {
	ID             int64      `json:"id"`
	Name           string     `json:"name"`
	Image          string     `json:"image"`     // exactly as given
	ImageRef       string     `json:"image_ref"` // normalised; "" for local paths
	Status         string     `json:"status"`
	CreatedAt      time.Time  `json:"created_at"`
	UpdatedAt      time.Time  `json:"updated_at"`
	Ephemeral      bool       `json:"ephemeral"`
	Config         BoxConfig  `json:"config"`
	StartedAt      *time.Time `json:"started_at,omitempty"`
	StoppedAt      *time.Time `json:"stopped_at,omitempty"`
	LastActivityAt *time.Time `json:"last_activity_at,omitempty"`
	FromSnapshot   string     `json:"from_snapshot,omitempty"`
	Runtime        *Runtime   `json:"runtime,omitempty"`
	Execs          []Lease    `json:"execs,omitempty"` // exec/cp invocations in flight
	StopReason     string     `json:"stop_reason,omitempty"`
}

// BoxConfig is everything create/run stored, echoed by ps and inspect.
type BoxConfig struct {
	Cpus            int                 `json:"cpus"`
	MaxCpus         int                 `json:"max_cpus"`
	MemoryMiB       int                 `json:"memory_mib"`
	MaxMemoryMiB    int                 `json:"max_memory_mib"`
	Thp             string              `json:"thp"`
	Env             []EnvVar            `json:"env"`
	Workdir         string              `json:"workdir,omitempty"`
	Shell           string              `json:"shell"`
	User            string              `json:"user,omitempty"`
	Hostname        string              `json:"hostname,omitempty"`
	Entrypoint      []string            `json:"entrypoint,omitempty"`
	Cmd             []string            `json:"cmd,omitempty"`
	Labels          map[string]string   `json:"labels"`
	Mounts          []Mount             `json:"mounts"`
	Ports           []Port              `json:"ports"`
	Patches         []Patch             `json:"patches"`
	Network         Network             `json:"network"`
	Secrets         []Secret            `json:"secrets,omitempty"`
	PullPolicy      string              `json:"pull_policy"`
	Security        string              `json:"security_profile"`
	Deployment      string              `json:"deployment_profile"`
	Rlimits         []string            `json:"rlimits"`
	IdleTimeoutSecs *uint64             `json:"idle_timeout_secs"`
	MaxDurationSecs *uint64             `json:"max_duration_secs"`
	Extra           map[string][]string `json:"extra,omitempty"` // accepted, stored, not enforced
}

// EnvVar is one KEY=VALUE of the guest environment.
type EnvVar struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Runtime identifies the processes of a running box. Start times guard
// against pid reuse.
type Runtime struct {
	BwrapPid   int    `json:"bwrap_pid"`
	BwrapStart uint64 `json:"bwrap_start"`
	InitPid    int    `json:"init_pid"` // pid 1 of the box's pid namespace
	InitStart  uint64 `json:"init_start"`
	StartupCmd bool   `json:"startup_cmd"` // pid 2 is a `run -d` command, not `sleep infinity`
	OwnNet     bool   `json:"own_net"`     // the box has its own (empty) network namespace
}

// Lease marks an exec or cp in flight (idle timers must not fire).
type Lease struct {
	Pid   int    `json:"pid"`
	Start uint64 `json:"start"`
}

// Image is one entry of the pull cache.
type Image struct {
	Reference string    `json:"reference"` // normalised
	Digest    string    `json:"digest"`
	SizeBytes int64     `json:"size_bytes"`
	PulledAt  time.Time `json:"pulled_at"`
}

// Snapshot is one indexed snapshot artifact.
type Snapshot struct {
	Name      string            `json:"name"`
	Digest    string            `json:"digest"`
	Image     string            `json:"image"` // as the source sandbox was created
	ImageRef  string            `json:"image_ref"`
	Path      string            `json:"path"`
	SizeBytes int64             `json:"size_bytes"`
	CreatedAt time.Time         `json:"created_at"`
	Labels    map[string]string `json:"labels"`
	Source    string            `json:"source"`
	Config    BoxConfig         `json:"config"`
}

// app is the context of one invocation.
type app struct {
	home   string
	knobs  *knobs
	now    time.Time
	st     *State
	lock   *os.File
	spawns map[int]*exec.Cmd // bwrap processes this invocation started (reaped on stop)
}

func newApp() (*app, error) {
	home, err := msbHome()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(home, sandboxesDirName), 0o755); err != nil {
		return nil, fmt.Errorf("create MSB_HOME: %w", err)
	}
	k, err := loadKnobs(home)
	if err != nil {
		return nil, err
	}
	now, err := k.now()
	if err != nil {
		return nil, err
	}
	return &app{home: home, knobs: k, now: now, spawns: map[int]*exec.Cmd{}}, nil
}

func (a *app) statePath() string          { return filepath.Join(a.home, stateFileName) }
func (a *app) boxDir(name string) string  { return filepath.Join(a.home, sandboxesDirName, name) }
func (a *app) boxRoot(name string) string { return filepath.Join(a.boxDir(name), "root") }

// locked runs fn with the state loaded, swept and exclusively locked, and
// persists the state afterwards (even when fn fails, because fn may have
// changed it before failing).
func (a *app) locked(fn func() error) error {
	if err := a.acquire(); err != nil {
		return err
	}
	defer a.release()
	if err := a.load(); err != nil {
		return err
	}
	a.sweep()
	ferr := fn()
	if err := a.save(); err != nil {
		return errors.Join(ferr, err)
	}
	return ferr
}

func (a *app) acquire() error {
	f, err := os.OpenFile(filepath.Join(a.home, stateLockName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("open state lock: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("lock state: %w", err)
	}
	a.lock = f
	// The clock is read again under the lock so that timestamps are ordered
	// like the invocations that wrote them.
	if now, err := a.knobs.now(); err == nil {
		a.now = now
	}
	return nil
}

func (a *app) release() {
	if a.lock != nil {
		_ = syscall.Flock(int(a.lock.Fd()), syscall.LOCK_UN)
		a.lock.Close()
		a.lock = nil
	}
}

func (a *app) load() error {
	a.st = &State{NextID: 1, Sandboxes: map[string]*Sandbox{}}
	data, err := os.ReadFile(a.statePath())
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read state: %w", err)
	}
	if err := json.Unmarshal(data, a.st); err != nil {
		return fmt.Errorf("parse state %s: %w", a.statePath(), err)
	}
	if a.st.Sandboxes == nil {
		a.st.Sandboxes = map[string]*Sandbox{}
	}
	return nil
}

// save writes the state atomically (temp file + rename) so a killed
// invocation never leaves a truncated file behind.
func (a *app) save() error {
	data, err := json.MarshalIndent(a.st, "", "  ")
	if err != nil {
		return fmt.Errorf("encode state: %w", err)
	}
	tmp, err := os.CreateTemp(a.home, ".fake-state-*.json")
	if err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("write state: %w", err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write state: %w", err)
	}
	if err := os.Rename(tmp.Name(), a.statePath()); err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	return nil
}

// box returns the named sandbox or the not-found error.
func (a *app) box(name string) (*Sandbox, error) {
	b := a.st.Sandboxes[name]
	if b == nil {
		return nil, notFound(name)
	}
	return b, nil
}

// sortedBoxes returns the sandboxes newest first (DB id descending).
func (a *app) sortedBoxes() []*Sandbox {
	out := make([]*Sandbox, 0, len(a.st.Sandboxes))
	for _, b := range a.st.Sandboxes {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID > out[j].ID })
	return out
}

func (a *app) touchBox(b *Sandbox) {
	t := a.now
	b.LastActivityAt = &t
	b.UpdatedAt = a.now
}

// addLease records an exec/cp in flight by this process.
func (a *app) addLease(b *Sandbox) Lease {
	l := selfLease()
	b.Execs = append(b.Execs, l)
	return l
}

func (a *app) dropLease(b *Sandbox, l Lease) {
	out := b.Execs[:0]
	for _, e := range b.Execs {
		if e != l {
			out = append(out, e)
		}
	}
	b.Execs = out
}

func selfLease() Lease {
	pid := os.Getpid()
	return Lease{Pid: pid, Start: procStartTime(pid)}
}

// sweep applies the timers and reconciles dead runtimes, as msb's read-time
// reconcile and the per-VM idle/max-duration watchdogs would have done by now.
func (a *app) sweep() {
	for _, b := range a.sortedBoxes() {
		if b.Status != statusRunning {
			continue
		}
		a.pruneLeases(b)
		if status, reason := a.verdict(b); status != "" {
			a.killRuntime(b)
			a.markDown(b, status, reason)
		}
	}
}

// verdict decides whether a Running box must go down now, and to what state.
func (a *app) verdict(b *Sandbox) (status, reason string) {
	switch {
	case a.knobs.matches(knobCrash, b.Name):
		return statusCrashed, "crash knob"
	case !a.runtimeAlive(b) && b.Runtime != nil && b.Runtime.StartupCmd && a.startupFinished(b.Name):
		return statusStopped, "completed"
	case !a.runtimeAlive(b):
		return statusCrashed, "runtime died"
	case expired(b.StartedAt, b.Config.MaxDurationSecs, a.now):
		return statusStopped, "max duration"
	case len(b.Execs) == 0 && expired(b.LastActivityAt, b.Config.IdleTimeoutSecs, a.now):
		return statusStopped, "idle timeout"
	}
	return "", ""
}

func expired(since *time.Time, limit *uint64, now time.Time) bool {
	if since == nil || limit == nil || *limit == 0 {
		return false
	}
	return now.Sub(*since) >= time.Duration(*limit)*time.Second
}

func (a *app) pruneLeases(b *Sandbox) {
	out := b.Execs[:0]
	for _, l := range b.Execs {
		if procAlive(l.Pid, l.Start) {
			out = append(out, l)
		}
	}
	b.Execs = out
}

// markDown records that a box stopped; ephemeral boxes vanish with their VM.
func (a *app) markDown(b *Sandbox, status, reason string) {
	b.Status = status
	b.StopReason = reason
	b.Runtime = nil
	b.Execs = nil
	t := a.now
	b.StoppedAt = &t
	b.UpdatedAt = a.now
	if b.Ephemeral {
		a.deleteBox(b)
	}
}

// deleteBox removes the catalogue row and the box directory.
func (a *app) deleteBox(b *Sandbox) {
	delete(a.st.Sandboxes, b.Name)
	_ = removeTree(a.boxDir(b.Name))
}
