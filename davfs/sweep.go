package davfs

import (
	"strings"

	"github.com/agentworkspace/files/davfs/internal/fdio"
	"golang.org/x/sys/unix"
)

// sweepBudget bounds the directories sweepAtOpen visits so a huge tree does
// not delay start-up; what it does not reach, listings sweep lazily (a temp
// file older than staleTempAge is removed when its directory is listed).
const sweepBudget = 10000

// sweepAtOpen removes davfs's temp files (tempPrefix) left by a previous
// process: CODEX_HOME's top level (AGENTS.md writes) and, breadth first,
// skills/ and the projects root, up to sweepBudget directories and
// MaxPathDepth levels. It never follows a symlink, never enters another
// file system or a denylisted directory (davfs never writes there), and
// removes nothing but regular files named with tempPrefix. At Open no write
// of this FS is in flight, so age does not matter.
func (f *FS) sweepAtOpen() {
	type dir struct {
		r    root
		segs []string
		walk bool
	}
	// The queue holds paths, not fds: one directory is open at a time.
	queue := []dir{{r: f.codex}, {r: f.codex, segs: []string{GlobalSkills}, walk: true}, {r: f.projects, walk: true}}
	removed, visited := 0, 0
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		visited++
		fd, err := f.openBeneath(d.r, d.segs, fdio.DirRead)
		if err != nil {
			continue
		}
		ents, err := fdio.ReadDirents(fd)
		if err != nil {
			unix.Close(fd)
			continue
		}
		for _, e := range ents {
			switch {
			case strings.HasPrefix(e.Name, tempPrefix):
				var st unix.Stat_t
				if fdio.Fstatat(fd, e.Name, &st) == nil && fdio.IsType(&st, unix.S_IFREG) &&
					unix.Unlinkat(fd, e.Name, 0) == nil {
					removed++
				}
			case d.walk && e.Type == unix.DT_DIR && f.visibleName(e.Name) &&
				len(d.segs) < f.cfg.MaxPathDepth && visited+len(queue) < sweepBudget:
				segs := append(append(make([]string, 0, len(d.segs)+1), d.segs...), e.Name)
				queue = append(queue, dir{r: d.r, segs: segs, walk: true})
			}
		}
		unix.Close(fd)
	}
	if removed > 0 {
		f.log.Info("removed stale temp files", "count", removed)
	}
	if visited >= sweepBudget {
		f.log.Info("temp sweep budget reached; listings remove the rest lazily", "directories", visited)
	}
}
