// Command nbgen turns the lesson texts into notebooks, so that each lesson
// has one source of truth: lessons/NN-name.md is written by hand and
// notebooks/NN-name.ipynb is generated from it. Every ```go block becomes a
// code cell and the prose between blocks becomes markdown cells. A block
// opened with "```go NAME" gives its cell a name (kept in the cell's
// metadata), which the prose's <!-- outputs NAME: "..." --> comments use to
// quote that cell's output (scripts/notebook-outputs.py checks them).
//
//	go run ./scripts/nbgen          write notebooks/ from lessons/
//	go run ./scripts/nbgen -check   fail if any notebook differs from its lesson
//
// The first code cell of every lesson must be the module recipe that makes
// the notebook use this repository's gpukit (see FirstCell).
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// cellName is what a code cell's name may be: scripts/notebook-outputs.py
// reads it back from <!-- outputs NAME: ... --> comments.
var cellName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// FirstCell is the GoNB recipe every lesson starts with: it points the
// notebook's temporary module at this repository with both a require and a
// replace (a replace alone makes `go get` ask the module proxy for it),
// the replace's folder relative (GoNB watches every Go file under an
// absolute one and opens them all in gopls at the first completion, which
// then loads the whole repository: 46-52 s of CPU after one Tab, 3-4 s
// with the relative path; filepath.Clean takes the surplus ../ at the root
// away, so the packages keep the paths the build cache knows them by),
// adds every module gpukit's packages need once, turns off GoNB's `go get`
// before each cell (%noautoget), which cost 1.3 s of every cell
// (scripts/cell-times.py --split), and links each cell's program without
// DWARF (%goflags -ldflags=-w): a cell's build 0.78 s instead of 0.90 s, a
// run of lesson 02 37.7-39.7 s of CPU instead of 40.9-44.5 s.
const FirstCell = "!*go mod edit -require=github.com/gpumem/course@v0.0.0-00010101000000-000000000000 -replace=\"github.com/gpumem/course=$(pwd | sed 's|/[^/]*|../|g')${GONB_DIR#/}/..\" && go get github.com/gpumem/course/gpukit/...@v0.0.0-00010101000000-000000000000\n%noautoget\n%goflags -ldflags=-w"

// cell is one notebook cell; a map because code cells need
// "execution_count": null and "outputs", which markdown cells must not have.
type cell map[string]any

type notebook struct {
	Cells         []cell         `json:"cells"`
	Metadata      map[string]any `json:"metadata"`
	NBFormat      int            `json:"nbformat"`
	NBFormatMinor int            `json:"nbformat_minor"`
}

func main() {
	check := flag.Bool("check", false, "report notebooks that differ from their lessons and exit 1; write nothing")
	lessons := flag.String("lessons", "lessons", "folder of lesson texts (NN-name.md)")
	notebooks := flag.String("notebooks", "notebooks", "folder of generated notebooks")
	flag.Parse()
	if err := run(*lessons, *notebooks, *check); err != nil {
		fmt.Fprintln(os.Stderr, "nbgen:", err)
		os.Exit(1)
	}
}

func run(lessonDir, notebookDir string, check bool) error {
	sources, err := filepath.Glob(filepath.Join(lessonDir, "[0-9][0-9]-*.md"))
	if err != nil {
		return err
	}
	if len(sources) == 0 {
		return fmt.Errorf("no lessons (NN-name.md) in %s", lessonDir)
	}
	var drifted []string
	want := map[string]bool{}
	for _, src := range sources {
		text, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		nb, err := convert(string(text))
		if err != nil {
			return fmt.Errorf("%s: %w", src, err)
		}
		name := strings.TrimSuffix(filepath.Base(src), ".md") + ".ipynb"
		want[name] = true
		dst := filepath.Join(notebookDir, name)
		old, _ := os.ReadFile(dst)
		if bytes.Equal(old, nb) {
			continue
		}
		if check {
			drifted = append(drifted, fmt.Sprintf("%s is not generated from %s", dst, src))
			continue
		}
		if err := os.MkdirAll(notebookDir, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, nb, 0o644); err != nil {
			return err
		}
		fmt.Println("nbgen: wrote", dst)
	}
	existing, _ := filepath.Glob(filepath.Join(notebookDir, "*.ipynb"))
	for _, nb := range existing {
		if !want[filepath.Base(nb)] {
			drifted = append(drifted, fmt.Sprintf("%s has no lesson in %s", nb, lessonDir))
		}
	}
	if len(drifted) > 0 {
		return fmt.Errorf("%s\n  run: go run ./scripts/nbgen   (edit lessons/*.md, never the notebooks)", strings.Join(drifted, "\n  "))
	}
	return nil
}

// convert splits a lesson into cells: fenced ```go blocks are code, the
// rest is markdown. Other fences (```text, ```sh) stay inside the markdown.
func convert(text string) ([]byte, error) {
	var cells []cell
	var prose, code []string
	inGo, inOther := false, false
	name := ""
	named := map[string]bool{}
	flushProse := func() {
		body := strings.Trim(strings.Join(prose, "\n"), "\n")
		prose = nil
		if body != "" {
			cells = append(cells, newCell("markdown", body))
		}
	}
	for _, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case inGo && trimmed == "```":
			c := newCell("code", strings.Join(code, "\n"))
			if name != "" {
				c["metadata"] = map[string]any{"name": name}
			}
			cells = append(cells, c)
			code, inGo = nil, false
		case inGo:
			code = append(code, line)
		case inOther:
			prose = append(prose, line)
			if trimmed == "```" {
				inOther = false
			}
		case trimmed == "```go" || strings.HasPrefix(trimmed, "```go "):
			name = strings.TrimSpace(strings.TrimPrefix(trimmed, "```go"))
			if name != "" && !cellName.MatchString(name) {
				return nil, fmt.Errorf("code cell name %q: use letters, digits, - and _", name)
			}
			if named[name] {
				return nil, fmt.Errorf("two code cells are named %q", name)
			}
			if name != "" {
				named[name] = true
			}
			flushProse()
			inGo = true
		case strings.HasPrefix(trimmed, "```"):
			prose = append(prose, line)
			inOther = true
		default:
			prose = append(prose, line)
		}
	}
	if inGo || inOther {
		return nil, fmt.Errorf("unclosed ``` fence")
	}
	flushProse()
	first := -1
	for i, c := range cells {
		if c["cell_type"] == "code" {
			first = i
			break
		}
	}
	if first < 0 || strings.TrimSpace(strings.Join(cells[first]["source"].([]string), "")) != FirstCell {
		return nil, fmt.Errorf("the first ```go block must be exactly:\n  %s", FirstCell)
	}
	for i := range cells {
		cells[i]["id"] = fmt.Sprintf("cell-%02d", i)
	}
	nb := notebook{
		Cells: cells,
		Metadata: map[string]any{
			"kernelspec":    map[string]any{"name": "gonb", "display_name": "Go (gonb)", "language": "go"},
			"language_info": map[string]any{"name": "go", "file_extension": ".go", "mimetype": "text/x-go"},
		},
		NBFormat:      4,
		NBFormatMinor: 5,
	}
	out, err := json.MarshalIndent(nb, "", " ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

func newCell(kind, body string) cell {
	c := cell{"cell_type": kind, "metadata": map[string]any{}, "source": strings.SplitAfter(body, "\n")}
	if kind == "code" {
		c["execution_count"] = nil
		c["outputs"] = []any{}
	}
	return c
}
