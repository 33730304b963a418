package grader

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Variants are other versions of an exercise's student files, kept beside
// its reference solution for grader verify: right answers with harmless
// extras, which must keep full marks, and mutants, plausible wrong answers
// which must lose points.
const (
	extrasDir  = "extras"  // solutions/NN-name/extras/NAME/
	mutantsDir = "mutants" // solutions/NN-name/mutants/NAME/
)

// Variant is one folder of extras/ or mutants/: some of the student files
// (the reference's fill in the others), each opening with a comment line
// "// Extra: ..." or "// Mutant: ..." that says what it changes.
type Variant struct {
	Name   string // the folder's name
	Dir    string
	Mutant bool   // a mutant; otherwise a right answer with extras
	Says   string // the opening comment, without "Extra: " or "Mutant: "
}

// Kind is "mutant" or "extras".
func (v Variant) Kind() string {
	if v.Mutant {
		return "mutant"
	}
	return "extras"
}

// Variants lists the exercise's extras and mutants, each kind sorted by
// name. An exercise without a solutions folder (a student edition) has
// none.
func (ex *Exercise) Variants() ([]Variant, error) {
	var out []Variant
	for _, kind := range []string{extrasDir, mutantsDir} {
		entries, err := os.ReadDir(filepath.Join(ex.SolutionDir, kind))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("grader: %w", err)
		}
		for _, e := range entries {
			if e.IsDir() {
				out = append(out, Variant{Name: e.Name(), Dir: filepath.Join(ex.SolutionDir, kind, e.Name()), Mutant: kind == mutantsDir})
			}
		}
	}
	for i := range out {
		out[i].Says = variantComment(out[i])
	}
	return out, nil
}

// variantComment is the text of the "// Mutant: " or "// Extra: " line that
// opens the first of the variant's files that has one.
func variantComment(v Variant) string {
	prefix := "// Extra: "
	if v.Mutant {
		prefix = "// Mutant: "
	}
	files, _ := goFiles(v.Dir, false)
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(v.Dir, f))
		if err != nil {
			continue
		}
		first, _, _ := strings.Cut(string(data), "\n")
		if text, ok := strings.CutPrefix(strings.TrimSpace(first), prefix); ok {
			return strings.TrimSpace(text)
		}
	}
	return ""
}
