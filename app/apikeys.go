package app

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"strings"
	"time"
)

// Prefixes of the secrets asb hands out, so people (and secret scanners)
// recognise them: a personal API key, and a one-time invite.
const (
	KeyPrefix    = "asb_k_"
	InvitePrefix = "asb_i_"
)

// Kinds of APIKey.
const (
	KeyKindKey    = "key"
	KeyKindInvite = "invite"
)

// Limits of API keys.
const (
	MaxAPIKeys  = 50 // live keys per account
	maxKeyName  = 60
	secretChars = 52 // base32 of 32 random bytes
	// InviteTTL is how long an invite can be used.
	InviteTTL = 7 * 24 * time.Hour
	// lastUsedGranularity keeps "last used" cheap: it is written at most
	// this often per key.
	lastUsedGranularity = time.Minute
)

// APIKey describes a personal API key or an invite. The secret itself is
// returned once, at creation, and stored only as its SHA-256 digest.
type APIKey struct {
	ID      string    `json:"id"`
	Account AccountID `json:"account"`
	Name    string    `json:"name"`
	Kind    string    `json:"kind"`
	// Prefix is the start of the secret, enough to tell keys apart.
	Prefix     string    `json:"prefix"`
	CreatedAt  time.Time `json:"created_at"`
	LastUsedAt time.Time `json:"last_used_at,omitzero"`
	RevokedAt  time.Time `json:"revoked_at,omitzero"`
}

// Live reports whether the key still works.
func (k APIKey) Live() bool { return k.RevokedAt.IsZero() }

// newSecret returns prefix + 52 lowercase base32 characters (256 bits).
func newSecret(prefix string) string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return prefix + idEncoding.EncodeToString(b[:])
}

// secretDigest validates a presented secret's shape and returns its
// digest; a malformed secret is simply not valid (nothing is echoed).
func secretDigest(secret, prefix string) ([]byte, bool) {
	rest, ok := strings.CutPrefix(secret, prefix)
	if !ok || len(rest) != secretChars {
		return nil, false
	}
	for _, c := range rest {
		if !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return nil, false
		}
	}
	d := sha256.Sum256([]byte(secret))
	return d[:], true
}

// IsAPIKey reports whether a bearer token looks like a personal API key
// (as opposed to the operator token).
func IsAPIKey(token string) bool { return strings.HasPrefix(token, KeyPrefix) }

// IsInvite reports whether a token looks like an invite.
func IsInvite(token string) bool { return strings.HasPrefix(token, InvitePrefix) }

// CreateAPIKey mints a key for the caller's account and returns it with
// its secret, which is shown this once.
func (s *Service) CreateAPIKey(ctx context.Context, name string) (APIKey, string, error) {
	a, err := s.actor(ctx)
	if err != nil {
		return APIKey{}, "", err
	}
	name = strings.TrimSpace(name)
	if name == "" {
		name = "key"
	}
	if err := CheckText("key name", name, maxKeyName); err != nil {
		return APIKey{}, "", err
	}
	name = oneLine(name)
	secret := newSecret(KeyPrefix)
	digest, _ := secretDigest(secret, KeyPrefix)
	now := s.clock.Now()
	k := APIKey{ID: randomID("key_"), Account: a.Account, Name: name, Kind: KeyKindKey,
		Prefix: secret[:len(KeyPrefix)+6], CreatedAt: now}
	err = s.store.Tx(ctx, func(tx Tx) error {
		keys, err := tx.ListAPIKeys(a.Account)
		if err != nil {
			return err
		}
		live := 0
		for _, o := range keys {
			if o.Kind == KeyKindKey && o.Live() {
				live++
			}
		}
		if live >= MaxAPIKeys {
			return Errorf(ECONFLICT, "at most %d API keys per account; revoke one first", MaxAPIKeys)
		}
		if err := tx.InsertAPIKey(&k, digest); err != nil {
			return err
		}
		return tx.AppendAudit(AuditEntry{At: now, Actor: a.Name, Action: "apikey.create", Target: k.ID, Detail: name})
	})
	if err != nil {
		return APIKey{}, "", err
	}
	return k, secret, nil
}

// APIKeys lists the caller's keys (revoked ones too), newest first.
func (s *Service) APIKeys(ctx context.Context) ([]APIKey, error) {
	a, err := s.actor(ctx)
	if err != nil {
		return nil, err
	}
	var out []APIKey
	err = s.store.View(ctx, func(tx Tx) error {
		all, err := tx.ListAPIKeys(a.Account)
		for _, k := range all {
			if k.Kind == KeyKindKey {
				out = append(out, k)
			}
		}
		return err
	})
	return out, err
}

// RevokeAPIKey revokes one of the caller's keys (any key, for the
// operator and admins). The key fails on its next use.
func (s *Service) RevokeAPIKey(ctx context.Context, id string) error {
	a, err := s.actor(ctx)
	if err != nil {
		return err
	}
	if !validID(id, "key_") {
		return Errorf(EINVALID, "key id must look like key_ followed by lowercase letters or digits")
	}
	now := s.clock.Now()
	return s.store.Tx(ctx, func(tx Tx) error {
		keys, err := tx.ListAPIKeys(a.Account)
		if err != nil {
			return err
		}
		for _, k := range keys {
			if k.ID != id || k.Kind != KeyKindKey {
				continue
			}
			if !k.Live() {
				return nil // revoking twice is fine
			}
			k.RevokedAt = now
			if err := tx.UpdateAPIKey(&k); err != nil {
				return err
			}
			return tx.AppendAudit(AuditEntry{At: now, Actor: a.Name, Action: "apikey.revoke", Target: id})
		}
		return Errorf(ENOTFOUND, "API key %s not found", id)
	})
}

// AuthenticateKey maps a personal API key to its account's actor. A
// revoked key, an unknown key, or a disabled account is EUNAUTHORIZED.
func (s *Service) AuthenticateKey(ctx context.Context, secret string) (Actor, error) {
	bad := Errorf(EUNAUTHORIZED, "the API key is not valid (revoked, unknown or mistyped)")
	digest, ok := secretDigest(secret, KeyPrefix)
	if !ok {
		return Actor{}, bad
	}
	var k APIKey
	var acct Account
	err := s.store.View(ctx, func(tx Tx) error {
		var err error
		if k, err = tx.APIKeyByDigest(digest); err != nil {
			return err
		}
		acct, err = tx.GetAccount(k.Account)
		return err
	})
	if ErrorCode(err) == ENOTFOUND {
		return Actor{}, bad
	}
	if err != nil {
		return Actor{}, err
	}
	if k.Kind != KeyKindKey || !k.Live() || acct.Disabled {
		return Actor{}, bad
	}
	now := s.clock.Now()
	if now.Sub(k.LastUsedAt) >= lastUsedGranularity {
		k.LastUsedAt = now
		if err := s.store.Tx(ctx, func(tx Tx) error { return tx.UpdateAPIKey(&k) }); err != nil {
			s.log.Warn("record API key use", "key", k.ID, "err", err)
		}
	}
	return actorOf(acct), nil
}

// InviteToken issues a one-time token for an account (admins only) and
// revokes earlier unused ones. The holder exchanges it once, at the
// sign-in page, for a session, and then sets a password. It is shown once.
func (s *Service) InviteToken(ctx context.Context, id AccountID) (string, error) {
	a, err := s.requireAdmin(ctx)
	if err != nil {
		return "", err
	}
	secret := newSecret(InvitePrefix)
	digest, _ := secretDigest(secret, InvitePrefix)
	now := s.clock.Now()
	err = s.store.Tx(ctx, func(tx Tx) error {
		acct, err := tx.GetAccount(id)
		if err != nil {
			return err
		}
		if acct.ID == OperatorAccount {
			return Errorf(EINVALID, "the operator signs in with the operator token")
		}
		keys, err := tx.ListAPIKeys(id)
		if err != nil {
			return err
		}
		for _, k := range keys {
			if k.Kind == KeyKindInvite && k.Live() {
				k.RevokedAt = now
				if err := tx.UpdateAPIKey(&k); err != nil {
					return err
				}
			}
		}
		k := APIKey{ID: randomID("key_"), Account: id, Name: "invite", Kind: KeyKindInvite,
			Prefix: secret[:len(InvitePrefix)+6], CreatedAt: now}
		if err := tx.InsertAPIKey(&k, digest); err != nil {
			return err
		}
		return tx.AppendAudit(AuditEntry{At: now, Actor: a.Name, Action: "user.token", Target: acct.Username})
	})
	if err != nil {
		return "", err
	}
	return secret, nil
}

// RedeemInvite exchanges an invite for its account's actor, once.
func (s *Service) RedeemInvite(ctx context.Context, secret string) (Actor, error) {
	bad := Errorf(EUNAUTHORIZED, "the invite is not valid: it was used already, replaced, expired or mistyped; ask an admin for a new one")
	digest, ok := secretDigest(secret, InvitePrefix)
	if !ok {
		return Actor{}, bad
	}
	now := s.clock.Now()
	var acct Account
	err := s.store.Tx(ctx, func(tx Tx) error {
		k, err := tx.APIKeyByDigest(digest)
		if ErrorCode(err) == ENOTFOUND {
			return bad
		}
		if err != nil {
			return err
		}
		if k.Kind != KeyKindInvite || !k.Live() || now.Sub(k.CreatedAt) > InviteTTL {
			return bad
		}
		if acct, err = tx.GetAccount(k.Account); err != nil {
			return err
		}
		if acct.Disabled {
			return bad
		}
		k.RevokedAt, k.LastUsedAt = now, now
		if err := tx.UpdateAPIKey(&k); err != nil {
			return err
		}
		return tx.AppendAudit(AuditEntry{At: now, Actor: acct.Username, Action: "signin.invite"})
	})
	if err != nil {
		return Actor{}, err
	}
	return actorOf(acct), nil
}
