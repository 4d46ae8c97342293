package main

import (
	"fmt"
	"os"
	"path"
	"time"
)

// session is an exec or cp in flight against one box. It holds a lease so
// the idle timer cannot fire, and remembers whether this invocation booted
// the box (then it "owns the lifecycle" and stops it again).
type session struct {
	name    string
	started bool
	lease   Lease
	rt      Runtime
	box     Sandbox // copy taken at open, for env/workdir/user
}

// openSession must run under the state lock. A Stopped or Crashed box is
// booted idle, like resolve_and_start.
func (a *app) openSession(name string) (*session, error) {
	b, err := a.box(name)
	if err != nil {
		return nil, err
	}
	s := &session{name: name}
	if b.Status != statusRunning {
		if err := a.boot(b, nil); err != nil {
			return nil, err
		}
		if b.Status != statusRunning {
			return nil, fmt.Errorf("sandbox '%s' stopped while starting", name)
		}
		s.started = true
	}
	s.lease = a.addLease(b)
	a.touchBox(b)
	s.rt, s.box = *b.Runtime, *b
	return s, nil
}

// closeSession must run under the state lock. keepRunning reproduces the
// 0.6.9 bug where a failed exec leaves a temporarily started box running
// (fixed in 0.6.13, #1424).
func (a *app) closeSession(s *session, keepRunning bool) {
	b := a.st.Sandboxes[s.name]
	if b == nil {
		return
	}
	a.dropLease(b, s.lease)
	if b.Status != statusRunning {
		return
	}
	a.touchBox(b)
	if s.started && !keepRunning && len(b.Execs) == 0 {
		a.killRuntime(b)
		a.markDown(b, statusStopped, "lifecycle owner finished")
	}
}

// execFlags are the per-command options shared by exec and attached run.
type execFlags struct {
	env     []EnvVar
	workdir string
	user    string
	timeout time.Duration
	tty     bool
	stream  bool
}

func parseExecFlags(p *parsedArgs) (execFlags, error) {
	f := execFlags{workdir: p.get("workdir"), user: p.get("user"), tty: p.has("tty"), stream: p.has("stream")}
	for _, e := range p.all("env") {
		v, err := parseEnvFlag(e)
		if err != nil {
			return f, err
		}
		f.env = append(f.env, v)
	}
	if p.has("timeout") {
		secs, err := parseDurationSecs(p.get("timeout"))
		if err != nil {
			return f, err
		}
		f.timeout = time.Duration(secs) * time.Second
	}
	for _, r := range p.all("rlimit") {
		if err := parseRlimit(r); err != nil {
			return f, err
		}
	}
	return f, nil
}

// request builds the guest command for a session.
func (s *session) request(f execFlags, argv []string, stdin []byte, delay time.Duration) execRequest {
	wd := f.workdir
	if wd == "" {
		wd = s.box.Config.Workdir
	}
	if wd == "" {
		wd = "/"
	}
	if !path.IsAbs(wd) {
		wd = path.Join("/", wd)
	}
	user := f.user
	if user == "" {
		user = s.box.Config.User
	}
	return execRequest{argv: argv, env: guestEnv(&s.box, user, f.env), workdir: wd, user: user, stdin: stdin,
		tty: f.tty, stream: f.stream, timeout: f.timeout, delay: delay}
}

// cmdExec implements `msb exec [OPTIONS] NAME -- COMMAND...`.
func cmdExec(args []string) error {
	p, err := execSpec.parse(args)
	if err != nil {
		return err
	}
	if len(p.pos) == 0 {
		return usageErr("exec", "the following required arguments were not provided:\n  <NAME>")
	}
	name := p.pos[0]
	f, err := parseExecFlags(p)
	if err != nil {
		return err
	}
	if f.stream && isTerminal(0) {
		return fmt.Errorf("`--stream` requires piped (non-terminal) stdin; use `--tty` for an interactive terminal session")
	}
	argv := p.command
	if len(argv) == 0 {
		argv = imageCmd
	}
	a, err := newApp()
	if err != nil {
		return err
	}
	delay, err := a.knobs.execDelay()
	if err != nil {
		return err
	}
	backendNotice()
	var stdin []byte
	if !f.stream {
		stdin = readStdin()
	}
	var s *session
	if err := a.locked(func() error { s, err = a.openSession(name); return err }); err != nil {
		return err
	}
	res, runErr := runInBox(a.home, &s.rt, s.request(f, argv, stdin, delay))
	failed := runErr != nil || res.spawn != nil || res.timedOut || res.interrupted
	_ = a.locked(func() error { a.closeSession(s, failed); return nil })
	return finishExec(argv, f, res, runErr)
}

// finishExec prints the buffered output (all stdout, then all stderr) and
// turns the result into msb's exit behaviour.
func finishExec(argv []string, f execFlags, res execResult, runErr error) error {
	switch {
	case runErr != nil:
		return runErr
	case res.interrupted:
		return exitCode(res.code)
	case res.timedOut:
		return fmt.Errorf("exec timed out after %ds", int(f.timeout/time.Second))
	case res.spawn != nil:
		return res.spawn.render(argv[0])
	}
	_, _ = os.Stdout.Write(res.stdout)
	_, _ = os.Stderr.Write(res.stderr)
	if res.code != 0 {
		return exitCode(res.code)
	}
	return nil
}
