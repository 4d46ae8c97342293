// Package mcp is asb's Model Context Protocol surface: the tools an IDE's
// agent uses to hand a task to a sandboxed agent and to answer its
// questions, served over stdio or Streamable HTTP.
package mcp

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/asb-dev/asb/app"
)

// DefaultWaitTimeout bounds one blocking call. It stays under the 60 s
// request limit most MCP clients enforce.
const DefaultWaitTimeout = 50 * time.Second

// Options configure NewServer.
type Options struct {
	Service *app.Service
	// WaitTimeout bounds how long delegate, resume and status block
	// (default 50 s; keep it under the client's 60 s request limit).
	WaitTimeout time.Duration
	// ProgressInterval is how often a blocked call sends a progress
	// notification when the client gave a progress token (default 10 s).
	ProgressInterval time.Duration
	Version          string
	Logger           *slog.Logger
	// DefaultActor is the caller when a request carries no bearer token
	// (the stdio entry, which runs as its local operator). Nil means
	// unauthenticated calls are refused.
	DefaultActor *app.Actor
}

type server struct {
	svc      *app.Service
	wait     time.Duration
	progress time.Duration
	log      *slog.Logger
	actor    *app.Actor
}

const instructions = `asb runs coding agents in sandboxed microVMs. Hand a task over with delegate; ` +
	`it BLOCKS until the sandbox agent finishes (run:done) or pauses to ask a question (run:waiting). ` +
	`On run:waiting you MUST answer (from context or by asking your user) and call resume; never end your turn. ` +
	`On run:running call status again at once.`

// NewServer returns an MCP server with asb's tools registered.
func NewServer(o Options) *sdk.Server {
	if o.Service == nil {
		panic("mcp: Options.Service is nil")
	}
	if o.WaitTimeout <= 0 {
		o.WaitTimeout = DefaultWaitTimeout
	}
	if o.ProgressInterval <= 0 {
		o.ProgressInterval = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	s := &server{svc: o.Service, wait: o.WaitTimeout, progress: o.ProgressInterval, log: o.Logger, actor: o.DefaultActor}
	srv := sdk.NewServer(&sdk.Implementation{Name: "asb", Version: o.Version},
		&sdk.ServerOptions{Instructions: instructions, Logger: o.Logger})
	s.register(srv)
	return srv
}

// toolError is a tool failure the calling agent can act on: it names the
// field and says why.
func toolError(field, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if field == "" {
		return fmt.Errorf("%s", msg)
	}
	return fmt.Errorf("invalid %s: %s", field, msg)
}

// coreError turns an error from the Service into a tool error whose text
// is safe to show (internal errors are logged, not shown).
func (s *server) coreError(tool string, err error) error {
	code := app.ErrorCode(err)
	if code == app.EINTERNAL {
		s.log.Error("mcp tool failed", "tool", tool, "err", err)
	}
	msg := app.ErrorMessage(err)
	switch code {
	case app.ENOTFOUND:
		return fmt.Errorf("not found: %s", msg)
	case app.EINVALID, app.ETOOLARGE:
		return fmt.Errorf("invalid input: %s", msg)
	}
	return fmt.Errorf("%s: %s", code, msg)
}

// withActor attaches the caller to ctx: the bearer token's identity over
// HTTP, else the default actor (stdio).
func (s *server) withActor(ctx context.Context, req *sdk.CallToolRequest) (context.Context, error) {
	if req != nil && req.Extra != nil && req.Extra.TokenInfo != nil {
		if a, ok := actorFromTokenInfo(req.Extra.TokenInfo); ok {
			return app.WithActor(ctx, a), nil
		}
	}
	if a, ok := app.ActorFrom(ctx); ok {
		return app.WithActor(ctx, a), nil
	}
	if s.actor != nil && s.actor.Account != "" {
		return app.WithActor(ctx, *s.actor), nil
	}
	return ctx, fmt.Errorf("unauthorized: no caller identity")
}

func parseSession(s string) (app.SessionID, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", toolError("session", "it is empty; pass the session id (ses_…) that delegate returned")
	}
	id, err := app.ParseSessionID(s)
	if err != nil {
		return "", toolError("session", "%s", app.ErrorMessage(err))
	}
	return id, nil
}

// textResult is a normal (non-error) result with one text block.
func textResult(text string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}
}
