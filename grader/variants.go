package grader

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Variants are other versions of an exercise's student files, kept beside
// its reference solution for grader verify: right answers with harmless
// extras, which must keep full marks, and mutants, plausible wrong answers
// which must lose points. Each is a unified diff against the reference
// (patch.go), so that a variant always tests the reference as it is: a
// change to the reference that a variant's hunks no longer match makes
// verify fail, naming the patch and the hunk.
const (
	extrasDir  = "extras"  // solutions/NN-name/extras/NAME.patch
	mutantsDir = "mutants" // solutions/NN-name/mutants/NAME.patch
	patchExt   = ".patch"
)

// Variant is one patch of extras/ or mutants/: a unified diff of some of
// the student files against the reference's, opened by a line that says
// what it changes, "Extra: ..." or "Mutant: ...", before the first file
// header.
type Variant struct {
	Name   string // the patch's file name without ".patch"
	Patch  string // the patch file
	Mutant bool   // a mutant; otherwise a right answer with extras
	Says   string // the description, without "Extra: " or "Mutant: "; empty when it has neither
}

// Kind is "mutant" or "extras".
func (v Variant) Kind() string {
	if v.Mutant {
		return "mutant"
	}
	return "extras"
}

// word opens the description of a variant of v's kind.
func (v Variant) word() string {
	if v.Mutant {
		return "Mutant: "
	}
	return "Extra: "
}

// dir is the folder of solutions/NN-name that holds variants of v's kind.
func (v Variant) dir() string {
	if v.Mutant {
		return mutantsDir
	}
	return extrasDir
}

// Variants lists the exercise's extras and mutants (the .patch files of
// extras/ and mutants/), each kind sorted by name. An exercise without a
// solutions folder (a student edition) has none.
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
		var list []Variant
		for _, e := range entries {
			if name, ok := variantName(e); ok {
				v := Variant{Name: name, Patch: filepath.Join(ex.SolutionDir, kind, e.Name()), Mutant: kind == mutantsDir}
				v.Says = variantSays(v)
				list = append(list, v)
			}
		}
		sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
		out = append(out, list...)
	}
	return out, nil
}

// variantName is the name of the variant in the entry e of extras/ or
// mutants/: a file NAME.patch; ok is false for anything else.
func variantName(e os.DirEntry) (name string, ok bool) {
	name, ok = strings.CutSuffix(e.Name(), patchExt)
	return name, ok && e.Type().IsRegular() && name != "" && !strings.HasPrefix(name, ".")
}

// variantSays is the description of the patch of v without its opening
// "Extra: " or "Mutant: ", or "" when it does not open so.
func variantSays(v Variant) string {
	data, err := os.ReadFile(v.Patch)
	if err != nil {
		return ""
	}
	lines := strings.Split(string(data), "\n")
	var desc []string
	for i := 0; i < len(lines) && !startsFile(lines, i); i++ {
		desc = append(desc, lines[i])
	}
	text, ok := strings.CutPrefix(description(desc), v.word())
	if !ok {
		return ""
	}
	return strings.TrimSpace(text)
}

// variantName is v's patch file as messages name it, from the course
// root: solutions/NN-name/mutants/NAME.patch.
func (ex *Exercise) variantName(v Variant) string {
	return filepath.ToSlash(filepath.Join("solutions", ex.Name, v.dir(), v.Name+patchExt))
}

// VariantFiles returns the student files as the variant has them, by
// name: the reference's with the variant's patch applied. An error says
// why the patch does not apply (for a reference changed since the patch
// was made: which hunk, which line), or that it changes a file that is
// not a student file.
func (ex *Exercise) VariantFiles(v Variant) (map[string][]byte, error) {
	if ex.Spec == nil {
		return nil, fmt.Errorf("grader: %s has no grade.json, so no student files to patch", ex.Name)
	}
	data, err := os.ReadFile(v.Patch)
	if err != nil {
		return nil, fmt.Errorf("grader: %w", err)
	}
	p, err := parsePatch(ex.variantName(v), data)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	for _, f := range ex.Spec.StudentFiles {
		data, err := os.ReadFile(filepath.Join(ex.SolutionDir, f))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("grader: %w", err)
		}
		files[f] = data
	}
	return p.apply(files, ex.Spec.StudentFiles)
}

// WriteVariant writes the student files of the variant (VariantFiles)
// into dir, which it makes if need be: a submission folder, as a student
// would hand in.
func (ex *Exercise) WriteVariant(v Variant, dir string) error {
	files, err := ex.VariantFiles(v)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("grader: %w", err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return fmt.Errorf("grader: %w", err)
		}
	}
	return nil
}
