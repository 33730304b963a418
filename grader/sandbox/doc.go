// Package sandbox runs an untrusted program (a test binary of a student's
// submission) under limits: rlimits (CPU time, address space, processes,
// file size, no core files), a wall-clock timeout, a session and process
// group of its own, and, when the caller is root, an unprivileged uid of a
// pool held through lock files, a cgroup per run (memory, tasks and one CPU
// for all its processes together) and the clean-up of whatever that uid
// left; with bubblewrap, all namespaces unshared, a read-only system and a
// private, sized /tmp. It takes a path, arguments and Limits, and knows
// nothing of exercises or grading: the grader (package grader) decides
// what the limits are and what the outcome means.
//
// The design, the threat model and the residual risks are in the grader's
// README (grader/README.md, "How a submission is graded").
package sandbox
