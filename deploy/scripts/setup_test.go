// Package scripts holds only tests of the shell scripts next to it.
package scripts

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// policyEnv is a temporary policy-rc.d for setup.sh's no_services: the
// real /usr/sbin/policy-rc.d is never touched.
type policyEnv struct {
	t      *testing.T
	dir    string
	policy string
}

func newPolicyEnv(t *testing.T) *policyEnv {
	t.Helper()
	for _, tool := range []string{"bash", "flock"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed to test setup.sh: %v", tool, err)
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "check"), []byte(check), 0o755); err != nil {
		t.Fatal(err)
	}
	return &policyEnv{t: t, dir: dir, policy: filepath.Join(dir, "policy-rc.d")}
}

// cmd sources setup.sh (its policy-rc.d functions only) and runs script
// in that shell; run runs it to success.
func (e *policyEnv) cmd(script string) *exec.Cmd {
	c := exec.Command("bash", "-c", `source ./setup.sh && `+script)
	c.Env = append(os.Environ(), "AWF_POLICY_RC_D="+e.policy, "D="+e.dir)
	return c
}

func (e *policyEnv) run(script string) {
	e.t.Helper()
	if out, err := e.cmd(script).CombinedOutput(); err != nil {
		e.t.Fatalf("%s: %v\n%s", script, err, out)
	}
}

// check is the command no_services runs ("$D/check" NAME): it fails unless
// the stub is in place and refuses every service start (exit 101), then
// creates NAME in the directory.
const check = `#!/bin/sh
"$AWF_POLICY_RC_D" x start
[ $? -eq 101 ] && grep -q "^# setup.sh: no service starts" "$AWF_POLICY_RC_D" && touch "$D/$1"
`

const stubbed = `"$D/check" ran`

// want checks the policy-rc.d after the runs: admin's content and mode, or
// absent when admin is nil; and no saved copy left over.
func (e *policyEnv) want(admin []byte) {
	e.t.Helper()
	got, err := os.ReadFile(e.policy)
	switch {
	case admin == nil && !os.IsNotExist(err):
		e.t.Errorf("policy-rc.d left in place (%v): %q", err, got)
	case admin != nil && (err != nil || !bytes.Equal(got, admin)):
		e.t.Errorf("policy-rc.d = %q (%v), want the administrator's %q", got, err, admin)
	case admin != nil:
		if fi, _ := os.Stat(e.policy); fi.Mode().Perm() != 0o750 {
			e.t.Errorf("policy-rc.d mode %v, want 0750", fi.Mode().Perm())
		}
	}
	if left, _ := filepath.Glob(e.policy + ".awf-saved.*"); len(left) != 0 {
		e.t.Errorf("saved copies left: %v", left)
	}
}

func (e *policyEnv) writeAdmin() []byte {
	e.t.Helper()
	admin := []byte("#!/bin/sh\n# the administrator's policy\nexit 0\n\x00\xff")
	if err := os.WriteFile(e.policy, admin, 0o750); err != nil {
		e.t.Fatal(err)
	}
	return admin
}

// killedRun is a run killed (SIGKILL) while its command runs: its stub is
// left in place, and the administrator's policy, if any, in a saved copy.
func (e *policyEnv) killedRun() {
	e.t.Helper()
	err := e.cmd(`no_services sh -c 'kill -KILL $PPID; sleep 5'`).Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ProcessState.ExitCode() != -1 {
		e.t.Fatalf("the run was not killed: %v", err)
	}
	if b, err := os.ReadFile(e.policy); err != nil || !bytes.Contains(b, []byte("# setup.sh: no service starts")) {
		e.t.Fatalf("the killed run left no stub: %q %v", b, err)
	}
}

// no_services puts back exactly what was there before: nothing, or the
// administrator's own policy-rc.d byte for byte.
func TestNoServicesRestores(t *testing.T) {
	e := newPolicyEnv(t)
	e.run("no_services " + stubbed)
	e.want(nil)
	admin := e.writeAdmin()
	e.run("no_services " + stubbed)
	e.want(admin)
	// The command's exit status is no_services's.
	if err := e.cmd("no_services sh -c 'exit 7'").Run(); err == nil || err.(*exec.ExitError).ExitCode() != 7 {
		t.Errorf("exit status: %v", err)
	}
	e.want(admin)
}

// A stub setup.sh left (its marker line) is stale: removed, never saved
// and put back; so is a saved stub an older setup.sh saved from another
// run.
func TestNoServicesStaleStub(t *testing.T) {
	e := newPolicyEnv(t)
	stub := "#!/bin/sh\n# setup.sh: no service starts while gvfs and udisks2 are installed\nexit 101\n"
	if err := os.WriteFile(e.policy, []byte(stub), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.policy+".awf-saved.AbC123", []byte(stub), 0o600); err != nil {
		t.Fatal(err)
	}
	e.run("no_services " + stubbed)
	e.want(nil)
}

// A run killed before it could restore, then a clean run: the stub is gone
// and the administrator's policy (saved by the killed run) is back.
func TestNoServicesAfterKilledRun(t *testing.T) {
	t.Run("no policy before", func(t *testing.T) {
		e := newPolicyEnv(t)
		e.killedRun()
		e.run("no_services " + stubbed)
		e.want(nil)
	})
	t.Run("administrator's policy", func(t *testing.T) {
		e := newPolicyEnv(t)
		admin := e.writeAdmin()
		e.killedRun()
		e.run("no_services " + stubbed)
		e.want(admin)
	})
}

// Two overlapping runs: the second waits for the first to restore, so it
// never saves the first's stub as the policy to put back.
func TestNoServicesOverlappingRuns(t *testing.T) {
	e := newPolicyEnv(t)
	admin := e.writeAdmin()
	first := e.cmd(`no_services sh -c 'touch "$D/first-in"; while ! [ -e "$D/first-go" ]; do sleep 0.05; done'`)
	var out1, out2 bytes.Buffer
	first.Stdout, first.Stderr = &out1, &out1
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	defer first.Process.Kill()
	waitFile(t, filepath.Join(e.dir, "first-in"))
	second := e.cmd(`no_services "$D/check" second-in`)
	second.Stdout, second.Stderr = &out2, &out2
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	defer second.Process.Kill()
	time.Sleep(300 * time.Millisecond)
	if _, err := os.Stat(filepath.Join(e.dir, "second-in")); err == nil {
		t.Fatal("the second run ran while the first held the stub")
	}
	if err := os.WriteFile(filepath.Join(e.dir, "first-go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := first.Wait(); err != nil {
		t.Fatalf("first run: %v\n%s", err, out1.String())
	}
	if err := second.Wait(); err != nil {
		t.Fatalf("second run: %v\n%s", err, out2.String())
	}
	if _, err := os.Stat(filepath.Join(e.dir, "second-in")); err != nil {
		t.Fatal("the second run's command did not run under the stub")
	}
	e.want(admin)
}

func waitFile(t *testing.T, p string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(p); err == nil {
			return
		}
	}
	t.Fatalf("%s did not appear", filepath.Base(p))
}
