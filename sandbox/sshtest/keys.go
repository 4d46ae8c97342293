// Package sshtest provides SSH servers for tests: a real OpenSSH sshd on
// loopback (StartSSHD) and an in-process server on golang.org/x/crypto/ssh
// (NewServer) that can misbehave on demand.
package sshtest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"os"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// Key is a generated ed25519 key pair.
type Key struct {
	Signer ssh.Signer
	// File is the private key in OpenSSH format, mode 0600, usable by
	// sshd (HostKey), ssh (-i) and sandbox.SSHConfig.KeyFile.
	File string
}

// NewKey generates an ed25519 key and writes its private half to file.
func NewKey(tb testing.TB, file string) Key {
	tb.Helper()
	k, err := newKey(file)
	if err != nil {
		tb.Fatalf("sshtest: %v", err)
	}
	return k
}

func newKey(file string) (Key, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return Key{}, fmt.Errorf("generate key: %w", err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return Key{}, fmt.Errorf("signer: %w", err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		return Key{}, fmt.Errorf("marshal key: %w", err)
	}
	if err := os.WriteFile(file, pem.EncodeToMemory(block), 0o600); err != nil {
		return Key{}, fmt.Errorf("write key: %w", err)
	}
	return Key{Signer: signer, File: file}, nil
}

// WriteKnownHosts writes a known_hosts file at path holding one line per
// key for addr (host:port), replacing any previous content.
func WriteKnownHosts(tb testing.TB, path, addr string, keys ...ssh.PublicKey) {
	tb.Helper()
	var data []byte
	for _, k := range keys {
		data = append(data, knownhosts.Line([]string{addr}, k)+"\n"...)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		tb.Fatalf("sshtest: write known_hosts: %v", err)
	}
}
