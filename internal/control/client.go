package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/private"
)

// Dir returns the folder of the control socket, in the user's private
// state folder (private.Control): <state home>/serve, where the state
// home is $HIRO_STATE_HOME, else $HIRO_LEASE_DIR (a private state for
// tests and trials), else $XDG_STATE_HOME/hiro, else ~/.local/state/hiro
// (the password database's home when HOME is unset). It does not create
// it; without a home it is an error naming the variable to set.
func Dir() (string, error) { return private.Control.Path() }

// EnsureDir creates the control socket's folder dir (0700) when missing
// and refuses one that is not a private folder of this user's (package
// private's check); the router calls it before it listens.
func EnsureDir(dir string) error { return private.EnsureDir(dir, private.Control.What) }

// SocketPath returns the control socket's path in dir.
func SocketPath(dir string) string { return filepath.Join(dir, SocketName) }

// ErrNoRouter is returned (wrapped) by Dial and the client's calls when
// no router answers on the control socket.
var ErrNoRouter = errors.New("no hiro serve is running")

// Client calls a running router's control socket. Safe for
// concurrent use.
type Client struct {
	path string
	hc   *http.Client
}

// Dial connects to the router whose control socket is in dir (Dir
// for the user's router) and checks that it answers. Errors wrap
// ErrNoRouter when there is no socket or nobody listens on it. A socket
// another user made, or one in a folder others may write, is refused
// before anything is asked of it (an error that does not wrap
// ErrNoRouter: what it would say is not trusted).
func Dial(dir string) (*Client, error) {
	path := SocketPath(dir)
	if err := private.CheckSocket(path, "control socket"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("control socket refused: %w", err)
	}
	c := &Client{path: path, hc: &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
		DisableCompression: true,
	}}}
	conn, err := net.DialTimeout("unix", path, 2*time.Second)
	if err != nil {
		return nil, fmt.Errorf("%w (control socket %s: %v); start it with `hiro serve`", ErrNoRouter, path, err)
	}
	conn.Close()
	return c, nil
}

// Close releases the client's idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

// Status returns the router's status.
func (c *Client) Status(ctx context.Context) (*Status, error) {
	var st Status
	return &st, c.call(ctx, http.MethodGet, "/v1/status", nil, &st)
}

// Drain stops the router from taking new requests (503 + Retry-After) and
// waits up to timeout for in-flight ones. Resume ends it.
func (c *Client) Drain(ctx context.Context, timeout time.Duration) (*DrainResult, error) {
	var r DrainResult
	return &r, c.call(ctx, http.MethodPost, "/v1/drain", DrainRequest{TimeoutMS: timeout.Milliseconds()}, &r)
}

// Resume ends a drain.
func (c *Client) Resume(ctx context.Context) (*Status, error) {
	var st Status
	return &st, c.call(ctx, http.MethodPost, "/v1/resume", nil, &st)
}

// Handover gives production to campaign, whose hiro process is
// leaseOwnerPID: the router drains (up to its drain_timeout), stops a
// managed production, answers 503 + Retry-After until Takeback, and takes
// production back by itself if that process dies.
func (c *Client) Handover(ctx context.Context, campaign string, leaseOwnerPID int) (*HandoverResult, error) {
	var r HandoverResult
	return &r, c.call(ctx, http.MethodPost, "/v1/handover", HandoverRequest{Campaign: campaign, LeaseOwnerPID: leaseOwnerPID}, &r)
}

// Takeback ends campaign's hand-over: the router starts production,
// verifies it ready (health, identity, probe, READY completion) and
// resumes serving. The verification is returned also when it failed
// (with an error).
func (c *Client) Takeback(ctx context.Context, campaign string) (*Takeback, error) {
	var v Takeback
	err := c.call(ctx, http.MethodPost, "/v1/takeback", TakebackRequest{Campaign: campaign}, &v)
	if err == nil && !v.OK {
		err = fmt.Errorf("take back: production %s not verified ready: %s", v.Production, v.Error)
	}
	return &v, err
}

// Switch points the router's production at profileName, already started
// and verified by the caller; effective, when not nil, is the profile that
// actually runs (an activated variant). It returns the previous
// production's name: the caller stops it.
func (c *Client) Switch(ctx context.Context, profileName string, effective *config.Profile) (*SwitchResult, error) {
	var r SwitchResult
	return &r, c.call(ctx, http.MethodPost, "/v1/switch", SwitchRequest{Profile: profileName, Effective: effective}, &r)
}

// SwitchHandedOver is Switch for the holder of a hand-over (an exclusive
// activation: production was handed over to campaign, the new backend
// started and verified in its place): the switch ends the hand-over and
// the router serves the new backend. 409 when production is not handed
// over to campaign.
func (c *Client) SwitchHandedOver(ctx context.Context, campaign, profileName string, effective *config.Profile) (*SwitchResult, error) {
	var r SwitchResult
	return &r, c.call(ctx, http.MethodPost, "/v1/switch", SwitchRequest{Profile: profileName, Effective: effective, Campaign: campaign}, &r)
}

// DrainRequest is the body of POST /v1/drain.
type DrainRequest struct {
	TimeoutMS int64 `json:"timeout_ms"`
}

// HandoverRequest is the body of POST /v1/handover.
type HandoverRequest struct {
	Campaign      string `json:"campaign"`
	LeaseOwnerPID int    `json:"lease_owner_pid"`
	TimeoutMS     int64  `json:"timeout_ms,omitempty"`
}

// TakebackRequest is the body of POST /v1/takeback.
type TakebackRequest struct {
	Campaign string `json:"campaign"`
}

// SwitchRequest is the body of POST /v1/switch.
type SwitchRequest struct {
	Profile   string          `json:"profile"`
	Effective *config.Profile `json:"effective_profile,omitempty"`
	// Campaign, when production is handed over to it, ends that
	// hand-over with the switch (an exclusive activation).
	Campaign string `json:"campaign,omitempty"`
}

// Error is an error answer of the control socket.
type Error struct {
	// StatusCode is the HTTP status (409: conflict with a hand-over).
	StatusCode int
	Message    string
}

func (e *Error) Error() string { return "hiro serve: " + e.Message }

func (c *Client) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://hiro-serve"+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("%w (control socket %s: %v)", ErrNoRouter, c.path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("reading the router's answer to %s: %w", path, err)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			e.Error = "HTTP " + strconv.Itoa(resp.StatusCode) + ": " + string(b)
		}
		// A failed verification still carries the verification.
		if out != nil {
			_ = json.Unmarshal(b, out)
		}
		return &Error{StatusCode: resp.StatusCode, Message: e.Error}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("the router's answer to %s is not JSON: %w", path, err)
	}
	return nil
}
