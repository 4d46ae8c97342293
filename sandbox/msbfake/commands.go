package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// commandTable maps every subcommand name and alias to its handler.
var commandTable = map[string]func([]string) error{
	"run":      cmdRun,
	"create":   cmdCreate,
	"exec":     cmdExec,
	"copy":     cmdCopy,
	"cp":       cmdCopy,
	"list":     cmdList,
	"ls":       cmdList,
	"status":   cmdStatus,
	"ps":       cmdStatus,
	"inspect":  cmdInspect,
	"metrics":  cmdMetrics,
	"stop":     func(a []string) error { return runBulk(stopOp, a) },
	"start":    func(a []string) error { return runBulk(startOp, a) },
	"restart":  func(a []string) error { return runBulk(restartOp, a) },
	"remove":   func(a []string) error { return runBulk(removeOp, a) },
	"rm":       func(a []string) error { return runBulk(removeOp, a) },
	"touch":    func(a []string) error { return runBulk(touchOp, a) },
	"ping":     func(a []string) error { return runBulk(pingOp, a) },
	"snapshot": cmdSnapshot,
	"snap":     cmdSnapshot,
	"doctor":   cmdDoctor,
	"check":    cmdDoctor,
	"self":     cmdSelf,
	"pull":     cmdPull,
	"image":    cmdImage,
	"images":   func(a []string) error { return cmdImage(append([]string{"ls"}, a...)) },
	"rmi":      func(a []string) error { return cmdImage(append([]string{"rm"}, a...)) },
	"context":  cmdContext,
	"ctx":      cmdContext,
}

// dispatch skips global flags, then runs the subcommand.
func dispatch(args []string) error {
	i := 0
	for i < len(args) && isGlobalFlag(args[i]) {
		if args[i] == "--tree" {
			fmt.Print(commandTree())
			return nil
		}
		i++
	}
	if i == len(args) {
		fmt.Fprint(os.Stderr, helpText())
		return exitCode(2)
	}
	switch args[i] {
	case "--version", "-V":
		fmt.Printf("msb %s\n", msbVersion)
		return nil
	case "--help", "-h", "help":
		fmt.Print(helpText())
		return nil
	}
	handler := commandTable[args[i]]
	if handler == nil {
		return usageErr("", "unrecognized subcommand '%s'", args[i])
	}
	rest := args[i+1:]
	if wantsHelp(rest) {
		fmt.Printf("Usage: msb %s [OPTIONS]\n\nThis is msbfake, a test double of msb %s.\n", args[i], msbVersion)
		return nil
	}
	return handler(rest)
}

func isGlobalFlag(a string) bool {
	for _, f := range globalFlags {
		if a == "--"+f.long {
			return true
		}
	}
	return false
}

func helpText() string {
	return `Usage: msb [OPTIONS] <COMMAND>

Sandboxes:
  run       Create and start a sandbox, then run a command
  create    Create and boot a sandbox without running a command
  exec      Run a command in a sandbox
  copy      Copy files between the host and a sandbox [alias: cp]
  list      List sandboxes [alias: ls]
  status    Show sandbox status [alias: ps]
  inspect   Show sandbox configuration
  metrics   Show sandbox resource usage
  start     Start stopped sandboxes
  stop      Stop sandboxes
  restart   Restart sandboxes
  remove    Remove sandboxes [alias: rm]
  touch     Refresh the idle timer
  ping      Check agent reachability

Images:
  pull      Pull an image
  image     Manage images

Storage:
  snapshot  Manage snapshots [alias: snap]

Installation:
  doctor    Check host setup [alias: check]

Options:
  -h, --help     Print help
  -V, --version  Print version
`
}

func commandTree() string {
	return "msb\n├── run\n├── create\n├── exec\n├── copy\n├── list\n├── status\n├── inspect\n├── metrics\n" +
		"├── start\n├── stop\n├── restart\n├── remove\n├── touch\n├── ping\n├── pull\n├── image\n" +
		"├── snapshot\n└── doctor\n"
}

// cmdSelf implements `msb self doctor` (other self subcommands are not faked).
func cmdSelf(args []string) error {
	if len(args) > 0 && args[0] == "doctor" {
		return cmdDoctor(args[1:])
	}
	return usageErr("self", "unrecognized subcommand '%s'", strings.Join(args, " "))
}

// cmdDoctor reports a healthy host on stderr (exit 0), or a missing
// /dev/kvm (exit 1) when FAKE_MSB_DOCTOR_FAIL is set.
func cmdDoctor(args []string) error {
	if _, err := doctorSpec.parse(args); err != nil {
		return err
	}
	home, err := msbHome()
	if err != nil {
		return err
	}
	k, err := loadKnobs(home)
	if err != nil {
		return err
	}
	self, _ := os.Executable()
	arch := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[runtime.GOARCH]
	if arch == "" {
		arch = runtime.GOARCH
	}
	w := os.Stderr
	fmt.Fprintf(w, "info Platform: Linux %s\n", arch)
	fmt.Fprintf(w, "info Version: v%s\n", msbVersion)
	fmt.Fprintf(w, "info MSB_HOME: %s\n", home)
	progressLine("✓", "msb", self)
	progressLine("✓", "libkrunfw", filepath.Join(home, "lib", "libkrunfw.so"))
	progressLine("✓", "CPU virt", "vmx")
	if k.enabled(knobDoctorFail) {
		progressLine("✗", "KVM device", "/dev/kvm not found")
		fmt.Fprint(w, "error: /dev/kvm is not present\n  hint: enable virtualization (VT-x/AMD-V) in the firmware and load the kvm module\n  fix: sudo modprobe kvm_intel || sudo modprobe kvm_amd\n")
		return exitCode(1)
	}
	progressLine("✓", "KVM device", "/dev/kvm")
	progressLine("✓", "KVM access", "read/write")
	for _, tool := range []string{"bwrap", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			progressLine("!", "Fake runtime", tool+" not found on PATH (boxes cannot boot)")
		}
	}
	fmt.Fprintln(w, "done Host setup is ready.")
	return nil
}

// cmdContext implements `msb context [--format json]`.
func cmdContext(args []string) error {
	p, err := cmdSpec{name: "context", maxPos: 0, flags: []flagSpec{{long: "format", value: "FORMAT"}}}.parse(args)
	if err != nil {
		return err
	}
	if p.has("format") {
		if err := checkFormat(p); err != nil {
			return err
		}
		return printJSON(map[string]string{"kind": "local", "source": "default"})
	}
	fmt.Println("local (default)")
	return nil
}
