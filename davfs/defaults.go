package davfs

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"
)

// PRD defaults, applied by Open to zero Config fields.
const (
	DefaultMaxEditableFileSize = 1 << 20   // 1 MiB
	DefaultMaxUploadSize       = 100 << 20 // 100 MiB
	DefaultMaxPageSize         = 500
	DefaultPageSize            = 100
	DefaultMaxPathLength       = 4096
	DefaultMaxPathDepth        = 64
)

// DefaultDeniedNames returns PRD §8.2's default denylist (a fresh slice).
// ".git" is always denied whatever the configuration says.
func DefaultDeniedNames() []string {
	return []string{".git", ".hg", ".svn", "node_modules", ".venv", "venv", "vendor",
		"dist", "build", ".next", ".cache", "__pycache__"}
}

// withDefaults fills zero fields and reports every invalid one.
func (c Config) withDefaults() (Config, error) {
	var errs []error
	if c.ProjectsRoot == "" || !filepath.IsAbs(c.ProjectsRoot) {
		errs = append(errs, errors.New("davfs: projectsRootDir must be an absolute path"))
	}
	if c.CodexHome == "" || !filepath.IsAbs(c.CodexHome) {
		errs = append(errs, errors.New("davfs: codexHomeDir must be an absolute path"))
	}
	orDefault(&errs, &c.MaxEditableFileSize, DefaultMaxEditableFileSize, "maxEditableFileSize")
	orDefault(&errs, &c.MaxUploadSize, DefaultMaxUploadSize, "maxUploadSize")
	orDefault(&errs, &c.MaxPageSize, DefaultMaxPageSize, "maxPageSize")
	orDefault(&errs, &c.DefaultPageSize, DefaultPageSize, "defaultPageSize")
	orDefault(&errs, &c.MaxPathLength, DefaultMaxPathLength, "maxPathLength")
	orDefault(&errs, &c.MaxPathDepth, DefaultMaxPathDepth, "maxPathDepth")
	if c.DefaultPageSize > c.MaxPageSize {
		c.DefaultPageSize = c.MaxPageSize
	}
	for _, n := range c.DeniedNames {
		if n == "" || n == "." || n == ".." || filepath.Base(n) != n {
			errs = append(errs, fmt.Errorf("davfs: deniedDirectories entry %q must be a single name", n))
		}
	}
	return c, errors.Join(errs...)
}

// orDefault sets *v to d when it is zero and reports it when negative.
func orDefault[T int | int64](errs *[]error, v *T, d T, key string) {
	if *v == 0 {
		*v = d
	} else if *v < 0 {
		*errs = append(*errs, fmt.Errorf("davfs: %s must be positive", key))
	}
}

// positiveOr sets *v to d unless it is positive.
func positiveOr[T int | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}
