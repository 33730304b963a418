# The two commands a newcomer needs:
#   make lab    install what is missing, then open the course in JupyterLab
#               (the classic Notebook on Debian 12, which has no JupyterLab;
#               there make lab-image serves JupyterLab from the classroom image)
#   make test   every check: format, vet, tests, fuzzing, notebooks, cuda build, site
#   make site   every lesson, executed, as static HTML in site/ (checked in headless Chromium)
# Both call scripts/setup.sh, which is idempotent.

HOST ?= 127.0.0.1
PORT ?= 8888
FUZZTIME ?= 300x
FUZZPARALLEL ?= 1
GO ?= go
SITE_DIR ?= site
# The Go checks build with -trimpath: without it the clone's folder is part
# of every package's build-cache key, so each fresh clone (every CI run)
# compiles the whole module again, under -race, -tags cuda and the fuzzers'
# instrumentation alike. -count=1 runs every test every time: with the
# folder out of the key, a fresh clone would otherwise reuse the results of
# an earlier one. -ldflags=-w: the checks' binaries are linked without
# DWARF, which no check reads (a panic's or a race report's lines come from
# the binary's own line tables): a test binary's rebuild and link took
# 2.1-2.2 s of CPU instead of 2.4-2.8 (gpukit/tensor's, four each, in
# turn), over the ~230 test binaries and commands make test links (the
# grader links its builds so already).
GOBUILDFLAGS := -trimpath -ldflags=-w
# JupyterLab that scripts/setup.sh installed into a venv of the course's
# (macOS without Homebrew), found after every other.
export PATH := $(PATH):$(CURDIR)/bin/jupyter-venv/bin
GOTEST ?= $(GO) test $(GOBUILDFLAGS) -count=1

.PHONY: cross cell-times learner-check lab lab-image lab-image-test lab-trixie-test setup test fmt vet nbcheck unit unit-gpukit unit-grader fuzz cuda gpu-bundle gpu-check gpu-check-dry notebooks notebooks-gen bench site grader-verify mutation image image-test image-multiarch image-push image-test-arm64 image-cuda image-cuda-test image-grader chart-hub-test deploy-check hub-test

# JupyterLab where it is installed (Debian 13: setup installs it); Debian 12
# packages no JupyterLab, so there the classic Notebook serves the course.
lab: setup
	@root=$$( [ "$$(id -u)" = 0 ] && echo --allow-root ); \
	if command -v jupyter-lab >/dev/null 2>&1; then \
		echo "lab: starting JupyterLab on http://$(HOST):$(PORT)/lab (the URL with its token follows; Ctrl-C stops it)"; \
		PATH="$(CURDIR)/bin:$$PATH" exec jupyter lab --no-browser --ip=$(HOST) --port=$(PORT) \
			--ServerApp.root_dir="$(CURDIR)" --LabApp.default_url=/lab/tree/notebooks $$root; \
	else \
		echo "lab: JupyterLab is not installed (Debian 12 has no package for it): starting the classic Notebook on http://$(HOST):$(PORT)/ instead (the URL with its token follows; Ctrl-C stops it; make lab-image serves JupyterLab from the classroom image)"; \
		PATH="$(CURDIR)/bin:$$PATH" exec jupyter notebook --no-browser --ip=$(HOST) --port=$(PORT) \
			--notebook-dir="$(CURDIR)" --NotebookApp.default_url=/tree/notebooks $$root; \
	fi

# SETUP_DONE=1 says setup already ran earlier in this same run (make test's
# lanes after make test's own setup, CI's make test after its first step),
# so it is not run again: its warm-ups (go build, grader check --all) cost
# 10-20 s each time even with a warm cache.
setup:
ifeq ($(SETUP_DONE),)
	@bash scripts/setup.sh
else
	@echo "setup: already run in this run (SETUP_DONE=$(SETUP_DONE)): not again"
endif

# JupyterLab from the classroom image (make image), serving this working tree
# mounted into it: edits land in the files here. For a machine without
# JupyterLab (Debian 12); needs podman.
lab-image:
	@bash scripts/lab-image.sh $(HOST) $(PORT)

# make lab-image started and checked: JupyterLab answers on /lab with this
# tree's notebooks, a file saved in JupyterLab is the tree owner's file here,
# the gonb kernel runs, and stopping it (SIGTERM) removes the container
# (scripts/lab-image-test.sh; 5 to 10 s; make image-test runs it too).
lab-image-test:
	@bash scripts/lab-image-test.sh

# The README's first command on a fresh Debian 13 (trixie) container: make lab
# installs JupyterLab with apt and serves the lessons with the gonb kernel
# (scripts/lab-trixie-test.sh). Not in CI: it needs Debian's mirror and the Go
# module proxy, and takes several minutes.
lab-trixie-test:
	@bash scripts/lab-trixie-test.sh

# The checks run in two lanes at once (scripts/test-lanes.sh): gpukit's and
# the grader's tests, the other platforms' builds and the cuda build in
# one; the notebooks and the site, the exercises' verification and fuzzing
# in the other; the two keep both cores busy (the machine's busy and idle
# time while they run is printed at the end), and take about as long as
# each other.
test: setup fmt vet nbcheck
	@bash scripts/test-lanes.sh "$(MAKE)"

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './bin/*')); \
	if [ -n "$$out" ]; then echo "gofmt: these files need gofmt -w:"; echo "$$out"; exit 1; fi; \
	echo "gofmt: ok"

# grader/hidden holds hidden tests that compile only beside a student's file;
# exercises/ holds stubs whose tests fail until a student solves them.
vet:
	$(GO) vet $(GOBUILDFLAGS) $$($(GO) list ./... | grep -v '/grader/hidden/')

# The notebooks are generated from lessons/*.md; this fails when they drift.
nbcheck:
	$(GO) run $(GOBUILDFLAGS) ./scripts/nbgen -check

# exercises/ and solutions/ are checked by grader-verify: the stubs fail
# their public tests by design. A race-enabled binary sleeps a second
# before it exits (GORACE's atexit_sleep_ms, for goroutines still running
# to report races): after a test binary's last test that sleep finds
# nothing, and it cost a second a package.
unit: unit-gpukit unit-grader

# gpukit under the race detector where its code can run concurrently
# (scripts/race-packages.sh: a package that imports sync, starts a
# goroutine or runs tests in parallel), the other packages plainly. The
# tests that replay whole recordings or decode whole snapshots
# (alloc/snapshot, internal/pickle, cmd/memtrace) or simulate hundreds of
# meta cards (distributed) are one goroutine's work: they skip themselves
# under -race (gpukit/internal/racetest) and run in the second, plain pass
# of their packages (on a loaded two-core machine: 337, 422 and 430 s
# under -race, 10, 33 and 12 s without); gpukit/kernels' dense checks
# (every 1021st float32 against the float64 functions and the Go
# references, every op on large tensors) shrink under -race, where the
# parallel pieces are what is checked (29 s there before, 15 s now, 6 s
# for all of it without). scripts/race-packages.sh lists a package whose
# tests import racetest for both passes.
unit-gpukit:
	GORACE=atexit_sleep_ms=0 $(GOTEST) -race -timeout 30m $$(bash scripts/race-packages.sh race ./gpukit/...)
	$(GOTEST) $$(bash scripts/race-packages.sh plain ./gpukit/...)
	$(GOTEST) $$($(GO) list ./... | grep -v -e '/gpukit/' -e '/grader' -e '/exercises/')
	@bash scripts/install-cuda-headers-test.sh >/dev/null && echo "install-cuda-headers: ok"
	@bash scripts/race-packages-test.sh
	@bash scripts/test-lanes-test.sh
	@bash scripts/run-notebooks-test.sh
	@bash scripts/fuzz-test.sh
	/usr/bin/python3 scripts/notebook_outputs_test.py -q
	/usr/bin/python3 scripts/prediction_check_test.py -q
	/usr/bin/python3 scripts/notebook_same_test.py -q
	/usr/bin/python3 scripts/gpu_judge_test.py -q
	/usr/bin/python3 scripts/site_check_test.py -q

# The grader's package grades its fixture course dozens of times under the
# race detector: 400 s here on a loaded two-core machine, past go test's
# default ten minutes on one three times slower, so the limit is 30
# minutes (a hang still ends).
unit-grader:
	GORACE=atexit_sleep_ms=0 $(GOTEST) -race -timeout 30m $$($(GO) list ./grader/... | grep -v /grader/hidden/)

# Every fuzz target, briefly, one at a time (scripts/fuzz.sh): each
# package's tests built once with the fuzzing instrumentation, each target
# run from that binary for FUZZTIME inputs (a count: Go 1.26's fuzzer can
# fail spuriously when a duration runs out, go.dev/issue/75804) with
# FUZZPARALLEL workers.
fuzz:
	@GO=$(GO) GOBUILDFLAGS="$(GOBUILDFLAGS)" FUZZTIME=$(FUZZTIME) FUZZPARALLEL=$(FUZZPARALLEL) bash scripts/fuzz.sh

# The cuda build needs CUDA headers (scripts/install-cuda-headers.sh); it is
# compiled and vetted here (go vet type-checks every package's tests), and
# run only on a machine with an NVIDIA GPU; NVRTC compiles every CUDA
# kernel, which needs no GPU. go build links every command with the driver;
# of the tests, those of the packages with cuda files (gpukit/device and
# gpukit/device/cuda) are linked too: every other test binary links the
# same cgo code through gpukit/device; linking all 38 took 48 s of CPU
# here (25 s of the step's 57 s) and checked nothing that the commands'
# links and these two do not (make gpu-bundle links them all for a GPU
# machine). The
# kernels' PTX and the CPU emulation's binaries are cached across runs in
# ~/.cache/gpukit/emu (GPUKIT_EMU_CACHE=off: compiled every time), keyed by
# NVRTC's or g++'s version, the options and the source: 50 → 21 s of CPU
# for the nvrtc tests when no kernel changed. (On a machine whose thread
# starts are dear, those tests took 47-50 s of CPU while the emulation made
# a thread per GPU thread and block, 32-37 s since it makes one per thread
# of a block; gpukit/device/cuda/emu_test.go.)
cuda:
	@if [ -f /usr/include/cuda.h ] || [ -n "$${CUDA_PATH:-}" ]; then \
		echo "cuda: go build -tags cuda ./... && go vet -tags cuda ./... && NVRTC compiles every kernel"; \
		$(GO) build $(GOBUILDFLAGS) -tags cuda ./... && $(GO) vet $(GOBUILDFLAGS) -tags cuda $$($(GO) list ./... | grep -v /grader/hidden/) && \
		tmp=$$(mktemp -d) && $(GOTEST) -tags cuda -c -o "$$tmp" $$(grep -rl --include='*.go' '^//go:build.*cuda' gpukit | xargs -n1 dirname | sort -u | sed 's|^|./|') && rm -rf "$$tmp" && \
		$(GOTEST) -tags nvrtc ./gpukit/device/cuda/; \
	else \
		echo "SKIP cuda build: CUDA headers not installed (run: sudo bash scripts/install-cuda-headers.sh)"; \
	fi

# The cuda build as one folder to carry to a GPU machine that has no Go
# toolchain (gpu-bundle/, at most 60 MiB): every gpukit test binary,
# memtrace, gpucheck and the notebooks as one program, all -tags cuda,
# linking only the driver (scripts/gpu-bundle.sh).
gpu-bundle:
	@GO=$(GO) bash scripts/gpu-bundle.sh

# On a machine with an NVIDIA GPU and PyTorch, from gpu-bundle/: package
# tests, lessons, the PyTorch judge, the CUDA context and timings, in one
# report (gpu-check-out/report.md and report.json); exit 1 on any failure.
gpu-check:
	@bash scripts/gpu-check.sh

# gpu-check's whole pipeline on sim, without a GPU or PyTorch: it must run
# end to end and fail only where a GPU or PyTorch is missing.
gpu-check-dry:
	@GO=$(GO) bash scripts/gpu-check-dry.sh

# The laptops students bring (issue 38): go build ./... for darwin/arm64,
# darwin/amd64, linux/arm64 and windows/amd64, go vet of the grader for
# darwin and windows, then on linux/arm64 under qemu-user-static (binfmt,
# registered here as root; a SKIP line otherwise) gpukit/kernels' tests
# (-short) and the grader grading and checking one exercise
# (scripts/cross.sh says why those).
cross:
	@GO=$(GO) GOBUILDFLAGS="$(GOBUILDFLAGS)" bash scripts/cross.sh

# Every reference solution and extras score full marks, every mutant loses
# points (the references' tests and each test a mutant fails run twice) and every stub scores zero on the hidden
# tests (grader/README.md); --jobs defaults to the number of CPUs.
# Off Linux (make test on a Mac) verify runs the course's own references
# and mutants with no sandbox, which it refuses to do unless told.
grader-verify:
	$(GO) run $(GOBUILDFLAGS) ./grader/cmd/grader verify $$([ "$$(uname -s)" = Linux ] || echo --sandbox none)

# Mutation testing of every exercise's reference solution against its hidden
# tests (grader/cmd/mutation, with gremlins pinned as a tool in go.mod): each
# operator of the student files changed in turn, the hidden tests run on each
# mutant; exit 1 when an exercise's hidden tests kill under 90 % of its
# mutants (those listed in grader/hidden/NN-name/equivalent-mutants.txt
# count as killed). One mutant at a time, nice'd: 450 mutants, each a build
# and a run of the hidden tests, in about 20 minutes on two shared cores (50
# when other tests keep them busy). Not part of make test. EXERCISES="01-shared-storage
# 02-expandable" runs some; the results are in grader/README.md.
mutation:
	EXERCISES="$(EXERCISES)" nice -n 15 $(GO) run $(GOBUILDFLAGS) ./grader/cmd/mutation --workers 1

# Executes every notebook once; the executed copies stay in $(SITE_DIR)/executed
# for the site.
notebooks:
	@SITE_DIR="$(SITE_DIR)" bash scripts/run-notebooks.sh

# The lessons as static HTML (one page each and an index) in $(SITE_DIR)/,
# from the notebooks that `notebooks` executed, then checked in headless
# Chromium: each page loads, its images decode, no output is an error.
site: setup notebooks
	@bash scripts/build-site.sh "$(SITE_DIR)"
	@/usr/bin/python3 scripts/site-check.py "$(SITE_DIR)"

# How long a learner waits for each cell: 20 cells of lesson 02 through one
# gonb kernel, and where one cell's time goes (go get, go build, the run).
# Not part of make test (it measures the machine).
cell-times: setup
	/usr/bin/python3 scripts/cell-times.py --split $(NOTEBOOK)

# What a new student waits for, on a clean clone of REV (default HEAD) with
# empty Go caches: setup, lesson 00's first answer, the first grader check
# and 20 cells of lesson 02 (scripts/learner-check.sh; 5 to 15 minutes, the
# Go module proxy needed; not in CI).
learner-check:
	@bash scripts/learner-check.sh $(REV)

# Regenerate notebooks/ after editing lessons/.
notebooks-gen:
	$(GO) run ./scripts/nbgen

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./gpukit/...

# gpukit against PyTorch on this machine, side by side (issue 22; needs
# python3-torch and libopenblas0-pthread). Not part of make test.
# gpukit beside PyTorch 1.13 (Debian 12), 2.6 (Debian 13, in a chroot that
# scripts/trixie-torch.sh makes on first use, as root) as installed and
# with a warm heap, and the memory bandwidth: gpukit/kernels/README.md.
# THREADS, REPS, ONLY and SIDES as scripts/bench-torch.sh says.
.PHONY: bench-torch
bench-torch:
	bash scripts/bench-torch.sh

# The classroom image, built with podman from base images made on this
# machine (no registry needed; scripts/image-base.sh), then checked in a
# running container with the network off. It is built from the student
# edition (scripts/image-context.sh), never from the checkout. With docker
# and Docker Hub, see the Dockerfile's first lines.
image:
	@bash scripts/image-build.sh

image-test: image
	@bash scripts/image-test.sh

# Both architectures in one manifest list, gpumem-course:multiarch
# (linux/amd64 and linux/arm64, the second built under qemu: slow, not in
# CI; scripts/image-multiarch.sh). image-push pushes the list to
# REGISTRY (podman login first). image-test-arm64 is make image-test's
# checks on the arm64 image, under qemu (scripts/image-test.sh: those that
# check the image, with lesson 02 for the notebooks; about 7 minutes).
image-multiarch:
	@bash scripts/image-multiarch.sh

image-push:
	@[ -n "$(REGISTRY)" ] || { echo "image-push: set REGISTRY, e.g. make image-push REGISTRY=registry.example.org/course" >&2; exit 1; }
	@PUSH="$(REGISTRY)/gpumem-course:latest" bash scripts/image-multiarch.sh

image-test-arm64:
	@IMAGE=gpumem-course:arm64 bash scripts/image-test.sh

# The GPU variant, gpumem-course:cuda: the same image with Debian's CUDA 11.8
# headers and gpukit built with -tags cuda. image-cuda-test checks, without a
# GPU, that the cuda build compiles, vets and links inside it and that NVRTC
# compiles every kernel. Not in CI: 7 GB and about 7 minutes more (docs/instructors.md).
image-cuda:
	@IMAGE=gpumem-course:cuda GPUKIT_TAGS=cuda bash scripts/image-build.sh

image-cuda-test: image-cuda
	@IMAGE=gpumem-course:cuda bash scripts/image-cuda-test.sh

# The grading Job's image, gpumem-grader: the classroom image plus the hidden
# tests (deploy/k8s/Dockerfile.grader). Never give it to students.
image-grader: image
	podman build --isolation chroot -t gpumem-grader -f deploy/k8s/Dockerfile.grader .

# values.yaml and the image against the chart's JupyterHub (5.x, from Debian
# trixie) without a cluster: students log in, start servers, run a cell and
# keep their work across a restart (deploy/k8s/test-chart-hub.sh). Not in CI:
# the hub image takes about 4 minutes to make the first time.
chart-hub-test: image
	@bash deploy/k8s/test-chart-hub.sh

# The Kubernetes manifests decoded strictly into k8s.io/api types, values.yaml
# validated against the Zero to JupyterHub chart's values schema (vendored,
# chart 4.2.0), both in their own module (deploy/k8s/validate), and the
# classroom image's build context checked for solutions and hidden tests.
deploy-check:
	@bash scripts/image-context-test.sh
	cd deploy/k8s/validate && $(GO) test ./...

# The class servers' security tests, as root: the spawner's and the
# authenticator's unit tests (deploy/hub/test_gpumem.py), every attack a
# student was found to have on the one-machine hub (deploy/hub/test-hub.sh: the hub on
# loopback with three students, about 5 minutes; needs jupyterhub from
# Debian and npm, which deploy/hub/install.sh installs), the grader's lock
# files (deploy/hub/test-grader-locks.sh), the grading Job's command against
# real submissions (deploy/k8s/test-grade-job.sh) and what the image is built
# from (scripts/image-context-test.sh). Not in CI: root, users and cgroups.
hub-test:
	@/usr/bin/python3 deploy/hub/test_gpumem.py
	@bash scripts/image-context-test.sh
	@bash deploy/k8s/test-grade-job.sh
	@bash deploy/hub/test-hub.sh
	@bash deploy/hub/test-grader-locks.sh
