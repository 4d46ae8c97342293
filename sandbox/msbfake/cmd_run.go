package main

import (
	"fmt"
	"strings"
)

// runPlan is what the locked phase of `run` decided.
type runPlan struct {
	name    string
	session *session // attached runs only
}

// cmdRun implements `msb run [OPTIONS] [IMAGE] [-- COMMAND...]`.
func cmdRun(args []string) error {
	p, err := runSpec.parse(args)
	if err != nil {
		return err
	}
	if len(p.pos) > 0 && p.has("from-snapshot") {
		return usageErr("run", "the argument '[IMAGE]' cannot be used with '--from-snapshot <PATH_OR_NAME>'")
	}
	o, err := parseSandboxOpts(p)
	if err != nil {
		return err
	}
	f, err := parseExecFlags(p)
	if err != nil {
		return err
	}
	if o.image == "" && !p.has("from-snapshot") {
		return fmt.Errorf("invalid config: no image specified (pass IMAGE, --from-snapshot or set `image` in --conf)")
	}
	if p.has("from-snapshot") && len(o.cfg.Patches) > 0 {
		return fmt.Errorf("invalid config: patches cannot be combined with from_snapshot")
	}
	a, err := newApp()
	if err != nil {
		return err
	}
	delay, err := a.knobs.execDelay()
	if err != nil {
		return err
	}
	detach := p.has("detach")
	var stdin []byte
	if !detach {
		stdin = readStdin()
	}
	var plan runPlan
	if err := a.locked(func() error { plan, err = a.prepareRun(p, o, detach); return err }); err != nil {
		return err
	}
	if detach {
		fmt.Println(plan.name)
		return nil
	}
	argv := p.command
	if len(argv) == 0 {
		argv = imageCmd
	}
	res, runErr := runInBox(a.home, &plan.session.rt, plan.session.request(f, argv, stdin, delay))
	_ = a.locked(func() error { a.closeSession(plan.session, false); return nil })
	return finishExec(argv, f, res, runErr)
}

// prepareRun runs under the lock: reuse a named sandbox or create one, boot
// it, and for attached runs open an exec session.
func (a *app) prepareRun(p *parsedArgs, o *createOpts, detach bool) (runPlan, error) {
	if o.name != "" && !o.replace {
		if b := a.st.Sandboxes[o.name]; b != nil {
			return a.reuse(b, p, o, detach)
		}
	}
	name, err := a.claimName(o)
	if err != nil {
		return runPlan{}, err
	}
	var snap *Snapshot
	if p.has("from-snapshot") {
		if snap, err = a.findSnapshot(p.get("from-snapshot")); err != nil {
			return runPlan{}, err
		}
	}
	b, err := a.createBox(name, o, o.name == "", snap)
	if err != nil {
		return runPlan{}, err
	}
	if detach {
		startup := p.command
		if len(startup) == 0 {
			startup = imageCmd
		}
		b.Config.Cmd = append([]string{}, startup...)
		return runPlan{name: name}, a.boot(b, startup)
	}
	b.Config.Cmd = append([]string{}, p.command...)
	if err := a.boot(b, nil); err != nil {
		return runPlan{}, err
	}
	s, err := a.openSession(name)
	if err != nil {
		return runPlan{}, err
	}
	s.started = true // the attached run owns the lifecycle of the box it booted
	return runPlan{name: name, session: s}, nil
}

// reuse implements `run --name X` for an existing X: no error, creation flags
// ignored with a warning, a stopped box is started.
func (a *app) reuse(b *Sandbox, p *parsedArgs, o *createOpts, detach bool) (runPlan, error) {
	var ignored []string
	if p.has("from-snapshot") {
		ignored = append(ignored, "--from-snapshot")
	}
	if len(o.creationFlags) > 0 {
		ignored = append(ignored, "creation flags")
	}
	if len(ignored) > 0 {
		warnf("sandbox '%s' already exists; %s ignored (use --replace to recreate)", b.Name, strings.Join(ignored, " and "))
	}
	if detach {
		if len(p.command) > 0 {
			warnf("command after -- is not applied when reusing existing sandbox '%s' in --detach mode (use `msb exec %s -- ...`)", b.Name, b.Name)
		}
		if b.Status != statusRunning {
			if err := a.boot(b, nil); err != nil {
				return runPlan{}, err
			}
		}
		return runPlan{name: b.Name}, nil
	}
	s, err := a.openSession(b.Name)
	if err != nil {
		return runPlan{}, err
	}
	return runPlan{name: b.Name, session: s}, nil
}
