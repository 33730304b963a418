//go:build ignore

// write-variants writes an exercise's mutants (or extras) as submission
// folders, one per variant, named like its patch: the reference's student
// files with the variant's patch applied, as grader verify grades them.
// grader batch grades such a folder as a class, one student per variant:
//
//	go run solutions/write-variants.go --exercise 01-shared-storage --out /tmp/mutants
//	bin/grader batch --exercise 01-shared-storage --submissions /tmp/mutants/ --out /tmp/grades.csv
//
// --kind extras writes the extras instead. Run it from inside the course.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gpumem/course/grader"
)

func main() {
	exercise := flag.String("exercise", "", "the exercise, NN-name")
	kind := flag.String("kind", "mutants", "mutants or extras")
	out := flag.String("out", "", "the folder to write (one sub-folder per variant)")
	flag.Parse()
	if *exercise == "" || *out == "" || flag.NArg() > 0 || *kind != "mutants" && *kind != "extras" {
		fmt.Fprintln(os.Stderr, "usage: go run solutions/write-variants.go --exercise NN-name [--kind mutants|extras] --out DIR")
		os.Exit(2)
	}
	if err := write(*exercise, *kind, *out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// write writes the variants of the kind ("mutants" or "extras") of the
// exercise name into out.
func write(name, kind, out string) error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	c, err := grader.FindCourse(wd)
	if err != nil {
		return err
	}
	ex, err := c.Exercise(name)
	if err != nil {
		return err
	}
	variants, err := ex.Variants()
	if err != nil {
		return err
	}
	n := 0
	for _, v := range variants {
		if v.Mutant != (kind == "mutants") {
			continue
		}
		if err := ex.WriteVariant(v, filepath.Join(out, v.Name)); err != nil {
			return err
		}
		n++
	}
	fmt.Printf("%d %s of %s written to %s\n", n, kind, name, out)
	return nil
}
