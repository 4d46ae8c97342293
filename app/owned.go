package app

import "context"

// The stored GitHub accounts and MCP servers are both records one owner
// keeps: the caller lists their own (the operator and admins every
// owner's) and removes one they can see, with an audit entry. These
// helpers hold that shape once.

// listOwner is the owner a listing is scoped to: the caller's own
// account, or "" (every owner) for the operator and admins.
func (a Actor) listOwner() AccountID {
	if a.Operator || a.Admin {
		return ""
	}
	return a.Account
}

// listOwned lists the caller's records of one kind with list.
func listOwned[T any](ctx context.Context, s *Service, list func(Tx, AccountID) ([]T, error)) ([]T, error) {
	a, err := s.actor(ctx)
	if err != nil {
		return nil, err
	}
	var out []T
	err = s.store.View(ctx, func(tx Tx) error {
		out, err = list(tx, a.listOwner())
		return err
	})
	return out, err
}

// ownedKind names one kind of owned record for removeOwned.
type ownedKind struct {
	prefix string // the ids' prefix, "gha_"
	badID  string // the error for an id without it
	noun   string // "GitHub account", in the ENOTFOUND error
	action string // the audit action of a removal
}

// removeOwned deletes the record id after checking the caller may see it
// (records they may not are ENOTFOUND) and audits it. get returns the
// record's owner and the audit detail naming it.
func (s *Service) removeOwned(ctx context.Context, k ownedKind, id string,
	get func(Tx, string) (owner AccountID, detail string, err error), del func(Tx, string) error) error {
	a, err := s.actor(ctx)
	if err != nil {
		return err
	}
	if !validID(id, k.prefix) {
		return Errorf(EINVALID, "%s", k.badID)
	}
	return s.store.Tx(ctx, func(tx Tx) error {
		owner, detail, err := get(tx, id)
		if err != nil {
			return err
		}
		if !a.sees(owner) {
			return Errorf(ENOTFOUND, "%s %s not found", k.noun, id)
		}
		if err := del(tx, id); err != nil {
			return err
		}
		return tx.AppendAudit(AuditEntry{At: s.clock.Now(), Actor: a.Name, Action: k.action, Target: id, Detail: detail})
	})
}
