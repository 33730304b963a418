package grader

// Status is the outcome of one test, spelled as Gradescope's results.json
// and the grader's JSON spell it.
type Status string

const (
	StatusPassed  Status = "passed"
	StatusFailed  Status = "failed"  // a failed assertion, or a pass the test did not report
	StatusTimeout Status = "timeout" // past the test's timeout
	StatusCrashed Status = "crashed" // killed, out of memory or processes, or failed while loading
	StatusNotRun  Status = "not_run" // the code does not compile, or its files are missing
)
