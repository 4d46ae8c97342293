package sandbox

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/asb-dev/asb/sandbox/sshtest"
)

// BenchmarkExecRoundTrip measures one `true` per iteration against the
// same real sshd, the way asb would run it:
//
//   - xcrypto-persistent: SSHTransport, one x/crypto/ssh connection held
//     open, one session per command (what asb uses);
//   - baseline-openssh-controlmaster: one `ssh` client process per command
//     over an OpenSSH ControlMaster socket (what the original implementation
//     did; the "baseline" prefix makes asb-bench compare its siblings with it);
//   - local-exec: LocalTransport, for scale (no SSH at all).
//
// Each reports its median as median-ms (less sensitive than ns/op to the
// odd slow fork); the ControlMaster baseline also reports its median divided
// by xcrypto-persistent's (x-xcrypto-median), and with -v the parent logs
// all medians and the ratio in one line.
// Run: go test ./sandbox/ -run '^$' -bench ExecRoundTrip -benchtime 300x
func BenchmarkExecRoundTrip(b *testing.B) {
	d := sshtest.StartSSHD(b, sshtest.SSHDOptions{})
	var mu sync.Mutex
	medians := map[string]time.Duration{}
	record := func(b *testing.B, name string, durs []time.Duration) {
		m := medianDuration(durs)
		b.ReportMetric(float64(m)/float64(time.Millisecond), "median-ms")
		mu.Lock()
		medians[name] = m // the last (largest-N) run of a sub-benchmark wins
		mu.Unlock()
	}

	b.Run("xcrypto-persistent", func(b *testing.B) {
		tr, err := NewSSHTransport(SSHConfig{
			User: d.User, Addr: d.Addr, KeyFile: d.ClientKey.File, KnownHostsFile: d.KnownHostsFile,
		})
		if err != nil {
			b.Fatal(err)
		}
		defer tr.Close()
		ctx := context.Background()
		cmd := Command{Argv: []string{"true"}}
		if _, err := tr.Run(ctx, cmd); err != nil { // connect outside the timing
			b.Fatal(err)
		}
		durs := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for range b.N {
			start := time.Now()
			res, err := tr.Run(ctx, cmd)
			durs = append(durs, time.Since(start))
			if err != nil || res.ExitCode != 0 {
				b.Fatalf("%+v %v", res, err)
			}
		}
		b.StopTimer()
		record(b, "xcrypto", durs)
	})

	b.Run("baseline-openssh-controlmaster", func(b *testing.B) {
		sshBin, err := exec.LookPath("ssh")
		if err != nil {
			b.Skip("no ssh client (apt-get install openssh-client)")
		}
		// Unix socket paths are limited to ~104 bytes: keep the directory short.
		dir, err := os.MkdirTemp("/tmp", "asbcm")
		if err != nil {
			b.Fatal(err)
		}
		defer os.RemoveAll(dir)
		opts := []string{
			"-F", "/dev/null",
			"-o", "ControlMaster=auto",
			"-o", "ControlPath=" + dir + "/%C",
			"-o", "ControlPersist=60",
			"-o", "BatchMode=yes",
			"-o", "StrictHostKeyChecking=yes",
			"-o", "UserKnownHostsFile=" + d.KnownHostsFile,
			"-o", "GlobalKnownHostsFile=/dev/null",
			"-o", "IdentitiesOnly=yes",
			"-i", d.ClientKey.File,
			"-p", strconv.Itoa(d.Port),
			"-l", d.User,
		}
		sshRun := func(extra ...string) error {
			args := append(append(slices.Clone(opts), extra...), d.Host, "true")
			c := exec.Command(sshBin, args...)
			return c.Run()
		}
		if err := sshRun(); err != nil { // starts the master outside the timing
			b.Fatalf("ssh: %v", err)
		}
		// Stop the background master this benchmark started.
		defer func() { _ = exec.Command(sshBin, append(slices.Clone(opts), "-O", "exit", d.Host)...).Run() }()
		durs := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for range b.N {
			start := time.Now()
			err := sshRun()
			durs = append(durs, time.Since(start))
			if err != nil {
				b.Fatalf("ssh: %v", err)
			}
		}
		b.StopTimer()
		record(b, "controlmaster", durs)
		// The ratio on this line too: sub-benchmark lines are printed
		// without -v, the parent's log is not.
		mu.Lock()
		if x := medians["xcrypto"]; x > 0 {
			b.ReportMetric(float64(medians["controlmaster"])/float64(x), "x-xcrypto-median")
		}
		mu.Unlock()
	})

	b.Run("local-exec", func(b *testing.B) {
		tr := NewLocalTransport(nil)
		ctx := context.Background()
		durs := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for range b.N {
			start := time.Now()
			if _, err := tr.Run(ctx, Command{Argv: []string{"true"}}); err != nil {
				b.Fatal(err)
			}
			durs = append(durs, time.Since(start))
		}
		b.StopTimer()
		record(b, "local", durs)
	})

	mu.Lock()
	defer mu.Unlock()
	x, cm := medians["xcrypto"], medians["controlmaster"]
	if x > 0 && cm > 0 {
		b.Logf("median per `true`: x/crypto persistent %v, ssh+ControlMaster %v (%.2fx), local exec %v",
			x.Round(10*time.Microsecond), cm.Round(10*time.Microsecond), float64(cm)/float64(x),
			medians["local"].Round(10*time.Microsecond))
	}
}

func medianDuration(durs []time.Duration) time.Duration {
	if len(durs) == 0 {
		return 0
	}
	s := slices.Clone(durs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
