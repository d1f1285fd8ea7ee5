package mgmt

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/gateway/internal/audit"
	"github.com/agentworkspace/files/gateway/internal/auth"
	"github.com/agentworkspace/files/gateway/internal/config"
	"github.com/agentworkspace/files/internal/pki"
	"github.com/agentworkspace/files/internal/pki/pkitest"
	"github.com/agentworkspace/files/internal/rpcmeta"
)

// failingRestore is a sidecar CheckpointService whose restore fails after
// taking its undo checkpoint, named (as the sidecar does) in the trailer.
type failingRestore struct {
	workspacev1.UnimplementedCheckpointServiceServer
	trailer string
}

func (f *failingRestore) RestoreCheckpoint(ctx context.Context, _ *workspacev1.RestoreCheckpointRequest) (*workspacev1.RestoreCheckpointResponse, error) {
	_ = grpc.SetTrailer(ctx, metadata.Pairs(rpcmeta.AutoCheckpoint, f.trailer))
	return nil, status.Error(codes.Aborted, "changed meanwhile")
}

// A restore that fails after its undo checkpoint is audited with that
// checkpoint: its own create_checkpoint record (automatic, before_restore)
// and the failed restore's auto_checkpoint_id; a trailer not shaped like a
// checkpoint ID is dropped.
func TestFailedRestoreAuditsUndoCheckpoint(t *testing.T) {
	for name, tc := range map[string]struct{ trailer, want string }{
		"undo checkpoint": {"0123456789abcdef01234567", "0123456789abcdef01234567"},
		"malformed":       {"../0123456789ABCDEF01234567 forged=1", ""},
	} {
		t.Run(name, func(t *testing.T) {
			srv := grpc.NewServer(grpc.Creds(pki.HandshakenCredentials()))
			workspacev1.RegisterCheckpointServiceServer(srv, &failingRestore{trailer: tc.trailer})
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			dir := pkitest.Dir(t, "a")
			sidecarTLS, err := pki.NewSource(pki.SidecarFiles(dir, "a"), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			gatewayTLS, err := pki.NewSource(pki.GatewayFiles(dir), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			go srv.Serve(pki.Listen(ln, sidecarTLS.ServerConfig(pki.GatewayURI, pki.ProtoGRPC), pki.ListenOptions{}))
			t.Cleanup(srv.Stop)
			auditFile := filepath.Join(t.TempDir(), "audit.jsonl")
			al, err := audit.Open(nil, auditFile, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { al.Close() })
			s, err := New(config.AgentRuntime{DefaultAgent: "a", Agents: map[string]config.Agent{"a": {Provider: "codex", Sidecar: &config.Sidecar{Endpoint: ln.Addr().String()}}}},
				Deps{Audit: al, TLS: gatewayTLS})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
			ctx := auth.WithIdentity(context.Background(), auth.Identity{Operator: "alice", Role: config.RoleAdmin})
			_, err = s.Checkpoints().RestoreCheckpoint(ctx, &workspacev1.RestoreAgentCheckpointRequest{AgentId: "a",
				Workspace: &workspacev1.WorkspaceRef{Scope: workspacev1.WorkspaceScope_PROJECT, ProjectName: "demo"}, CheckpointId: "aaaaaaaaaaaaaaaaaaaaaaaa",
				Path: "src", PlanToken: "p"})
			if status.Code(err) != codes.Aborted {
				t.Fatalf("restore: %v", err)
			}
			recs := map[string]map[string]any{}
			f, err := os.Open(auditFile)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			for sc := bufio.NewScanner(f); sc.Scan(); {
				var m map[string]any
				if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
					t.Fatalf("audit line %q: %v", sc.Text(), err)
				}
				recs[m["action"].(string)] = m
			}
			r := recs["restore_checkpoint"]
			if r == nil || r["result"] != "error" || r["checkpoint_id"] != "aaaaaaaaaaaaaaaaaaaaaaaa" {
				t.Fatalf("restore record: %v", recs)
			}
			c, ok := recs["create_checkpoint"]
			if tc.want == "" {
				if ok || r["auto_checkpoint_id"] != nil {
					t.Errorf("malformed ID audited: %v", recs)
				}
				return
			}
			if r["auto_checkpoint_id"] != tc.want || !ok || c["automatic"] != true || c["checkpoint_reason"] != "before_restore" ||
				c["checkpoint_id"] != tc.want || c["source_path"] != "src" || c["result"] != "ok" || c["operator"] != "alice" {
				t.Errorf("records: %v", recs)
			}
		})
	}
}
