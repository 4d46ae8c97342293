package app

import "context"

// Actor is who is calling the Service. Surfaces authenticate the caller
// and attach an Actor to the context; the Service enforces ownership in one
// place (see Service.visible).
type Actor struct {
	Account AccountID
	// Name is for logs and the audit trail (a username, a GitHub login, "operator").
	Name string
	// Operator is the break-glass root identity (the operator token).
	Operator bool
	Admin    bool
}

// OperatorActor is the identity of the operator token.
var OperatorActor = Actor{Account: OperatorAccount, Name: "operator", Operator: true}

type actorKey struct{}

// WithActor returns a context that carries the actor.
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// ActorFrom returns the actor in ctx, if any.
func ActorFrom(ctx context.Context) (Actor, bool) {
	a, ok := ctx.Value(actorKey{}).(Actor)
	return a, ok && a.Account != ""
}

// sees reports whether the actor may see objects owned by owner.
func (a Actor) sees(owner AccountID) bool {
	return a.Operator || a.Admin || a.Account == owner
}
