package davfs

import (
	"testing"
	"time"
)

// A keep delete deletes only what its version holds, each regular file
// with the stat it was captured with: a change the ctime floor cannot see
// (within the kernel's ctime tick, played here by a floor in the future)
// still refuses the delete, and the agent's bytes stay.
func TestKeepDeleteComparesWithVersion(t *testing.T) {
	for name, change := range map[string]func(e *env){
		"rewritten": func(e *env) { e.write("projects/p/d/a.txt", "the agent's a2") },
		"added":     func(e *env) { e.write("projects/p/d/sub/new.txt", "the agent's new file") },
	} {
		t.Run(name, func(t *testing.T) {
			e := ckFixEnv(t)
			e.write("projects/p/d/a.txt", "a")
			e.write("projects/p/d/sub/b.txt", "b")
			st, err := e.fs.Stat(bg, proj("p"), "d")
			must(t, err)
			id, release, err := e.fs.keepVersion(bg, proj("p"), "d", st.Revision, "DELETE")
			must(t, err)
			defer release()
			change(e)
			st2, err := e.fs.Stat(bg, proj("p"), "d")
			must(t, err)
			ctx := withKept(bg, proj("p"), "d", id)
			err = e.fs.DeleteEntryWith(ctx, proj("p"), "d", st2.Revision, DeleteOptions{Recursive: true, ChangedAfter: time.Now().Add(time.Hour)})
			wantErr(t, err, CodeAborted, ReasonRevisionMismatch)
			if name == "rewritten" && e.read("projects/p/d/a.txt") != "the agent's a2" {
				t.Fatal("the rewritten file was deleted")
			}
			if name == "added" && e.read("projects/p/d/sub/new.txt") != "the agent's new file" {
				t.Fatal("the added file was deleted")
			}
		})
	}
	// Unchanged, the same delete goes ahead.
	e := ckFixEnv(t)
	e.write("projects/p/d/a.txt", "a")
	st, err := e.fs.Stat(bg, proj("p"), "d")
	must(t, err)
	id, release, err := e.fs.keepVersion(bg, proj("p"), "d", st.Revision, "DELETE")
	must(t, err)
	defer release()
	must(t, e.fs.DeleteEntryWith(withKept(bg, proj("p"), "d", id), proj("p"), "d", st.Revision, DeleteOptions{Recursive: true, ChangedAfter: time.Now().Add(time.Hour)}))
}
