package app

import (
	"context"
	"crypto/sha256"
	"time"
)

// Lifetimes of a signed-in browser: it ends after DeviceIdleTTL without a
// request, and after DeviceMaxTTL in any case.
const (
	DeviceIdleTTL = 12 * time.Hour
	DeviceMaxTTL  = 7 * 24 * time.Hour
	// maxDevices bounds live devices per account; the oldest is signed out.
	maxDevices       = 20
	seenGranularity  = time.Minute
	maxDeviceCookie  = 100
	maxUserAgentText = 200
)

// Device is a signed-in browser. Its cookie is stored only as a digest.
type Device struct {
	ID        string    `json:"id"`
	Account   AccountID `json:"account"`
	UserAgent string    `json:"user_agent,omitempty"`
	ClientIP  string    `json:"client_ip,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	SeenAt    time.Time `json:"seen_at"`
	RevokedAt time.Time `json:"revoked_at,omitzero"`
}

func (d Device) live(now time.Time) bool {
	return d.RevokedAt.IsZero() && now.Sub(d.SeenAt) <= DeviceIdleTTL && now.Sub(d.CreatedAt) <= DeviceMaxTTL
}

func deviceDigest(cookie string) []byte {
	d := sha256.Sum256([]byte("device:" + cookie))
	return d[:]
}

// StartDevice signs the caller's browser in: it returns the cookie value
// (shown to the browser only) and the device record.
func (s *Service) StartDevice(ctx context.Context, userAgent, client string) (string, Device, error) {
	a, err := s.actor(ctx)
	if err != nil {
		return "", Device{}, err
	}
	cookie := newSecret("")
	now := s.clock.Now()
	d := Device{ID: randomID("dev_"), Account: a.Account, UserAgent: clip(oneLine(userAgent), maxUserAgentText),
		ClientIP: clip(client, 64), CreatedAt: now, SeenAt: now}
	err = s.store.Tx(ctx, func(tx Tx) error {
		list, err := tx.ListDevices(a.Account)
		if err != nil {
			return err
		}
		live := 0
		for _, o := range list { // newest first: sign out the oldest beyond the cap
			if !o.live(now) {
				continue
			}
			if live++; live >= maxDevices {
				o.RevokedAt = now
				if err := tx.UpdateDevice(&o); err != nil {
					return err
				}
			}
		}
		return tx.InsertDevice(&d, deviceDigest(cookie))
	})
	if err != nil {
		return "", Device{}, err
	}
	return cookie, d, nil
}

// DeviceActor returns the actor a browser's cookie signs in as. A
// revoked, expired or unknown cookie, or a disabled account, is
// EUNAUTHORIZED — on the very next request after a revocation.
func (s *Service) DeviceActor(ctx context.Context, cookie string) (Actor, Device, error) {
	bad := Errorf(EUNAUTHORIZED, "sign in again")
	if cookie == "" || len(cookie) > maxDeviceCookie {
		return Actor{}, Device{}, bad
	}
	var d Device
	var acct Account
	err := s.store.View(ctx, func(tx Tx) error {
		var err error
		if d, err = tx.DeviceByDigest(deviceDigest(cookie)); err != nil {
			return err
		}
		acct, err = tx.GetAccount(d.Account)
		return err
	})
	if ErrorCode(err) == ENOTFOUND {
		return Actor{}, Device{}, bad
	}
	if err != nil {
		return Actor{}, Device{}, err
	}
	now := s.clock.Now()
	if !d.live(now) || acct.Disabled {
		return Actor{}, Device{}, bad
	}
	if now.Sub(d.SeenAt) >= seenGranularity {
		d.SeenAt = now
		if err := s.store.Tx(ctx, func(tx Tx) error { return tx.UpdateDevice(&d) }); err != nil {
			s.log.Warn("record device use", "device", d.ID, "err", err)
		}
	}
	return actorOf(acct), d, nil
}

// Devices lists the caller's signed-in browsers, newest first.
func (s *Service) Devices(ctx context.Context) ([]Device, error) {
	a, err := s.actor(ctx)
	if err != nil {
		return nil, err
	}
	now := s.clock.Now()
	var out []Device
	err = s.store.View(ctx, func(tx Tx) error {
		list, err := tx.ListDevices(a.Account)
		for _, d := range list {
			if d.live(now) {
				out = append(out, d)
			}
		}
		return err
	})
	return out, err
}

// RevokeDevice signs one of the caller's browsers out.
func (s *Service) RevokeDevice(ctx context.Context, id string) error {
	a, err := s.actor(ctx)
	if err != nil {
		return err
	}
	if !validID(id, "dev_") {
		return Errorf(EINVALID, "device id must look like dev_ followed by lowercase letters or digits")
	}
	now := s.clock.Now()
	return s.store.Tx(ctx, func(tx Tx) error {
		list, err := tx.ListDevices(a.Account)
		if err != nil {
			return err
		}
		for _, d := range list {
			if d.ID != id {
				continue
			}
			if !d.RevokedAt.IsZero() {
				return nil
			}
			d.RevokedAt = now
			if err := tx.UpdateDevice(&d); err != nil {
				return err
			}
			return tx.AppendAudit(AuditEntry{At: now, Actor: a.Name, Action: "device.revoke", Target: id})
		}
		return Errorf(ENOTFOUND, "device %s not found", id)
	})
}

// EndDevice signs a browser out by its cookie (sign out).
func (s *Service) EndDevice(ctx context.Context, cookie string) error {
	if cookie == "" || len(cookie) > maxDeviceCookie {
		return nil
	}
	now := s.clock.Now()
	err := s.store.Tx(ctx, func(tx Tx) error {
		d, err := tx.DeviceByDigest(deviceDigest(cookie))
		if err != nil {
			return err
		}
		if d.RevokedAt.IsZero() {
			d.RevokedAt = now
			return tx.UpdateDevice(&d)
		}
		return nil
	})
	if ErrorCode(err) == ENOTFOUND {
		return nil
	}
	return err
}
