package sidecar

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentworkspace/files/davfs/checkpoint"
	"github.com/hashicorp/go-hclog"
)

// CheckpointsConfig is services.checkpoints (issue #15, docs/checkpoints.md).
type CheckpointsConfig struct {
	// Enabled: false turns checkpoints off (every checkpoint call fails
	// with CHECKPOINTS_DISABLED, and deletes and restores take none).
	Enabled bool `yaml:"enabled"`
	// Dir is the store's absolute path, default /data/checkpoints: outside
	// projectsRootDir and CODEX_HOME, on a volume mounted only into the
	// sidecar's container, so the agent can neither read, plant nor delete
	// its own undo history (issue #23).
	Dir string `yaml:"dir"`
	// OnAgentVolume opts into the tamperable layout of earlier versions:
	// the store at <projectsRootDir>/.agent-checkpoints (dir empty or that
	// path), on the agent's volume; that name is then denied (never a
	// Project, never listed). The agent can then rewrite, plant or delete
	// checkpoints; logged as a warning at start.
	OnAgentVolume bool `yaml:"onAgentVolume"`
	// Automatic: a checkpoint before every restore, project delete and
	// recursive delete.
	Automatic bool `yaml:"automatic"`
	// MaxPerWorkspace, MaxTotalBytes and MaxAge bound the store; the oldest
	// checkpoints are pruned first.
	MaxPerWorkspace int    `yaml:"maxPerWorkspace"`
	MaxTotalBytes   int64  `yaml:"maxTotalBytes"`
	MaxAge          string `yaml:"maxAge"` // a Go duration, e.g. 720h
	// MaxEntries bounds the names one checkpoint holds (a capture beyond
	// it fails with CHECKPOINT_LIMIT, nothing kept).
	MaxEntries int `yaml:"maxEntries"`
	// MaxVersionsPerWorkspace bounds the per-file versions WebDAV writes
	// keep (gateway webdav.unconditionalWrites: keep); they do not count
	// against maxPerWorkspace and are pruned first, oldest first.
	MaxVersionsPerWorkspace int `yaml:"maxVersionsPerWorkspace"`
}

// DefaultCheckpointDir is services.checkpoints.dir's default: in
// Kubernetes its own volume, mounted only into the agent-sidecar container.
const DefaultCheckpointDir = "/data/checkpoints"

// DefaultCheckpointDirName is the store's name under the projects root
// with services.checkpoints.onAgentVolume (the only direct child of
// projectsRootDir a store may be).
const DefaultCheckpointDirName = ".agent-checkpoints"

// DefaultCheckpointsConfig: on, automatic, 20 per workspace (and 200
// per-file versions), 10 GiB, 30 days, 200,000 entries per checkpoint.
func DefaultCheckpointsConfig() CheckpointsConfig {
	return CheckpointsConfig{Enabled: true, Dir: DefaultCheckpointDir, Automatic: true, MaxPerWorkspace: checkpoint.DefaultCheckpointsPerWorkspace,
		MaxTotalBytes: checkpoint.DefaultCheckpointBytes, MaxAge: "720h", MaxEntries: checkpoint.DefaultCheckpointEntries,
		MaxVersionsPerWorkspace: checkpoint.DefaultVersionsPerWorkspace}
}

func (c CheckpointsConfig) validate(p ProjectConfig, bad badFunc) {
	const pre = "services.checkpoints."
	c.validateDir(p, bad)
	between(bad, pre+"maxPerWorkspace", c.MaxPerWorkspace, 10000, "")
	between(bad, pre+"maxVersionsPerWorkspace", c.MaxVersionsPerWorkspace, 10000, "")
	if c.MaxTotalBytes < 1 {
		bad(pre+"maxTotalBytes", "must be at least 1 byte (got %d)", c.MaxTotalBytes)
	}
	between(bad, pre+"maxEntries", c.MaxEntries, 10000000, "")
	if d, err := time.ParseDuration(c.MaxAge); err != nil || d <= 0 {
		bad(pre+"maxAge", "must be a positive duration such as 720h (got %q)", c.MaxAge)
	}
}

// validateDir: the store outside the agent's tree, unless onAgentVolume
// opts into projectsRootDir/.agent-checkpoints.
func (c CheckpointsConfig) validateDir(p ProjectConfig, bad badFunc) {
	const key = "services.checkpoints.dir"
	root, codex := filepath.Clean(p.ProjectsRootDir), filepath.Clean(p.CodexHomeDir)
	if c.Dir == "" {
		// Checkpoints off: no store, so none to place.
		if c.Enabled && !c.OnAgentVolume {
			bad(key, "must be set (an absolute path outside projectsRootDir and codexHomeDir, default %s)", DefaultCheckpointDir)
		}
		return
	}
	d := filepath.Clean(c.Dir)
	agentVolume := p.ProjectsRootDir != "" && filepath.Dir(d) == root && filepath.Base(d) == DefaultCheckpointDirName
	switch {
	case !filepath.IsAbs(c.Dir):
		bad(key, "must be an absolute path (got %q)", c.Dir)
	case d == "/":
		bad(key, "must not be the file system root")
	case agentVolume && !c.OnAgentVolume:
		bad(key, "is on the agent's volume, where the agent can rewrite its own undo history; use a volume only the sidecar mounts (default %s), or set services.checkpoints.onAgentVolume: true to accept a tamperable store", DefaultCheckpointDir)
	case !agentVolume && c.OnAgentVolume:
		bad("services.checkpoints.onAgentVolume", "true needs services.checkpoints.dir empty or projectsRootDir/%s (got another dir)", DefaultCheckpointDirName)
	case p.ProjectsRootDir != "" && !agentVolume && within(d, root):
		// Any other name there is, or can become, a project, whose
		// files the store would then sweep and collect.
		bad(key, "must not be inside projectsRootDir (the agent's tree; only projectsRootDir/%s with onAgentVolume: true)", DefaultCheckpointDirName)
	case p.CodexHomeDir != "" && within(d, codex):
		bad(key, "must not be inside codexHomeDir")
	case p.ProjectsRootDir != "" && within(root, d), p.CodexHomeDir != "" && within(codex, d):
		bad(key, "must not contain projectsRootDir or codexHomeDir")
	}
}

func within(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// warnPlacement logs, at start, a store the agent can tamper with
// (onAgentVolume), and a store of an earlier version left on the agent's
// volume, which is no longer used (and, no longer denied, lists as a project).
func (c CheckpointsConfig) warnPlacement(log hclog.Logger, p ProjectConfig) {
	if !c.Enabled {
		return
	}
	if c.OnAgentVolume {
		log.Warn("checkpoint store on the agent's volume (services.checkpoints.onAgentVolume: true): the agent can rewrite, plant or delete its own checkpoints", "store", DefaultCheckpointDirName)
		return
	}
	if _, err := os.Lstat(filepath.Join(p.ProjectsRootDir, DefaultCheckpointDirName)); err == nil {
		log.Warn("a checkpoint store of an earlier version is on the agent's volume and no longer used; move it to services.checkpoints.dir or delete it (docs/checkpoints.md)", "name", DefaultCheckpointDirName)
	}
}

// store turns the section into the checkpoint store's config.
func (c CheckpointsConfig) store(p ProjectConfig) checkpoint.Config {
	if !c.Enabled {
		return checkpoint.Config{}
	}
	dir := c.Dir
	if dir == "" && c.OnAgentVolume {
		dir = filepath.Join(p.ProjectsRootDir, DefaultCheckpointDirName)
	}
	age, _ := time.ParseDuration(c.MaxAge)
	return checkpoint.Config{Dir: dir, MaxPerWorkspace: c.MaxPerWorkspace, MaxTotalBytes: c.MaxTotalBytes, MaxAge: age, MaxEntries: c.MaxEntries, Automatic: c.Automatic,
		MaxVersionsPerWorkspace: c.MaxVersionsPerWorkspace}
}
