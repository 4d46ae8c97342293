package main

import (
	"fmt"
	"sort"
	"strings"
)

// bulkOp is one of the NAMES... commands (stop/start/restart/rm/touch/ping).
type bulkOp struct {
	spec   cmdSpec
	notice bool // print the 0.6.9 backend notice first
	// quietNotFound hides `sandbox not found` under -q (rm only); the exit
	// code stays 1.
	quietNotFound bool
	apply         func(a *app, b *Sandbox, p *parsedArgs) error
}

// runBulk processes each name in order, printing per-name errors, and exits
// 1 if any failed.
func runBulk(op bulkOp, args []string) error {
	p, err := op.spec.parse(args)
	if err != nil {
		return err
	}
	if len(p.pos) == 0 && !p.has("label") {
		return fmt.Errorf("specify one or more sandbox names or --label selectors")
	}
	if op.spec.name == "stop" || op.spec.name == "restart" {
		if _, err := clapUint(p, "timeout", "TIMEOUT", 64, 10); err != nil {
			return err
		}
	}
	a, err := newApp()
	if err != nil {
		return err
	}
	if op.notice {
		backendNotice()
	}
	failed := false
	err = a.locked(func() error {
		for _, name := range a.selectNames(p) {
			b := a.st.Sandboxes[name]
			var err error
			if b == nil {
				err = notFound(name)
				if op.quietNotFound && p.has("quiet") {
					failed = true
					continue
				}
			} else {
				err = op.apply(a, b, p)
			}
			if err != nil {
				failed = true
				reportError(err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if failed {
		return exitCode(1)
	}
	return nil
}

// selectNames unions the given names with the --label matches (AND-matched).
func (a *app) selectNames(p *parsedArgs) []string {
	names := append([]string{}, p.pos...)
	seen := map[string]bool{}
	for _, n := range names {
		seen[n] = true
	}
	if p.has("label") {
		var matched []string
		for _, b := range a.st.Sandboxes {
			if matchLabels(b, p.all("label")) && !seen[b.Name] {
				matched = append(matched, b.Name)
			}
		}
		sort.Strings(matched)
		names = append(names, matched...)
	}
	return names
}

func matchLabels(b *Sandbox, selectors []string) bool {
	for _, sel := range selectors {
		k, v, hasV := strings.Cut(sel, "=")
		got, ok := b.Config.Labels[k]
		if !ok || hasV && got != v {
			return false
		}
	}
	return true
}

func done(p *parsedArgs, label, name string) {
	if !p.has("quiet") {
		progressLine("✓", label, name)
	}
}

// stopBox is idempotent: Stopped and Crashed boxes succeed.
func (a *app) stopBox(b *Sandbox) {
	if b.Status == statusRunning {
		a.killRuntime(b)
		a.markDown(b, statusStopped, "stopped")
	}
}

var stopOp = bulkOp{spec: stopSpec, apply: func(a *app, b *Sandbox, p *parsedArgs) error {
	name := b.Name
	a.stopBox(b)
	done(p, "Stopped", name)
	return nil
}}

var startOp = bulkOp{spec: startSpec, apply: func(a *app, b *Sandbox, p *parsedArgs) error {
	if b.Status == statusRunning {
		return fmt.Errorf("sandbox still running: cannot start sandbox '%s': already running", b.Name)
	}
	if err := a.boot(b, nil); err != nil {
		return err
	}
	done(p, "Started", b.Name)
	return nil
}}

var restartOp = bulkOp{spec: restartSpec, apply: func(a *app, b *Sandbox, p *parsedArgs) error {
	name := b.Name
	if b.Status == statusRunning {
		a.killRuntime(b)
		a.markDown(b, statusStopped, "restart")
		if a.st.Sandboxes[name] == nil {
			return notFound(name) // an ephemeral box is gone once stopped
		}
	}
	if err := a.boot(b, nil); err != nil {
		return err
	}
	done(p, "Restarted", name)
	return nil
}}

var removeOp = bulkOp{spec: removeSpec, notice: true, quietNotFound: true, apply: func(a *app, b *Sandbox, p *parsedArgs) error {
	if b.Status == statusRunning {
		if !p.has("force") {
			return fmt.Errorf("sandbox still running: cannot remove sandbox '%s': still running", b.Name)
		}
		a.killRuntime(b)
	}
	a.deleteBox(b)
	done(p, "Removed", b.Name)
	return nil
}}

var touchOp = bulkOp{spec: touchSpec, apply: func(a *app, b *Sandbox, p *parsedArgs) error {
	if b.Status != statusRunning {
		return fmt.Errorf("sandbox '%s' is not running", b.Name)
	}
	a.touchBox(b)
	done(p, "Touched", b.Name)
	return nil
}}

var pingOp = bulkOp{spec: pingSpec, apply: func(a *app, b *Sandbox, p *parsedArgs) error {
	if b.Status != statusRunning {
		return fmt.Errorf("sandbox '%s' is not running", b.Name)
	}
	if p.has("touch") {
		a.touchBox(b)
	}
	done(p, "Reachable", b.Name)
	return nil
}}
