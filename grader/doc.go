// Package grader grades the course's exercises: a student's working copy
// against the public tests (Check), a submission against the hidden tests
// (Grade, Batch), every reference solution, variant and stub (Verify), and the
// course's student edition (Release) and Gradescope bundle (Bundle).
//
// # Formats
//
// An exercise is a Go package in exercises/NN-name (the stub the student
// edits, given helpers and public tests), its reference solution in
// solutions/NN-name (only the student files, laid over a copy of the
// exercise), with right answers with harmless extras and plausible wrong
// answers (mutants) beside it (see Variant), and its hidden tests with
// grade.json in grader/hidden/NN-name (see Spec and grader/README.md).
//
// # How a submission is graded
//
// The student's files, the exercise's other non-test files and only the
// hidden tests, whose own package-level names and imports carry a random
// prefix (Note [Reserved names of the hidden tests]), are copied into a
// temporary module whose go.mod requires and
// replaces github.com/gpumem/course with the course root and whose go.sum
// is the course's; `go test -c` builds one test binary offline
// (GOPROXY=off), together with a generated TestMain. Then every source file
// is deleted, and each graded test runs as its own process
// (-test.run '^Name$'). A test passes only when its process exits with a
// code that the generated TestMain chose at random for that test at build
// time and that the submission cannot name, and the binary's test2json
// events report it passed: what the submission prints is never trusted,
// and os.Exit(0) anywhere, changed test flags or a panic earn nothing.
//
// Each process runs under prlimit (CPU time, address space, processes,
// file size), a wall-clock timeout and a process-group kill, inside
// bubblewrap when it works (no network, read-only system, private tmpfs,
// own PID namespace, no course or cache directory visible), never as
// root: a grader running as root runs tests as a dedicated unprivileged
// uid per job. Where bubblewrap cannot run the grader says so once and
// keeps the rest. Feedback shows the tests' messages with file paths
// shortened and any line that quotes the hidden tests removed.
package grader
