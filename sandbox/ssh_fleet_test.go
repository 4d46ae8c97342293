package sandbox_test

import (
	"fmt"
	"testing"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/apptest"
	"github.com/asb-dev/asb/sandbox"
	"github.com/asb-dev/asb/sandbox/msbtest"
	"github.com/asb-dev/asb/sandbox/sshtest"
)

// sshHost is a real sshd on loopback whose msb is a fresh fake host.
type sshHost struct {
	sshd *sshtest.SSHD
	fake *msbtest.Host
	t    *sandbox.SSHTransport
}

func newSSHHost(t *testing.T) sshHost {
	t.Helper()
	sshd := sshtest.StartSSHD(t, sshtest.SSHDOptions{})
	fake := msbtest.New(t, "node")
	fake.GiveTo(t, sshd.User)
	tr, err := sandbox.NewSSHTransport(sandbox.SSHConfig{User: sshd.User, Addr: sshd.Addr, Signer: sshd.ClientKey.Signer, KnownHostsFile: sshd.KnownHostsFile})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return sshHost{sshd: sshd, fake: fake, t: tr}
}

func (h sshHost) name() string { return "ssh://" + h.sshd.User + "@" + h.sshd.Addr }

func TestMSBOverRealSSHD(t *testing.T) {
	h := newSSHHost(t)
	m := sandbox.NewMSB(h.t, h.fake.Path)
	if v, err := m.Version(bg); err != nil || v != "msb 0.6.9" {
		t.Fatalf("version over ssh: %q %v", v, err)
	}
	if err := m.Run(bg, sandbox.RunSpec{Name: "asb-s-ssh", Image: "node"}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Exec(bg, "asb-s-ssh", sandbox.ExecSpec{}, "mkdir", "-p", "/workspace"); err != nil {
		t.Fatal(err)
	}
	checkRoundTrip(t, m, h.fake, "asb-s-ssh")
	list, err := m.List(bg)
	if err != nil || len(list) != 1 || !list[0].Running() {
		t.Fatalf("ls over ssh: %+v %v", list, err)
	}
	if err := m.Remove(bg, "asb-s-ssh"); err != nil {
		t.Fatal(err)
	}
}

func TestPlacementOverThreeSSHHosts(t *testing.T) {
	hosts := []sshHost{newSSHHost(t), newSSHHost(t), newSSHHost(t)}
	store := apptest.NewMemStore()
	var specs []sandbox.HostSpec
	for i, h := range hosts {
		specs = append(specs, sandbox.HostSpec{Name: h.name(), Transport: h.t, MSBPath: h.fake.Path, MaxBoxes: i + 1})
	}
	f, err := sandbox.NewFleet(sandbox.FleetConfig{Hosts: specs, Defaults: defaults(), Store: store})
	if err != nil {
		t.Fatal(err)
	}
	place := func(id string) (app.BoxRef, error) {
		addSession(t, store, app.SessionID(id))
		return f.EnsureBox(bg, app.BoxSpec{Session: app.SessionID(id)})
	}
	for i := 0; i < 3; i++ {
		if _, err := place(fmt.Sprintf("ses_s%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	// The roomiest host (capacity 3) takes boxes first, then the next.
	if n := len(hosts[2].fake.Boxes()); n < 1 {
		t.Fatalf("host with the most room got %d boxes", n)
	}
	// Take the third host down: sshd stops answering.
	hosts[2].sshd.Stop()
	f.Probe(bg)
	hs, _ := f.Hosts(bg)
	if hs[2].Healthy || hs[2].Problem == "" {
		t.Fatalf("stopped sshd reported healthy: %+v", hs[2])
	}
	before := len(hosts[2].fake.Boxes())
	for i := 3; i < 6; i++ {
		box, err := place(fmt.Sprintf("ses_s%d", i))
		if err != nil {
			break // the live hosts are full
		}
		if box.Host == hosts[2].name() {
			t.Fatalf("a box went to the host that is down")
		}
	}
	if got := len(hosts[2].fake.Boxes()); got != before {
		t.Fatalf("down host's boxes changed: %d → %d", before, got)
	}
	if len(hosts[0].fake.Boxes()) > 1 || len(hosts[1].fake.Boxes()) > 2 {
		t.Fatalf("capacity exceeded: %d/1 and %d/2", len(hosts[0].fake.Boxes()), len(hosts[1].fake.Boxes()))
	}
}
