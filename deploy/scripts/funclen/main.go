// Command funclen lists the Go functions (and function literals) longer
// than -max lines outside tests, generated code, testdata and node_modules,
// longest first, and exits 1 when there is one: functions stay under about
// 80 lines, in named steps (docs/architecture.md). Usage:
// go run ./deploy/scripts/funclen [-max 80] [dir ...]
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// long is one function over the limit.
type long struct {
	where, name string
	lines       int
}

func main() {
	max := flag.Int("max", 80, "the most lines a function may have")
	flag.Parse()
	dirs := flag.Args()
	if len(dirs) == 0 {
		dirs = []string{"."}
	}
	var found []long
	for _, d := range dirs {
		if err := filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if e.IsDir() {
				if n := e.Name(); p != d && (strings.HasPrefix(n, ".") || n == "node_modules" || n == "testdata" || n == "vendor") {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return nil
			}
			f, err := scan(p, *max)
			found = append(found, f...)
			return err
		}); err != nil {
			fmt.Fprintln(os.Stderr, "funclen:", err)
			os.Exit(2)
		}
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].lines > found[j].lines })
	for _, f := range found {
		fmt.Printf("%4d %s %s\n", f.lines, f.name, f.where)
	}
	if len(found) > 0 {
		os.Exit(1)
	}
}

// scan returns the functions of one file longer than max lines (none for
// generated code).
func scan(path string, max int) ([]long, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
	if err != nil || ast.IsGenerated(f) {
		return nil, err
	}
	var out []long
	ast.Inspect(f, func(n ast.Node) bool {
		name, body := funcOf(n)
		if body == nil {
			return true
		}
		start := fset.Position(n.Pos())
		if lines := fset.Position(body.End()).Line - start.Line + 1; lines > max {
			out = append(out, long{fmt.Sprintf("%s:%d", path, start.Line), name, lines})
		}
		return true
	})
	return out, nil
}

// funcOf names a function declaration (Type.Method for a method) or
// literal, with its body; nil for any other node.
func funcOf(n ast.Node) (string, *ast.BlockStmt) {
	switch x := n.(type) {
	case *ast.FuncDecl:
		if x.Recv == nil || len(x.Recv.List) == 0 {
			return x.Name.Name, x.Body
		}
		t := x.Recv.List[0].Type
		if s, ok := t.(*ast.StarExpr); ok {
			t = s.X
		}
		if g, ok := t.(*ast.IndexExpr); ok {
			t = g.X
		}
		if id, ok := t.(*ast.Ident); ok {
			return id.Name + "." + x.Name.Name, x.Body
		}
		return x.Name.Name, x.Body
	case *ast.FuncLit:
		return "func literal", x.Body
	}
	return "", nil
}
