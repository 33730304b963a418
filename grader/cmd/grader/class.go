package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/gpumem/course/grader"
	"github.com/gpumem/course/grader/collect"
	"github.com/gpumem/course/internal/atomicfile"
)

// studentName is what an account of the class may be called: the names
// become folder and file names here.
var studentName = regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,31}$`)

// lookupStudent finds an account; the tests give made-up ones.
var lookupStudent = collect.Lookup

// classExercise finds the exercise for collect and handback, which need
// its grade.json but no sandbox.
func classExercise(c *common, name string) (*grader.Exercise, error) {
	course, err := c.findCourse()
	if err != nil {
		return nil, err
	}
	ex, err := course.Exercise(name)
	if err != nil {
		return nil, err
	}
	if ex.Spec == nil {
		return nil, fmt.Errorf("grader: %s has no hidden tests here (a student edition?)", name)
	}
	return ex, nil
}

// classArgs parses a class command's arguments (flags, then the students'
// names) and finds its exercise and students; missing says what a usage
// error asks for, or "".
func classArgs(fs *flag.FlagSet, c *common, exercise *string, args []string, missing func() string) (*grader.Exercise, []collect.Student, error) {
	names, err := parse(fs, args)
	if err != nil {
		return nil, nil, err
	}
	if m := missing(); m != "" {
		return nil, nil, errUsage{m}
	}
	ex, err := classExercise(c, *exercise)
	if err != nil {
		return nil, nil, err
	}
	students, err := classStudents(names)
	if err != nil {
		return nil, nil, err
	}
	return ex, students, nil
}

func classStudents(names []string) ([]collect.Student, error) {
	if len(names) == 0 {
		return nil, errUsage{"name the students, like: alice bob"}
	}
	var out []collect.Student
	for _, n := range names {
		if !studentName.MatchString(n) {
			return nil, errUsage{fmt.Sprintf("%q is not an account name of the class", n)}
		}
		st, err := lookupStudent(n)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// cmdCollect copies each student's files of an exercise out of their home
// into OUT/NAME, as root, without running anything as the student
// (grader/collect). What could not be read is written to OUT/.notes/NAME.txt
// for handback to give the student, and printed.
func cmdCollect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("collect", flag.ContinueOnError)
	var c common
	c.register(fs)
	exercise := fs.String("exercise", "", "the exercise, NN-name")
	out := fs.String("out", "", "the submissions folder to fill, one sub-folder per student")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: grader collect --exercise NN-name --out DIR STUDENT...")
		fs.PrintDefaults()
	}
	ex, students, err := classArgs(fs, &c, exercise, args, func() string {
		if *exercise == "" || *out == "" {
			return "collect needs --exercise NN-name and --out DIR"
		}
		return ""
	})
	if err != nil {
		return err
	}
	notes := filepath.Join(*out, ".notes")
	if err := os.MkdirAll(notes, 0o700); err != nil {
		return fmt.Errorf("grader: %w", err)
	}
	refused := 0
	for _, st := range students {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		dir := filepath.Join(*out, st.Name)
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("grader: %w", err)
		}
		if err := os.Mkdir(dir, 0o700); err != nil {
			return fmt.Errorf("grader: %w", err)
		}
		var problems, got []string
		for _, f := range ex.Spec.StudentFiles {
			data, err := collect.Read(st, filepath.Join("course", "exercises", ex.Name, f))
			if errors.Is(err, collect.ErrRefused) {
				problems = append(problems, err.Error())
				continue
			}
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, f), data, 0o600); err != nil {
				return fmt.Errorf("grader: %w", err)
			}
			got = append(got, f)
		}
		note := filepath.Join(notes, st.Name+".txt")
		if len(problems) == 0 {
			os.Remove(note)
			fmt.Fprintf(stdout, "collect %s: %s: %s\n", ex.Name, st.Name, strings.Join(got, ", "))
			continue
		}
		refused++
		text := strings.Join(problems, "\n")
		if err := atomicfile.WriteFile(note, []byte(text+"\n"), 0o600); err != nil {
			return fmt.Errorf("grader: %w", err)
		}
		fmt.Fprintf(stdout, "collect %s: %s: %s\n", ex.Name, st.Name, strings.ReplaceAll(text, "\n", "; "))
	}
	fmt.Fprintf(stdout, "collect %s: %d students, %d with a file that could not be read (graded as the stub)\n", ex.Name, len(students), refused)
	return nil
}

// cmdHandback writes each student's feedback (batch --feedback) to
// ~/course/feedback/NN-name.json in their home, as root, without following
// a link they planted (grader/collect), with what collect could not read
// put first in its output.
func cmdHandback(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("handback", flag.ContinueOnError)
	var c common
	c.register(fs)
	exercise := fs.String("exercise", "", "the exercise, NN-name")
	feedback := fs.String("feedback", "", "the folder of NAME.json that batch --feedback wrote")
	submissions := fs.String("submissions", "", "the folder collect filled (its .notes go to the students)")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: grader handback --exercise NN-name --feedback DIR [--submissions DIR] STUDENT...")
		fs.PrintDefaults()
	}
	ex, students, err := classArgs(fs, &c, exercise, args, func() string {
		if *exercise == "" || *feedback == "" {
			return "handback needs --exercise NN-name and --feedback DIR"
		}
		return ""
	})
	if err != nil {
		return err
	}
	handed, failed := 0, 0
	for _, st := range students {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		data, err := os.ReadFile(filepath.Join(*feedback, st.Name+".json"))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("grader: %w", err)
		}
		if *submissions != "" {
			if note, err := os.ReadFile(filepath.Join(*submissions, ".notes", st.Name+".txt")); err == nil {
				if data, err = withNote(data, string(note)); err != nil {
					return fmt.Errorf("grader: %s's feedback: %w", st.Name, err)
				}
			}
		}
		if err := collect.Write(st, filepath.Join("course", "feedback", ex.Name+".json"), data); err != nil {
			fmt.Fprintf(stderr, "grader: could not hand %s their feedback: %v\n", st.Name, err)
			failed++
			continue
		}
		handed++
	}
	fmt.Fprintf(stdout, "handback %s: feedback handed to %d students (~/course/feedback/%s.json), %d could not be\n", ex.Name, handed, ex.Name, failed)
	return nil
}

// withNote puts collect's note before the output of a Gradescope results
// file, keeping every other field as it was.
func withNote(results []byte, note string) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(results, &m); err != nil {
		return nil, err
	}
	out, _ := m["output"].(string)
	note = strings.TrimSpace(note)
	if out != "" {
		note += "\n\n" + out
	}
	m["output"] = note
	return json.MarshalIndent(m, "", "  ")
}
