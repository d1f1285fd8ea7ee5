package sidecar

import (
	"path/filepath"
	"strings"
	"time"

	"github.com/agentworkspace/files/davfs"
)

// CheckpointsConfig is services.checkpoints (issue #15, docs/checkpoints.md).
type CheckpointsConfig struct {
	// Enabled: false turns checkpoints off (every checkpoint call fails
	// with CHECKPOINTS_DISABLED, and deletes and restores take none).
	Enabled bool `yaml:"enabled"`
	// Dir is the store's absolute path. Empty: <projectsRootDir>/.agent-checkpoints,
	// on the projects volume; that name is then denied (never a Project,
	// never listed). It is the only direct child of projectsRootDir allowed;
	// elsewhere it must be outside every project and CODEX_HOME.
	Dir string `yaml:"dir"`
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

// DefaultCheckpointDirName is the store's name under the projects root
// when services.checkpoints.dir is empty.
const DefaultCheckpointDirName = ".agent-checkpoints"

// DefaultCheckpointsConfig: on, automatic, 20 per workspace (and 200
// per-file versions), 10 GiB, 30 days, 200,000 entries per checkpoint.
func DefaultCheckpointsConfig() CheckpointsConfig {
	return CheckpointsConfig{Enabled: true, Automatic: true, MaxPerWorkspace: davfs.DefaultCheckpointsPerWorkspace,
		MaxTotalBytes: davfs.DefaultCheckpointBytes, MaxAge: "720h", MaxEntries: davfs.DefaultCheckpointEntries,
		MaxVersionsPerWorkspace: davfs.DefaultVersionsPerWorkspace}
}

func (c CheckpointsConfig) validate(p ProjectConfig, bad badFunc) {
	const pre = "services.checkpoints."
	if c.Dir != "" {
		d := filepath.Clean(c.Dir)
		switch {
		case !filepath.IsAbs(c.Dir):
			bad(pre+"dir", "must be an absolute path (got %q)", c.Dir)
		case d == "/":
			bad(pre+"dir", "must not be the file system root")
		case p.ProjectsRootDir != "" && filepath.Dir(d) == filepath.Clean(p.ProjectsRootDir) && filepath.Base(d) != DefaultCheckpointDirName:
			// Any other name there is, or can become, a project, whose
			// files the store would then sweep and collect.
			bad(pre+"dir", "a direct child of projectsRootDir must be named %s (any other name can be a project)", DefaultCheckpointDirName)
		case p.ProjectsRootDir != "" && filepath.Dir(d) != filepath.Clean(p.ProjectsRootDir) && within(d, filepath.Clean(p.ProjectsRootDir)):
			bad(pre+"dir", "must not be inside a project (only projectsRootDir/%s is allowed there)", DefaultCheckpointDirName)
		case p.CodexHomeDir != "" && within(d, filepath.Clean(p.CodexHomeDir)):
			bad(pre+"dir", "must not be inside codexHomeDir")
		case p.ProjectsRootDir != "" && within(filepath.Clean(p.ProjectsRootDir), d),
			p.CodexHomeDir != "" && within(filepath.Clean(p.CodexHomeDir), d):
			bad(pre+"dir", "must not contain projectsRootDir or codexHomeDir")
		}
	}
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

func within(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// davfsCheckpoints turns the section into davfs's config.
func (c CheckpointsConfig) davfs(p ProjectConfig) davfs.CheckpointConfig {
	if !c.Enabled {
		return davfs.CheckpointConfig{}
	}
	dir := c.Dir
	if dir == "" {
		dir = filepath.Join(p.ProjectsRootDir, DefaultCheckpointDirName)
	}
	age, _ := time.ParseDuration(c.MaxAge)
	return davfs.CheckpointConfig{Dir: dir, MaxPerWorkspace: c.MaxPerWorkspace, MaxTotalBytes: c.MaxTotalBytes, MaxAge: age, MaxEntries: c.MaxEntries, Automatic: c.Automatic,
		MaxVersionsPerWorkspace: c.MaxVersionsPerWorkspace}
}
