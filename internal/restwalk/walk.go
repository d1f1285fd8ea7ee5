package restwalk

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The two agents the walk uses: A is edited, B holds the same project and
// must never see A's changes.
const (
	AgentA = "codex-a"
	AgentB = "codex-b"
)

// Target is one deployment the walk runs against.
type Target struct {
	Client Client
	// The agents' volumes as this machine sees them: each agent's projects
	// and its CODEX_HOME (the Global workspace).
	ProjectsA, ProjectsB, HomeA, HomeB string
	// Outside is a directory on no volume, for a canary a symlink points at.
	Outside string
	// Operator is the operator the admin token authenticates as.
	Operator string
	// AsAgent hands path, and everything under it, to the agent's user (a
	// file an agent made, as the test writes it as root).
	AsAgent func(t *testing.T, path string)
	// RelativeLinks makes the symlinks an agent leaves behind relative (a
	// cluster's pod sees the volumes at other absolute paths than the node).
	RelativeLinks bool
	// StopB stops agent B's sidecar and returns once it is gone.
	StopB func(t *testing.T)
	// Eventually retries check until it returns nil, failing the test when
	// it never does; nil means check must pass at once.
	Eventually func(t *testing.T, what string, check func() error)
	// Endpoints name B's sidecar (addresses, host names, ports): its
	// Unavailable error must not contain them. Called after StopB.
	Endpoints func(t *testing.T) []string
	// AuditRecords are the gateway's audit records so far.
	AuditRecords func(t *testing.T) []map[string]any
	// Logs are the texts (logs, audit files) that must hold no content and
	// no secret, each with what it must not contain.
	Logs func(t *testing.T, w *Walk) []Log
}

// Log is one text step 10 searches, and what it must not contain.
type Log struct {
	Name  string
	Text  string
	Never []string
}

// Step is one named step of a walk.
type Step struct {
	Name string
	Run  func(t *testing.T)
}

// Walk is one run of the walk-through: its target and what its steps
// share.
type Walk struct {
	Target
	// Secret is written into both agents' auth.json and config.toml and
	// into the canary outside the volumes; no reply, log or audit record
	// may contain it.
	Secret string
	// Body is notes.md's content (steps 3 to 8).
	Body string

	staleRev string
}

// New makes a walk and writes its canaries: auth.json and config.toml in
// both CODEX_HOMEs, and Outside/canary.txt.
func New(t *testing.T, tg Target) *Walk {
	t.Helper()
	w := &Walk{Target: tg, Secret: "sk-acceptance-" + time.Now().Format("150405.000000"), Body: "# demo\n\nacceptance body text 7f3a\n"}
	for _, h := range []string{tg.HomeA, tg.HomeB} {
		w.writeAsAgent(t, filepath.Join(h, "auth.json"), `{"key":"`+w.Secret+`"}`)
		w.writeAsAgent(t, filepath.Join(h, "config.toml"), "token = \""+w.Secret+"\"\n")
	}
	if err := os.MkdirAll(tg.Outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w.canary(), []byte("canary "+w.Secret), 0o644); err != nil {
		t.Fatal(err)
	}
	return w
}

// Content is what the walk writes into files: no log or audit record may
// contain it.
func (w *Walk) Content() []string {
	return []string{w.Body, "acceptance body text", "Be kind.", "module.exports"}
}

// Secrets are the walk's secret and the admin token.
func (w *Walk) Secrets() []string { return []string{w.Secret, w.Client.Token} }

// Steps are PRD §15.5 steps 1 to 10, in order; each depends on the ones
// before it.
func (w *Walk) Steps() []Step {
	return []Step{
		{"1 same project in both agents with its own .git", w.sameProject},
		{"2 .git is never listed", w.gitHidden},
		{"3 edit in codex-a, invisible in codex-b", w.editIsolated},
		{"4 a stale revision is refused and the content survives", w.staleRefused},
		{"5 a denylisted directory is hidden and refused", w.denylisted},
		{"6 Global AGENTS.md and skills/example/SKILL.md", w.global},
		{"7 auth.json, config.toml and symlink targets are refused", w.secretsRefused},
		{"8 deletions need confirmation and are audited", w.deletions},
		{"9 a stopped sidecar is Unavailable for its agent only", w.sidecarDown},
		{"10 audit records are complete and carry no content or secrets", w.auditClean},
	}
}

// Insert returns steps with extra inserted before the step whose name
// starts with before ("7 "), or appended when there is none.
func Insert(steps []Step, before string, extra ...Step) []Step {
	for i, s := range steps {
		if strings.HasPrefix(s.Name, before) {
			return append(append(append([]Step{}, steps[:i]...), extra...), steps[i:]...)
		}
	}
	return append(steps, extra...)
}

// Run runs each step as a subtest of t, in order, stopping at the first
// that fails (later steps depend on earlier ones).
func Run(t *testing.T, steps ...Step) {
	t.Helper()
	for _, s := range steps {
		if !t.Run(s.Name, s.Run) {
			t.FailNow()
		}
	}
}

func (w *Walk) canary() string { return filepath.Join(w.Outside, "canary.txt") }

func (w *Walk) do(t *testing.T, method, path string, body any) Reply {
	t.Helper()
	return w.Client.Do(t, method, path, body)
}

func (w *Walk) dav(t *testing.T, method, path string, hdr ...string) Reply {
	t.Helper()
	return w.Client.Dav(t, method, path, hdr...)
}

// writeAsAgent writes a new file (and its parents), as the agent would.
func (w *Walk) writeAsAgent(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	w.AsAgent(t, p)
}

// symlink leaves a symlink behind, as an agent could.
func (w *Walk) symlink(t *testing.T, target, link string) {
	t.Helper()
	if w.RelativeLinks {
		rel, err := filepath.Rel(filepath.Dir(link), target)
		if err != nil {
			t.Fatal(err)
		}
		target = rel
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	w.AsAgent(t, link)
}

func (w *Walk) eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	if w.Eventually != nil {
		w.Eventually(t, what, check)
		return
	}
	if err := check(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func isDir(p string) bool { fi, err := os.Lstat(p); return err == nil && fi.IsDir() }
