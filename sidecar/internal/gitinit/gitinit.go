// Package gitinit is the sidecar's davfs.ProjectInitializer: it runs
// `git init --initial-branch=main --quiet DIR` as an argument array (never
// through a shell) with a timeout and a minimal environment, so a user's or
// the system's git configuration cannot change what a new project gets.
package gitinit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agentworkspace/files/davfs"
)

// DefaultTimeout bounds one git init.
const DefaultTimeout = 30 * time.Second

// Options configures New. Zero values take the defaults.
type Options struct {
	// Git is the git executable: a name looked up in PATH at call time, or a
	// path. Default "git".
	Git string
	// Timeout bounds one run. Default DefaultTimeout.
	Timeout time.Duration
	// Logger gets the failure detail (git's output), never a client. Nil: null logger.
	Logger hclog.Logger
}

// New returns an initializer that runs git init in dir. On failure it returns
// a *davfs.Error with reason GIT_INIT_FAILED and a safe message; davfs then
// removes the directory it created.
func New(opts Options) davfs.ProjectInitializer {
	if opts.Git == "" {
		opts.Git = "git"
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	return func(ctx context.Context, dir string) error {
		if err := run(ctx, opts, dir); err != nil {
			return &davfs.Error{Code: davfs.CodeInternal, Reason: davfs.ReasonGitInitFailed,
				Message: "git init failed; the project was not created", Err: err}
		}
		return nil
	}
}

func run(ctx context.Context, opts Options, dir string) error {
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	git, err := exec.LookPath(opts.Git)
	if err != nil {
		opts.Logger.Error("git init: git executable not found", "error", err)
		return fmt.Errorf("git not found: %w", err)
	}
	// An empty HOME keeps ~/.gitconfig (and init.templateDir, hooks, ...)
	// out; GIT_CONFIG_NOSYSTEM keeps /etc/gitconfig out.
	home, err := os.MkdirTemp("", "gitinit-home-")
	if err != nil {
		return fmt.Errorf("temp HOME: %w", err)
	}
	defer os.RemoveAll(home)

	cmd := exec.CommandContext(ctx, git, "init", "--initial-branch=main", "--quiet", dir)
	cmd.Env = []string{
		"HOME=" + home,
		"PATH=" + os.Getenv("PATH"),
		"LANG=C",
		"LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_TERMINAL_PROMPT=0",
		"XDG_CONFIG_HOME=" + home,
	}
	cmd.Dir = home
	cmd.WaitDelay = 2 * time.Second
	var out bytes.Buffer
	cmd.Stdout = &limited{b: &out, n: 4096}
	cmd.Stderr = cmd.Stdout
	start := time.Now()
	err = cmd.Run()
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("git init timed out after %s: %w", opts.Timeout, err)
		}
		// dir is a host path: logs only, never a client message.
		opts.Logger.Error("git init failed", "error", err, "output", strings.TrimSpace(out.String()),
			"duration", time.Since(start).String())
		return err
	}
	opts.Logger.Debug("git init done", "duration", time.Since(start).String())
	return nil
}

// limited keeps at most n bytes of a command's output for the log.
type limited struct {
	b *bytes.Buffer
	n int
}

func (l *limited) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room > 0 {
		if len(p) > room {
			l.b.Write(p[:room])
		} else {
			l.b.Write(p)
		}
	}
	return len(p), nil
}
