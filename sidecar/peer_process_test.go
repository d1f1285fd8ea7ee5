package sidecar_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/internal/davwire"
	"github.com/agentworkspace/files/internal/pki"
	"github.com/agentworkspace/files/internal/pki/pkitest"
	"github.com/agentworkspace/files/internal/proctest"
	"github.com/agentworkspace/files/internal/testtree"
	"github.com/agentworkspace/files/sidecar/sidecartest"
)

// attackEnv carries an attack plan (JSON) to a re-executed test binary:
// TestMain then runs the attack instead of the tests.
const attackEnv = "AGENT_SIDECAR_TEST_ATTACK"

// attackPlan is what the attacker process is told: the sidecar's
// loopback ports and a directory with a gateway certificate of another CA.
type attackPlan struct {
	RPC, Dav, OtherCADir string
}

// attackResult is one attempt: Served is true when the sidecar answered
// (a status for WebDAV, any gRPC answer other than a transport failure).
type attackResult struct {
	Name   string
	Served bool
	Detail string
}

// attack runs every attempt of the plan and prints the results as JSON.
func attack(planJSON string) int {
	var p attackPlan
	if err := json.Unmarshal([]byte(planJSON), &p); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	other := pki.GatewayFiles(p.OtherCADir)
	otherPair, err := tls.LoadX509KeyPair(other.Cert, other.Key)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	// An attacker does not check the server's certificate.
	noCert := func(protos []string) *tls.Config {
		return &tls.Config{InsecureSkipVerify: true, NextProtos: protos}
	}
	otherCA := func(protos []string) *tls.Config {
		c := noCert(protos)
		c.Certificates = []tls.Certificate{otherPair}
		return c
	}
	var out []attackResult
	for _, c := range []struct {
		name  string
		creds credentials.TransportCredentials
	}{
		{"grpc insecure", insecure.NewCredentials()},
		{"grpc TLS without a certificate", credentials.NewTLS(noCert(pki.ProtoGRPC))},
		{"grpc TLS, certificate of another CA", credentials.NewTLS(otherCA(pki.ProtoGRPC))},
	} {
		out = append(out, attackRPC(c.name, p.RPC, c.creds))
	}
	for _, c := range []struct {
		name, scheme string
		tls          *tls.Config
	}{
		{"dav plain HTTP", "http", nil},
		{"dav TLS without a certificate", "https", noCert(pki.ProtoHTTP)},
		{"dav TLS, certificate of another CA", "https", otherCA(pki.ProtoHTTP)},
	} {
		client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: c.tls, DisableKeepAlives: true}}
		base := c.scheme + "://" + p.Dav
		out = append(out,
			attackDAV(client, c.name+" PUT keep", "PUT", base+"/projects/demo/planted.txt", "planted by the agent",
				davwire.UnconditionalHeader, "keep", "X-Operator", "admin"),
			attackDAV(client, c.name+" PUT over an existing file", "PUT", base+"/projects/demo/a.txt", "overwritten",
				davwire.UnconditionalHeader, "keep"),
			attackDAV(client, c.name+" PROPFIND", "PROPFIND", base+"/projects/demo/", "", "Depth", "1"))
	}
	json.NewEncoder(os.Stdout).Encode(out)
	return 0
}

func attackRPC(name, addr string, creds credentials.TransportCredentials) attackResult {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return attackResult{Name: name, Detail: err.Error()}
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err = workspacev1.NewWorkspaceServiceClient(conn).CreateProject(ctx, &workspacev1.CreateProjectRequest{Name: "planted"})
	if err == nil {
		return attackResult{Name: name, Served: true, Detail: "CreateProject succeeded"}
	}
	// A refused handshake is Unavailable; anything else is an answer.
	return attackResult{Name: name, Served: !strings.Contains(err.Error(), "code = Unavailable") &&
		!strings.Contains(err.Error(), "DeadlineExceeded"), Detail: err.Error()}
}

func attackDAV(c *http.Client, name, method, url, body string, hdr ...string) attackResult {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return attackResult{Name: name, Detail: err.Error()}
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		return attackResult{Name: name, Detail: err.Error()}
	}
	resp.Body.Close()
	return attackResult{Name: name, Served: true, Detail: resp.Status}
}

// runAttacker re-executes this test binary (copied where UID 1000 can run
// it) as UID/GID 1000 when the tests run as root, with plan.
func runAttacker(t *testing.T, plan attackPlan) []attackResult {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := proctest.TempDir(t, "attacker-")
	bin := filepath.Join(dir, "attacker")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	planJSON, _ := json.Marshal(plan)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-test.run=^$")
	cmd.Env = append(os.Environ(), attackEnv+"="+string(planJSON))
	cmd.Dir = dir
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: sidecartest.UID, Gid: sidecartest.GID}}
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("attacker: %v\n%s", err, stderr.String())
	}
	var res []attackResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("attacker output %q: %v", out, err)
	}
	return res
}

// Issue 23: the agent shares the sidecar's network namespace and UID. From
// a process running as UID 1000 on the sidecar's loopback, direct gRPC and
// WebDAV calls (plain, TLS without a certificate, TLS with a certificate of
// another CA) are refused at the handshake: nothing on the volume changes,
// each refusal is counted and logged by server and reason only, and the
// gateway's certificate still works.
func TestDirectCallsFromThePodAreRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Log("not root: the attacker runs as the current user (the sidecar's user too)")
	}
	sc := sidecartest.Start(t, sidecartest.Options{})
	writeFile(t, sc.ProjectsDir, "demo/a.txt", "original")
	sidecartest.Chown(t, filepath.Join(sc.ProjectsDir, "demo"))
	before, beforeHome := testtree.Snap(t, sc.ProjectsDir, testtree.Modes(), testtree.AllMTimes()), testtree.Snap(t, sc.CodexHome, testtree.Modes(), testtree.AllMTimes())

	otherCA, err := pki.NewCA("attacker", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	otherDir := proctest.TempDir(t, "other-ca-")
	pkitest.Write(t, otherDir, otherCA)
	sidecartest.Chown(t, otherDir)

	res := runAttacker(t, attackPlan{RPC: sc.RPCAddr, Dav: strings.TrimPrefix(sc.DavURL, "https://"), OtherCADir: otherDir})
	if len(res) != 12 {
		t.Fatalf("%d attack results, want 12: %+v", len(res), res)
	}
	for _, r := range res {
		if r.Served {
			t.Errorf("%s: served (%s)", r.Name, r.Detail)
		}
	}
	if d := append(testtree.Diff(before, testtree.Snap(t, sc.ProjectsDir, testtree.Modes(), testtree.AllMTimes())), testtree.Diff(beforeHome, testtree.Snap(t, sc.CodexHome, testtree.Modes(), testtree.AllMTimes()))...); len(d) > 0 {
		t.Errorf("the volumes changed:\n%s", strings.Join(d, "\n"))
	}

	for _, server := range []string{"rpc", "dav"} {
		for _, reason := range pki.Reasons() {
			name := fmt.Sprintf(`sidecar_peer_refused_total{reason=%q,server=%q}`, reason, server)
			if n, _ := strconv.ParseFloat(metric(t, sc, name), 64); n < 1 {
				t.Errorf("%s = %v, want at least 1", name, n)
			}
		}
	}
	if !sc.WaitLog(`"peer refused at the TLS handshake"`, 5*time.Second) {
		t.Fatal("no refusal logged")
	}
	for _, l := range sc.LogLines() {
		if l["@message"] != "peer refused at the TLS handshake" {
			continue
		}
		if l["@level"] != "warn" || l["server"] == nil || l["reason"] == nil {
			t.Errorf("refusal log line %v", l)
		}
		for k := range l {
			switch k {
			case "@message", "@level", "@timestamp", "@module", "server", "reason", "suppressed":
			default:
				t.Errorf("refusal log line carries %q: %v", k, l)
			}
		}
	}
	if strings.Contains(sc.Logs(), "planted by the agent") || strings.Contains(sc.Logs(), "overwritten") {
		t.Error("a refused body reached the log")
	}

	// The gateway's certificate still works, on both listeners.
	if _, err := sc.Dial(t).ListProjects(ctxT(t), &workspacev1.ListProjectsRequest{}); err != nil {
		t.Fatalf("gRPC with the gateway's certificate: %v", err)
	}
	req, _ := http.NewRequest("PROPFIND", sc.DavURL+"/projects/demo/", nil)
	req.Header.Set("Depth", "1")
	resp, err := sc.HTTPClient(t).Do(req)
	if err != nil {
		t.Fatalf("WebDAV with the gateway's certificate: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusMultiStatus {
		t.Fatalf("PROPFIND with the gateway's certificate: %s", resp.Status)
	}
}

// Rotation without downtime: the sidecar's certificate, key and CA bundle
// (old and new CA) are replaced on disk while it runs, as the kubelet
// updates a Secret volume. New connections get the new certificate with no
// restart, a gateway still holding its old client certificate is trusted
// through the bundle, and an established connection keeps working.
func TestCertificateRotationWithoutRestart(t *testing.T) {
	sc := sidecartest.Start(t, sidecartest.Options{})
	old := sc.Dial(t) // established before the rotation
	if _, err := old.ListProjects(ctxT(t), &workspacev1.ListProjectsRequest{}); err != nil {
		t.Fatal(err)
	}
	newCA, err := pki.NewCA("rotated", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	next := proctest.TempDir(t, "rotated-")
	pkitest.Write(t, next, newCA, sc.AgentID)
	bundle := append(append([]byte{}, pkitest.CA(t).CertPEM...), newCA.CertPEM...)
	if err := os.WriteFile(filepath.Join(next, pki.CACertFile), bundle, 0o644); err != nil {
		t.Fatal(err)
	}
	// Each file replaced by a rename, the new key owned by the sidecar.
	files, nextFiles := pki.SidecarFiles(sc.TLSDir, sc.AgentID), pki.SidecarFiles(next, sc.AgentID)
	sidecartest.Chown(t, nextFiles.Key)
	for _, f := range [][2]string{{nextFiles.Key, files.Key}, {nextFiles.Cert, files.Cert}, {nextFiles.CA, files.CA}} {
		if err := os.Rename(f[0], f[1]); err != nil {
			t.Fatal(err)
		}
	}
	newOnly := proctest.TempDir(t, "new-only-")
	pkitest.Write(t, newOnly, newCA, sc.AgentID)
	dialWith := func(cfg *tls.Config) error {
		conn, err := grpc.NewClient(sc.RPCAddr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
		if err != nil {
			return err
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, err = workspacev1.NewWorkspaceServiceClient(conn).ListProjects(ctx, &workspacev1.ListProjectsRequest{})
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := dialWith(pkitest.GatewayClient(t, newOnly, sc.AgentID, pki.ProtoGRPC))
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a gateway of the new CA is still refused after the rotation: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The old gateway certificate, verifying the server with the bundle.
	if err := dialWith(sc.ClientTLS(t, pki.ProtoGRPC)); err != nil {
		t.Errorf("old gateway certificate with the bundle: %v", err)
	}
	// A client trusting only the old CA no longer accepts the server: it
	// serves the new certificate.
	oldOnly := proctest.TempDir(t, "old-only-")
	pkitest.Write(t, oldOnly, pkitest.CA(t), sc.AgentID)
	if err := dialWith(pkitest.GatewayClient(t, oldOnly, sc.AgentID, pki.ProtoGRPC)); err == nil {
		t.Error("the sidecar still serves the old certificate")
	}
	if _, err := old.ListProjects(ctxT(t), &workspacev1.ListProjectsRequest{}); err != nil {
		t.Errorf("the connection established before the rotation: %v", err)
	}
	if n := strings.Count(sc.Logs(), `"@message":"ready"`); n != 1 {
		t.Errorf("%d ready lines: the sidecar restarted", n)
	}
	if !sc.WaitLog("TLS certificates reloaded", 5*time.Second) {
		t.Error("no reload logged")
	}
}
