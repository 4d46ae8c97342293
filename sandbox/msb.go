package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/asb-dev/asb/app"
)

// MSB drives the msb CLI (microsandbox v0.6.9, reference/msb.md) on one
// host through a Transport. Every call is an argv; nothing is ever joined
// into a shell string here (the SSH transport quotes each element once).
// Stdin is always closed unless the caller gives one: msb exec reads stdin
// to EOF before it runs anything.
type MSB struct {
	t    Transport
	path string
}

// NewMSB returns a driver for the msb binary at path on t's host.
func NewMSB(t Transport, path string) *MSB {
	if path == "" {
		path = "msb"
	}
	return &MSB{t: t, path: path}
}

// Host names the host for messages.
func (m *MSB) Host() string { return m.t.String() }

// ErrKind classifies msb failures the orchestrator reacts to.
type ErrKind string

const (
	KindNotFound       ErrKind = "not_found"
	KindAlreadyExists  ErrKind = "already_exists"
	KindStillRunning   ErrKind = "still_running"
	KindImageNotCached ErrKind = "image_not_cached"
	KindExecTimeout    ErrKind = "exec_timeout"
	KindBootFailed     ErrKind = "boot_failed"
	KindExecFailed     ErrKind = "exec_failed"
	KindBadState       ErrKind = "bad_state"
	KindOther          ErrKind = "other"
)

// Error is an msb command that ran and failed.
type Error struct {
	Host string
	// Op is the msb subcommand ("run", "exec", …), never the argv.
	Op   string
	Kind ErrKind
	Exit int
	// Msg is msb's own error line, without the "error: " prefix.
	Msg string
}

func (e *Error) Error() string {
	return fmt.Sprintf("msb %s on %s: %s (exit %d)", e.Op, e.Host, e.Msg, e.Exit)
}

// code maps a failure kind to the core's error codes.
func (k ErrKind) code() string {
	switch k {
	case KindNotFound:
		return app.ENOTFOUND
	case KindAlreadyExists, KindStillRunning, KindBadState:
		return app.ECONFLICT
	case KindImageNotCached, KindExecFailed:
		return app.EINVALID
	case KindExecTimeout, KindBootFailed:
		return app.EUNAVAILABLE
	}
	return app.EINTERNAL
}

// asAppError wraps e in an *app.Error so the core can act on its code and
// show its message, while errors.As still finds the *Error.
func (e *Error) asAppError() error {
	return app.WrapError(e.Kind.code(), e, "%s", e.Error())
}

// IsKind reports whether err is an msb failure of the given kind.
func IsKind(err error, k ErrKind) bool {
	var e *Error
	return errors.As(err, &e) && e.Kind == k
}

var msbErrorLine = regexp.MustCompile(`(?m)^error: (.*)$`)

// classify reads msb's stderr after a non-zero exit. msb prints one
// "error: <message>" line (plus, for boot and exec failures, "→" detail
// lines); the message's prefix says what happened.
func classify(host, op string, exit int, stderr []byte) *Error {
	e := &Error{Host: host, Op: op, Exit: exit, Kind: KindOther}
	if m := msbErrorLine.FindAllSubmatch(stderr, -1); len(m) > 0 {
		e.Msg = string(m[len(m)-1][1])
	} else {
		e.Msg = strings.TrimSpace(firstLine(stderr))
	}
	e.Msg = clipText(e.Msg, 300)
	switch msg := e.Msg; {
	case strings.HasPrefix(msg, "sandbox not found:"):
		e.Kind = KindNotFound
	case strings.HasPrefix(msg, "sandbox already exists:"):
		e.Kind = KindAlreadyExists
	case strings.HasPrefix(msg, "sandbox still running:"):
		e.Kind = KindStillRunning
	case strings.Contains(msg, "image not cached:") || strings.Contains(msg, "is not cached locally"):
		e.Kind = KindImageNotCached
	case strings.HasPrefix(msg, "exec timed out after"):
		e.Kind = KindExecTimeout
	case strings.HasPrefix(msg, "failed to start"):
		e.Kind = KindBootFailed
	case strings.HasPrefix(msg, "failed to exec"):
		e.Kind = KindExecFailed
	case strings.Contains(msg, "cannot be started") || strings.Contains(msg, "cannot start sandbox") || strings.Contains(msg, "is not stopped"):
		e.Kind = KindBadState
	}
	return e
}

func firstLine(b []byte) string {
	s := string(bytes.TrimSpace(b))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// run executes one msb subcommand and turns a non-zero exit into an
// classified error.
func (m *MSB) run(ctx context.Context, op string, args []string, stdin io.Reader) (Result, error) {
	argv := append([]string{m.path}, args...)
	res, err := m.t.Run(ctx, Command{Argv: argv, Stdin: stdin})
	if err != nil {
		return res, err
	}
	if res.ExitCode != 0 {
		return res, classify(m.t.String(), op, res.ExitCode, res.Stderr).asAppError()
	}
	return res, nil
}

// Egress is a box's network policy.
type Egress struct {
	// AllowAll opens egress to the public internet (--net public).
	AllowAll bool
	// Domains are allowed on TCP 443; DNS is always allowed so that the
	// domain rules can resolve.
	Domains []string
}

// Flags renders the policy as msb flags: deny by default with an
// allowlist, or the public profile.
func (e Egress) Flags() []string {
	if e.AllowAll {
		return []string{"--net", "public"}
	}
	flags := []string{"--net-default-egress", "deny", "--net-rule", "allow@dns"}
	for _, d := range e.normalized() {
		flags = append(flags, "--net-rule", "allow@"+d+":tcp:443")
	}
	return flags
}

func (e Egress) normalized() []string {
	out := make([]string, 0, len(e.Domains))
	for _, d := range e.Domains {
		d = strings.ToLower(strings.TrimSpace(d))
		if d != "" && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out
}

// Key identifies the policy: two boxes with the same key have the same egress.
func (e Egress) Key() string {
	if e.AllowAll {
		return "public"
	}
	return "deny+" + strings.Join(e.normalized(), ",")
}

// Covers reports whether a box with policy e satisfies a request for
// policy want: an allowlist box fits only the same allowlist (a box with
// more reach than asked for would widen what the agent can do).
func (e Egress) Covers(want Egress) bool { return e.Key() == want.Key() }

// RunSpec is a long-lived box: `msb run -d --name … -- sleep infinity`.
type RunSpec struct {
	Name string
	// Image boots from an OCI image; Snapshot from a baked snapshot.
	// Exactly one is set.
	Image    string
	Snapshot string
	// MemoryMiB, IdleTimeout and MaxDuration are omitted when zero.
	MemoryMiB   int
	IdleTimeout time.Duration
	MaxDuration time.Duration
	Egress      Egress
	// CopyDir is a folder on the host copied to /workspace before boot
	// (image boots only: msb refuses patches with --from-snapshot).
	CopyDir string
	// Pull is the pull policy; "" means never (images are pre-pulled).
	Pull string
}

// Args renders the spec as msb arguments (after the binary).
func (s RunSpec) Args() ([]string, error) {
	if !ValidBoxName(s.Name) {
		return nil, app.Errorf(app.EINVALID, "box name %q is not a valid msb name", clipText(s.Name, 140))
	}
	if (s.Image == "") == (s.Snapshot == "") {
		return nil, app.Errorf(app.EINVALID, "a box needs exactly one of an image or a snapshot")
	}
	if s.Snapshot != "" && s.CopyDir != "" {
		return nil, app.Errorf(app.EINVALID, "msb cannot copy a folder into a box booted from a snapshot; copy it in after boot")
	}
	pull := s.Pull
	if pull == "" {
		pull = "never"
	}
	args := []string{"run", "-d", "--name", s.Name}
	if s.MemoryMiB > 0 {
		args = append(args, "-m", strconv.Itoa(s.MemoryMiB)+"M")
	}
	args = append(args, s.Egress.Flags()...)
	if s.IdleTimeout > 0 {
		args = append(args, "--idle-timeout", durationArg(s.IdleTimeout))
	}
	if s.MaxDuration > 0 {
		args = append(args, "--max-duration", durationArg(s.MaxDuration))
	}
	args = append(args, "--pull", pull)
	if s.Snapshot != "" {
		args = append(args, "--from-snapshot", s.Snapshot)
	} else {
		if s.CopyDir != "" {
			// -w only on image boots: on a snapshot boot /workspace does not exist yet.
			args = append(args, "-w", "/workspace", "--copy-dir", s.CopyDir+":/workspace")
		}
		args = append(args, s.Image)
	}
	return append(args, "--", "sleep", "infinity"), nil
}

// durationArg renders d in msb's only accepted forms: Ns, Nm or Nh.
func durationArg(d time.Duration) string {
	secs := int64(d.Round(time.Second) / time.Second)
	if secs < 1 {
		secs = 1
	}
	switch {
	case secs%3600 == 0:
		return strconv.FormatInt(secs/3600, 10) + "h"
	case secs%60 == 0:
		return strconv.FormatInt(secs/60, 10) + "m"
	}
	return strconv.FormatInt(secs, 10) + "s"
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

var boxNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// ValidBoxName reports whether name is a valid msb sandbox name.
func ValidBoxName(name string) bool { return boxNameRE.MatchString(name) }

// Run boots a long-lived box. msb reuses an existing box of the same name
// instead of failing, which makes Run idempotent.
func (m *MSB) Run(ctx context.Context, s RunSpec) error {
	args, err := s.Args()
	if err != nil {
		return err
	}
	_, err = m.run(ctx, "run", args, nil)
	return err
}

// ExecSpec tunes one exec.
type ExecSpec struct {
	// Workdir is the command's working directory in the box.
	Workdir string
	// Timeout makes msb kill the guest command (msb --timeout).
	Timeout time.Duration
	// Env sets non-secret variables (they travel in argv). Secrets go in
	// through Stdin instead.
	Env map[string]string
	// Stdin, Stdout and Stderr as in Command.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	MaxOutput      int
}

// Exec runs argv in the box, directly (no shell unless argv[0] is one),
// and returns the guest's exit code in the Result. msb's own failures
// (no such box, spawn failure, timeout) are errors.
func (m *MSB) Exec(ctx context.Context, name string, spec ExecSpec, argv ...string) (Result, error) {
	if !ValidBoxName(name) {
		return Result{}, app.Errorf(app.EINVALID, "box name %q is not a valid msb name", clipText(name, 140))
	}
	if len(argv) == 0 {
		return Result{}, app.Errorf(app.EINVALID, "exec needs a command")
	}
	args := []string{"exec"}
	if spec.Workdir != "" {
		args = append(args, "-w", spec.Workdir)
	}
	if spec.Timeout > 0 {
		args = append(args, "--timeout", durationArg(spec.Timeout))
	}
	keys := make([]string, 0, len(spec.Env))
	for k := range spec.Env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !envNameRE.MatchString(k) || strings.HasPrefix(k, "MSB_") {
			return Result{}, app.Errorf(app.EINVALID, "environment variable name %q is not allowed", clipText(k, 64))
		}
		args = append(args, "-e", k+"="+spec.Env[k])
	}
	args = append(args, name, "--")
	args = append(args, argv...)
	cmd := Command{Argv: append([]string{m.path}, args...), Stdin: spec.Stdin, Stdout: spec.Stdout, Stderr: spec.Stderr, MaxOutput: spec.MaxOutput}
	res, err := m.t.Run(ctx, cmd)
	if err != nil {
		return res, err
	}
	if res.ExitCode == 1 || res.ExitCode == 126 || res.ExitCode == 127 {
		// msb's own failures exit 1 (or 126/127 for spawn failures) with an
		// "error:" line; a guest exiting 1 prints whatever it likes. Only
		// msb's known messages are treated as msb failures.
		if e := classify(m.t.String(), "exec", res.ExitCode, res.Stderr); e.Kind != KindOther {
			return res, e.asAppError()
		}
	}
	return res, nil
}

// CopyIn copies a host file or folder into the box (msb cp SRC NAME:DST).
// As msb.md §2.6 says, a folder lands inside DST when DST exists.
func (m *MSB) CopyIn(ctx context.Context, hostPath, name, guestPath string) error {
	if err := checkCopyPaths(hostPath, name, guestPath); err != nil {
		return err
	}
	_, err := m.run(ctx, "cp", []string{"cp", hostPath, name + ":" + guestPath}, nil)
	return err
}

// CopyOut copies a file or folder out of the box to the host.
func (m *MSB) CopyOut(ctx context.Context, name, guestPath, hostPath string) error {
	if err := checkCopyPaths(hostPath, name, guestPath); err != nil {
		return err
	}
	_, err := m.run(ctx, "cp", []string{"cp", name + ":" + guestPath, hostPath}, nil)
	return err
}

func checkCopyPaths(hostPath, name, guestPath string) error {
	if !ValidBoxName(name) {
		return app.Errorf(app.EINVALID, "box name %q is not a valid msb name", clipText(name, 140))
	}
	if !strings.HasPrefix(guestPath, "/") || !strings.HasPrefix(hostPath, "/") {
		return app.Errorf(app.EINVALID, "copy paths must be absolute")
	}
	return nil
}

// ListEntry is one row of `msb ls --format json`.
type ListEntry struct {
	Name      string
	Status    string
	CreatedAt time.Time
	Image     string
}

// Running reports whether msb says the box is up.
func (e ListEntry) Running() bool { return e.Status == "Running" || e.Status == "Draining" }

// ParseList parses `msb ls --format json`. It is strict about the shape
// (an array of objects with a name) and tolerant of what msb leaves null.
func ParseList(b []byte) ([]ListEntry, error) {
	var raw []struct {
		Name      string  `json:"name"`
		Status    string  `json:"status"`
		CreatedAt *string `json:"created_at"`
		Image     *string `json:"image"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(b), &raw); err != nil {
		return nil, fmt.Errorf("msb ls output is not a JSON array: %w", err)
	}
	out := make([]ListEntry, 0, len(raw))
	for _, r := range raw {
		if r.Name == "" {
			continue
		}
		e := ListEntry{Name: r.Name, Status: r.Status}
		if r.Image != nil {
			e.Image = *r.Image
		}
		if r.CreatedAt != nil {
			if t, err := time.Parse(time.RFC3339Nano, *r.CreatedAt); err == nil {
				e.CreatedAt = t.UTC()
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// List returns every box on the host, newest first.
func (m *MSB) List(ctx context.Context) ([]ListEntry, error) {
	res, err := m.run(ctx, "ls", []string{"ls", "--format", "json"}, nil)
	if err != nil {
		return nil, err
	}
	list, err := ParseList(res.Stdout)
	if err != nil {
		return nil, app.WrapError(app.EUNAVAILABLE, err, "msb on %s answered ls with something unexpected", m.t.String())
	}
	return list, nil
}

// Metrics is one sample of `msb metrics --format json`.
type Metrics struct {
	Name             string  `json:"name"`
	State            string  `json:"state"`
	CPUPercent       float64 `json:"cpu_percent"`
	MemoryBytes      int64   `json:"memory_bytes"`
	MemoryLimitBytes int64   `json:"memory_limit_bytes"`
	UptimeSecs       float64 `json:"uptime_secs"`
}

// ParseMetrics parses `msb metrics --format json`: an array, or a single
// object when a name was given.
func ParseMetrics(b []byte) ([]Metrics, error) {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '{' {
		var one Metrics
		if err := json.Unmarshal(b, &one); err != nil {
			return nil, fmt.Errorf("msb metrics output: %w", err)
		}
		return []Metrics{one}, nil
	}
	var many []Metrics
	if err := json.Unmarshal(b, &many); err != nil {
		return nil, fmt.Errorf("msb metrics output: %w", err)
	}
	return many, nil
}

// Metrics samples running boxes (all boxes with name "").
func (m *MSB) Metrics(ctx context.Context, name string) ([]Metrics, error) {
	args := []string{"metrics", "--format", "json"}
	if name != "" {
		if !ValidBoxName(name) {
			return nil, app.Errorf(app.EINVALID, "box name %q is not a valid msb name", clipText(name, 140))
		}
		args = append(args, name)
	}
	res, err := m.run(ctx, "metrics", args, nil)
	if err != nil {
		return nil, err
	}
	out, err := ParseMetrics(res.Stdout)
	if err != nil {
		return nil, app.WrapError(app.EUNAVAILABLE, err, "msb on %s answered metrics with something unexpected", m.t.String())
	}
	return out, nil
}

// Start boots a stopped box. A box that is already running is fine.
func (m *MSB) Start(ctx context.Context, name string) error {
	err := m.lifecycle(ctx, "start", name)
	if IsKind(err, KindStillRunning) {
		return nil
	}
	return err
}

// Stop stops a box (idempotent in msb). A missing box is fine.
func (m *MSB) Stop(ctx context.Context, name string) error {
	err := m.lifecycle(ctx, "stop", name)
	if IsKind(err, KindNotFound) {
		return nil
	}
	return err
}

// Remove deletes a box, killing it first. A missing box is fine.
func (m *MSB) Remove(ctx context.Context, name string) error {
	err := m.lifecycle(ctx, "rm", name, "--force")
	if IsKind(err, KindNotFound) {
		return nil
	}
	return err
}

func (m *MSB) lifecycle(ctx context.Context, op, name string, flags ...string) error {
	if !ValidBoxName(name) {
		return app.Errorf(app.EINVALID, "box name %q is not a valid msb name", clipText(name, 140))
	}
	args := append([]string{op}, flags...)
	_, err := m.run(ctx, op, append(args, name), nil)
	return err
}

// SnapshotCreate snapshots a stopped box under a name, replacing an older
// snapshot of that name.
func (m *MSB) SnapshotCreate(ctx context.Context, snapshot, from string) error {
	if !ValidBoxName(snapshot) || !ValidBoxName(from) {
		return app.Errorf(app.EINVALID, "snapshot and box names must be valid msb names")
	}
	_, err := m.run(ctx, "snapshot", []string{"snapshot", "create", snapshot, "--from", from, "--force"}, nil)
	return err
}

// Version returns `msb --version` ("msb 0.6.9").
func (m *MSB) Version(ctx context.Context) (string, error) {
	res, err := m.run(ctx, "--version", []string{"--version"}, nil)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(res.Stdout)), nil
}

// Doctor runs `msb doctor`. It reports msb's findings (stderr) and whether
// the host is ready; a transport failure is an error.
func (m *MSB) Doctor(ctx context.Context) (ok bool, report string, err error) {
	res, err := m.t.Run(ctx, Command{Argv: []string{m.path, "doctor"}})
	if err != nil {
		return false, "", err
	}
	return res.ExitCode == 0, strings.TrimSpace(string(res.Stderr)), nil
}

// ImageCached reports whether an image is in the host's pull cache, so
// that `--pull never` boots work.
func (m *MSB) ImageCached(ctx context.Context, ref string) (bool, error) {
	res, err := m.run(ctx, "image", []string{"image", "ls", "--format", "json"}, nil)
	if err != nil {
		return false, err
	}
	var images []struct {
		Reference string `json:"reference"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(res.Stdout), &images); err != nil {
		return false, app.WrapError(app.EUNAVAILABLE, err, "msb on %s answered image ls with something unexpected", m.t.String())
	}
	want := NormalizeImage(ref)
	for _, im := range images {
		if im.Reference == ref || NormalizeImage(im.Reference) == want {
			return true, nil
		}
	}
	return false, nil
}

// SnapshotExists reports whether a snapshot of that name is on the host.
func (m *MSB) SnapshotExists(ctx context.Context, name string) (bool, error) {
	res, err := m.run(ctx, "snapshot", []string{"snapshot", "ls", "--format", "json"}, nil)
	if err != nil {
		return false, err
	}
	var snaps []struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(res.Stdout), &snaps); err != nil {
		return false, app.WrapError(app.EUNAVAILABLE, err, "msb on %s answered snapshot ls with something unexpected", m.t.String())
	}
	for _, s := range snaps {
		if s.Name == name {
			return true, nil
		}
	}
	return false, nil
}

// NormalizeImage expands a short OCI reference the way registries do:
// "node" → "docker.io/library/node:latest".
func NormalizeImage(ref string) string {
	name, tag := ref, "latest"
	if i := strings.LastIndex(ref, "@"); i >= 0 {
		name, tag = ref[:i], ref[i:]
	} else if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		name, tag = ref[:i], ref[i+1:]
	}
	first, _, hasSlash := strings.Cut(name, "/")
	switch {
	case !hasSlash:
		name = "docker.io/library/" + name
	case !strings.ContainsAny(first, ".:") && first != "localhost":
		name = "docker.io/" + name
	}
	if strings.HasPrefix(tag, "@") {
		return name + tag
	}
	return name + ":" + tag
}
