//go:build linux

package grader

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/constant"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sinkFuncs are the standard library's functions that reach the file
// system, processes, the arguments or the runtime's knobs: what a student
// must not reach through gpukit (Note [Allow, do not deny]). Every object
// of sinkPackages is one too.
var sinkFuncs = map[string]bool{}

func init() {
	for _, f := range []string{"Open", "OpenFile", "OpenInRoot", "OpenRoot", "Create", "WriteFile", "ReadFile", "Remove", "RemoveAll",
		"Rename", "Mkdir", "MkdirAll", "MkdirTemp", "CreateTemp", "ReadDir", "Symlink", "Link", "Readlink", "Chmod", "Chown", "Lchown",
		"Chtimes", "Truncate", "StartProcess", "Setenv", "Unsetenv", "Clearenv", "Exit", "Chdir", "DirFS", "CopyFS", "NewFile",
		"Stat", "Lstat", "Getwd", "Executable", "FindProcess", "Pipe"} {
		sinkFuncs["os."+f] = true
	}
	for _, f := range []string{"SetGCPercent", "SetMemoryLimit", "SetMaxThreads", "SetMaxStack", "SetPanicOnFault", "SetTraceback", "WriteHeapDump"} {
		sinkFuncs["runtime/debug."+f] = true
	}
	for _, f := range []string{"Set", "Parse", "CommandLine"} {
		sinkFuncs["flag."+f] = true
	}
	sinkFuncs["os.Args"] = true
	sinkFuncs["runtime.GOMAXPROCS"] = true // but GOMAXPROCS(0), which only reads it
}

var sinkPackages = []string{"os/exec", "syscall", "plugin", "golang.org/x/sys/unix", "net", "net/http"}

// TestRefusedAPIIsComplete finds every exported function and method of
// gpukit that reaches, through static calls within the course's module, a
// call that opens a path, starts a process, changes the arguments or flags
// or raises GOMAXPROCS, and checks that refusedAPI lists exactly those.
// (Calls through interfaces and function values are not followed: a
// student's code can hand gpukit only its own functions and the values
// gpukit gave it, none of which is an *os.File.)
func TestRefusedAPIIsComplete(t *testing.T) {
	if testing.Short() {
		t.Skip("short: type-checks gpukit from source")
	}
	t.Parallel()
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	cmd := exec.Command("go", "list", "-e", "-export", "-deps", "-json=ImportPath,Dir,GoFiles,Export,Standard", "./gpukit/...")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "CGO_ENABLED=0")
	out, err := cmd.Output()
	require.NoError(t, err)
	type listed struct {
		ImportPath, Dir, Export string
		GoFiles                 []string
		Standard                bool
	}
	var pkgs []listed
	exports := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p listed
		require.NoError(t, dec.Decode(&p))
		exports[p.ImportPath] = p.Export
		if strings.HasPrefix(p.ImportPath, ModulePath+"/") {
			pkgs = append(pkgs, p)
		}
	}
	calls := map[string]map[string]bool{} // function → functions it uses
	sink := map[string]bool{}
	var exported []string
	for _, p := range pkgs {
		fset := token.NewFileSet()
		var files []*ast.File
		for _, f := range p.GoFiles {
			af, err := parser.ParseFile(fset, filepath.Join(p.Dir, f), nil, parser.SkipObjectResolution)
			require.NoError(t, err)
			files = append(files, af)
		}
		imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
			if file := exports[path]; file != "" {
				return os.Open(file)
			}
			return nil, fmt.Errorf("no export data for %s", path)
		})
		info := &types.Info{Defs: map[*ast.Ident]types.Object{}, Uses: map[*ast.Ident]types.Object{}, Types: map[ast.Expr]types.TypeAndValue{}}
		_, err := (&types.Config{Importer: imp}).Check(p.ImportPath, fset, files, info)
		require.NoError(t, err, p.ImportPath)
		for _, af := range files {
			for _, d := range af.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				fn := info.Defs[fd.Name].(*types.Func)
				name := fn.FullName()
				if fn.Exported() && !strings.Contains(p.ImportPath, "/internal/") && !strings.Contains(p.ImportPath, "/cmd/") {
					exported = append(exported, name)
				}
				uses := map[string]bool{}
				reads := map[*ast.Ident]bool{} // runtime.GOMAXPROCS(0), os.ReadFile("/proc/self/statm")
				ast.Inspect(fd.Body, func(n ast.Node) bool {
					call, ok := n.(*ast.CallExpr)
					if !ok || len(call.Args) == 0 {
						return true
					}
					id := calleeIdent(call.Fun)
					if id == nil {
						return true
					}
					if harmlessCall(info.Uses[id], info.Types[call.Args[0]].Value) {
						reads[id] = true
					}
					return true
				})
				ast.Inspect(fd.Body, func(n ast.Node) bool {
					id, ok := n.(*ast.Ident)
					if !ok || reads[id] {
						return true
					}
					obj := info.Uses[id]
					if obj == nil || obj.Pkg() == nil {
						return true
					}
					key := obj.Pkg().Path() + "." + obj.Name()
					if f, ok := obj.(*types.Func); ok {
						if f.Origin().Signature().Recv() != nil {
							key = f.Origin().FullName()
						}
						uses[f.Origin().FullName()] = true
					}
					_, isConst := obj.(*types.Const)
					_, isType := obj.(*types.TypeName)
					if sinkFuncs[key] || slices.Contains(sinkPackages, obj.Pkg().Path()) && !isConst && !isType {
						sink[name] = true
					}
					return true
				})
				calls[name] = uses
			}
		}
	}
	// Reaching a sink spreads from callee to caller until nothing changes.
	for changed := true; changed; {
		changed = false
		for fn, uses := range calls {
			if sink[fn] {
				continue
			}
			for u := range uses {
				if sink[u] {
					sink[fn], changed = true, true
					break
				}
			}
		}
	}
	var reach []string
	for _, fn := range exported {
		if sink[fn] {
			reach = append(reach, fn)
		}
	}
	slices.Sort(reach)
	var want []string
	for fn := range refusedAPI {
		want = append(want, fn)
	}
	slices.Sort(want)
	assert.Equal(t, reach, want, "refusedAPI must list exactly the gpukit functions that reach files, processes, arguments or runtime knobs:\n%s", strings.Join(reach, "\n"))
}

// harmlessCall reports whether a call of fn whose first argument is the
// constant arg (nil when it is not constant) cannot do what a sink does: a
// constant path (os.ReadFile("/proc/self/statm")), GOMAXPROCS(0), an
// anonymous mapping (syscall.Mmap(-1, ...)), sched_yield; and Madvise and
// Munmap, which act on memory the process already holds.
func harmlessCall(fn types.Object, arg constant.Value) bool {
	if fn == nil || fn.Pkg() == nil {
		return false
	}
	switch fn.Pkg().Path() + "." + fn.Name() {
	case "syscall.Madvise", "syscall.Munmap":
		return true
	case "runtime.GOMAXPROCS":
		return arg != nil && constant.Compare(arg, token.EQL, constant.MakeInt64(0))
	case "syscall.Mmap":
		return arg != nil && constant.Compare(arg, token.EQL, constant.MakeInt64(-1))
	case "syscall.Syscall", "syscall.RawSyscall":
		return arg != nil && constant.Compare(arg, token.EQL, constant.MakeInt64(syscall.SYS_SCHED_YIELD))
	}
	return fn.Pkg().Path() == "os" && arg != nil && arg.Kind() == constant.String
}

// calleeIdent is the identifier a call's function expression names: f in
// f(x), pkg.f(x), v.m(x).
func calleeIdent(e ast.Expr) *ast.Ident {
	switch e := e.(type) {
	case *ast.Ident:
		return e
	case *ast.SelectorExpr:
		return e.Sel
	case *ast.IndexExpr:
		return calleeIdent(e.X)
	}
	return nil
}
