package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	sdkmcp "github.com/modelcontextprotocol/go-sdk/mcp"
)

// BridgeOptions configure a stdio bridge to a controller's /mcp endpoint.
type BridgeOptions struct {
	// Endpoint is the controller's /mcp URL.
	Endpoint string
	// Token is sent as the bearer token on every request.
	Token   string
	Version string
	// Workspace, when set, ships the IDE's working tree with the delegate
	// calls that want it (WORKSPACE_DIR).
	Workspace *WorkspaceUpload
}

// WorkspaceUpload says where and how the bridge uploads a working tree.
type WorkspaceUpload struct {
	// URL is the controller's POST /workspaces.
	URL string
	// Dir is the working tree, for messages.
	Dir string
	// Prepare lists the tree. It is called once per delegation, so every
	// delegation ships the tree as it is at that moment.
	Prepare func(ctx context.Context) (Tree, error)
	// BundleURL is the controller's GET /bundle, where a finished run's
	// commits on the uploaded tree are downloaded from.
	BundleURL string
	// MaxBundleBytes bounds one bundle download (DefaultMaxBundleBytes
	// when zero).
	MaxBundleBytes int64
	// Fetch imports a downloaded bundle's HEAD as the local branch, in the
	// repository of Dir, leaving the checked-out branch and the working
	// tree alone. Nil: the agent's commits are not brought back.
	Fetch func(ctx context.Context, bundle, branch string) error
}

// DefaultMaxBundleBytes bounds a bundle download when MaxBundleBytes is 0.
const DefaultMaxBundleBytes = 256 << 20

// Tree is a listed working tree, ready to stream.
type Tree struct {
	Files int
	// Bytes is the size of the tar stream.
	Bytes int64
	// Write streams the tree as a tar archive.
	Write func(ctx context.Context, w io.Writer) error
}

// Bridge connects to a running controller's Streamable HTTP endpoint and
// returns a local server that offers the same tools, forwarding every call
// and its progress. `asb mcp` serves it on stdio, so an IDE that starts a
// local process uses the same fleet, queue and sessions as every other
// surface, and no second controller ever opens the database.
func Bridge(ctx context.Context, o BridgeOptions) (*sdkmcp.Server, func() error, error) {
	var mu sync.Mutex
	// Progress tokens of calls in flight, keyed by the token sent upstream.
	inflight := map[any]func(*sdkmcp.ProgressNotificationParams){}
	client := sdkmcp.NewClient(&sdkmcp.Implementation{Name: "asb-mcp-bridge", Version: o.Version}, &sdkmcp.ClientOptions{
		ProgressNotificationHandler: func(ctx context.Context, req *sdkmcp.ProgressNotificationClientRequest) {
			mu.Lock()
			forward := inflight[req.Params.ProgressToken]
			mu.Unlock()
			if forward != nil {
				forward(req.Params)
			}
		},
	})
	transport := &sdkmcp.StreamableClientTransport{Endpoint: o.Endpoint,
		HTTPClient: &http.Client{Transport: bearerTransport{token: o.Token, next: http.DefaultTransport}}}
	remote, err := client.Connect(ctx, transport, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("connect to %s: %w", o.Endpoint, err)
	}
	tools, err := remote.ListTools(ctx, nil)
	if err != nil {
		remote.Close()
		return nil, nil, fmt.Errorf("list the controller's tools: %w", err)
	}
	hc := &http.Client{Transport: bearerTransport{token: o.Token, next: http.DefaultTransport}}
	back := &bringBack{w: o.Workspace, hc: hc, shipped: map[string]bool{}, brought: map[string]string{}}
	server := sdkmcp.NewServer(&sdkmcp.Implementation{Name: "asb", Version: o.Version}, &sdkmcp.ServerOptions{Instructions: instructions})
	for _, t := range tools.Tools {
		name := t.Name
		server.AddTool(t, func(ctx context.Context, req *sdkmcp.CallToolRequest) (*sdkmcp.CallToolResult, error) {
			params := &sdkmcp.CallToolParams{Name: name, Arguments: req.Params.Arguments}
			shipped := false
			if name == "delegate" && o.Workspace != nil {
				args, failed := shipWorkspace(ctx, req, hc, o.Workspace)
				if failed != nil {
					return failed, nil
				}
				if args != nil {
					params.Arguments = args
					shipped = true
				}
			}
			if tok := req.Params.GetProgressToken(); tok != nil {
				params.Meta = sdkmcp.Meta{"progressToken": tok}
				mu.Lock()
				inflight[tok] = func(p *sdkmcp.ProgressNotificationParams) {
					_ = req.Session.NotifyProgress(ctx, &sdkmcp.ProgressNotificationParams{
						ProgressToken: tok, Progress: p.Progress, Total: p.Total, Message: p.Message})
				}
				mu.Unlock()
				defer func() {
					mu.Lock()
					delete(inflight, tok)
					mu.Unlock()
				}()
			}
			res, err := remote.CallTool(ctx, params)
			if err == nil && o.Workspace != nil && o.Workspace.Fetch != nil {
				back.after(ctx, name, shipped, res)
			}
			return res, err
		})
	}
	return server, remote.Close, nil
}

// bearerTransport adds the token to every request to the controller.
type bearerTransport struct {
	token string
	next  http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// ServeStdio serves server on r and w (a process's stdin and stdout) until
// ctx ends or the peer goes away. Closing is left to the process.
func ServeStdio(ctx context.Context, server *sdkmcp.Server, r io.Reader, w io.Writer) error {
	return server.Run(ctx, &sdkmcp.IOTransport{Reader: io.NopCloser(r), Writer: nopWriteCloser{w}})
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// shipWorkspace uploads the working tree when a delegate call wants it:
// source "local", or no source and no repository named (the original
// "delegate this"). It returns the arguments to forward (nil: unchanged),
// or a tool error for the caller.
func shipWorkspace(ctx context.Context, req *sdkmcp.CallToolRequest, hc *http.Client, w *WorkspaceUpload) (map[string]any, *sdkmcp.CallToolResult) {
	var args map[string]any
	if err := json.Unmarshal(req.Params.Arguments, &args); err != nil || args == nil {
		return nil, nil // the controller reports malformed arguments
	}
	str := func(k string) string { s, _ := args[k].(string); return strings.TrimSpace(s) }
	repos, _ := args["repos"].([]any)
	named := str("repo") != "" || len(repos) > 0
	switch {
	case str("workspace") != "", strings.TrimSpace(str("task")) == "":
		return nil, nil // already uploaded, or the controller asks for the task first
	case str("source") == "local" && named:
		return nil, toolFailure("invalid repo: source local ships WORKSPACE_DIR (%s) as the task's repository; leave repo and repos empty, or use source git for GitHub repositories", w.Dir)
	case str("source") == "local", str("source") == "" && !named:
	default:
		return nil, nil
	}
	tree, err := w.Prepare(ctx)
	if err != nil {
		return nil, toolFailure("could not ship the local working tree: %v. Tell the user; or delegate with source git and repo owner/name.", err)
	}
	if tok := req.Params.GetProgressToken(); tok != nil {
		_ = req.Session.NotifyProgress(ctx, &sdkmcp.ProgressNotificationParams{ProgressToken: tok,
			Message: fmt.Sprintf("uploading workspace (%d files, %.1f MiB)", tree.Files, float64(tree.Bytes)/(1<<20))})
	}
	id, err := upload(ctx, hc, w.URL, tree)
	if err != nil {
		return nil, toolFailure("could not upload the local working tree %s: %v", w.Dir, err)
	}
	args["workspace"] = id
	args["source"] = "local"
	return args, nil
}

// upload streams the tree to POST /workspaces and returns its id.
func upload(ctx context.Context, hc *http.Client, url string, tree Tree) (string, error) {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(tree.Write(ctx, pw)) }()
	defer pr.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, pr)
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-tar")
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var out struct {
		Workspace string `json:"workspace"`
		Error     string `json:"error"`
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	_ = json.Unmarshal(body, &out)
	if resp.StatusCode/100 != 2 || out.Workspace == "" {
		msg := out.Error
		if msg == "" {
			msg = http.StatusText(resp.StatusCode)
		}
		return "", fmt.Errorf("the controller answered %d: %s", resp.StatusCode, msg)
	}
	return out.Workspace, nil
}

func toolFailure(format string, args ...any) *sdkmcp.CallToolResult {
	return &sdkmcp.CallToolResult{IsError: true, Content: []sdkmcp.Content{&sdkmcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}
