package davfs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"testing"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
)

// reasonConsts parses errors.go and returns the value of every constant of
// type Reason, so a reason added later cannot escape the check.
func reasonConsts(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, sp := range g.Specs {
			vs := sp.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Reason" {
				continue
			}
			for _, v := range vs.Values {
				lit, ok := v.(*ast.BasicLit)
				if !ok {
					t.Fatalf("Reason constant with a non-literal value")
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, s)
			}
		}
	}
	if len(out) < 20 {
		t.Fatalf("found only %d Reason constants", len(out))
	}
	return out
}

// TestReasonsInContract: every davfs reason is a value of the contract's
// ErrorReason enum, so none is unmapped at the gRPC/REST boundary.
func TestReasonsInContract(t *testing.T) {
	for _, r := range reasonConsts(t) {
		if _, ok := workspacev1.ErrorReason_value[r]; !ok {
			t.Errorf("reason %s is not in workspace.v1.ErrorReason", r)
		}
	}
}

func TestCodeOfReasonOf(t *testing.T) {
	if CodeOf(nil) != CodeOK || ReasonOf(nil) != "" {
		t.Fatal("nil")
	}
	e := newErr(CodeAborted, ReasonRevisionMismatch, nil, "x")
	if CodeOf(e) != CodeAborted || ReasonOf(e) != ReasonRevisionMismatch {
		t.Fatal("davfs error")
	}
}
