// Package bench holds the comparative benchmarks for package kernels: each
// benchmark times our kernel and a reference (OpenBLAS cblas_sgemm, or Go's
// built-in copy) in the same run and reports the ratio with b.ReportMetric.
//
// The OpenBLAS side needs cgo and libopenblas-dev and is compiled only with
// the build tag "openblas":
//
//	go test -tags openblas -run '^$' -bench . -benchtime 20x ./gpukit/kernels/bench/
//
// Without the tag the matmul benchmark reports our GFLOP/s and gonum's only.
package bench
