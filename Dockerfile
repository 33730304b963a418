# The classroom image: JupyterLab 4 (Debian 13 trixie's) with the Go (gonb) kernel and the
# student edition of the course, following the Jupyter docker-stacks
# conventions (user jovyan, uid 1000, port 8888, Jupyter as the default
# command). Notebooks and the grader work with the network off: every module
# is in the image's module cache and Go is told to use only it (GOPROXY=off).
#
# It is every student's container, so it is built from the student edition
# (grader release: no solutions, no hidden tests, nothing untracked), never
# from the instructor's checkout; the build stops if the context holds
# solutions/ or grader/hidden/. The grading Job's image adds the hidden tests
# on top (deploy/k8s/Dockerfile.grader).
#
#   go run ./grader/cmd/grader release --out /tmp/edition
#   docker build -t gpumem-course -f Dockerfile /tmp/edition
#   docker run --rm -p 8888:8888 gpumem-course
#
# The GPU variant (GPUKIT_TAGS=cuda) adds CUDA 11.8 from Debian (make
# image-cuda), or uses NVIDIA's CUDA image as its base; it runs on a machine
# with an NVIDIA GPU and the NVIDIA container toolkit:
#   docker build --build-arg BASE=nvidia/cuda:12.4.1-devel-ubuntu22.04 --build-arg GPUKIT_TAGS=cuda -t gpumem-course:cuda -f Dockerfile /tmp/edition
#   docker run --rm --gpus all -p 8888:8888 gpumem-course:cuda
# gorgonia.org/cu v0.9.6 compiles against CUDA 11.8 and 12.x headers, not 13.
#
# Without a registry (CI, or podman on an isolated network), `make image`
# builds the two base images locally (scripts/image-base.sh) and passes them
# as BASE, GO_IMAGE and BUILD_GO_IMAGE.
#
# Both architectures, linux/amd64 and linux/arm64 (Apple silicon), build from
# this one file: `make image-multiarch`, or
#   docker buildx build --platform linux/amd64,linux/arm64 -t gpumem-course -f Dockerfile /tmp/edition
# Go compiles on the build machine's own architecture (BUILD_GO_IMAGE, for
# $BUILDPLATFORM) and cross-compiles for the image's ($TARGETARCH): the
# tools, the warm build cache. Its go, compile and link are static binaries,
# so they run directly inside the other architecture's build container;
# only what the image itself runs (apt, the tools' first start, gopls's
# warm-up below) is emulated by qemu there. The cache it leaves is the one
# the image's own Go would have made: a release's compiler reports the same
# version line on every architecture, and that line, not the binary, is in
# the cache keys.

# (Every FROM names its platform: podman 4.3 neither expands $BUILDPLATFORM
# there, hence BUILD_GO_PLATFORM, which make image sets, nor keeps the
# target platform for a stage after one that names another.)
ARG GO_IMAGE=golang:1.26-trixie
ARG BUILD_GO_IMAGE=golang:1.26-trixie
ARG BUILD_GO_PLATFORM=
ARG BASE=debian:trixie
FROM --platform=${TARGETPLATFORM} ${GO_IMAGE} AS go
FROM --platform=${BUILD_GO_PLATFORM:-$BUILDPLATFORM} ${BUILD_GO_IMAGE} AS build-go

FROM --platform=${TARGETPLATFORM} ${BASE} AS tools
ARG NB_USER=jovyan
ARG NB_UID=1000
ARG NB_GID=100

USER root
ENV DEBIAN_FRONTEND=noninteractive \
    PATH=/usr/local/go/bin:$PATH \
    HOME=/home/${NB_USER} \
    GOPATH=/home/${NB_USER}/go \
    GOCACHE=/home/${NB_USER}/.cache/go-build \
    GOTOOLCHAIN=local \
    JUPYTER_DATA_DIR=/usr/local/share/jupyter \
    LIBRARY_PATH=/usr/local/cuda/lib64/stubs
# (LIBRARY_PATH lets the cuda build link against the CUDA image's libcuda
# stub; at run time the NVIDIA container toolkit provides the real driver.)

COPY --from=go /usr/local/go /usr/local/go
# Debian's packages, as root: the build tools, Jupyter through the same
# script `make lab`, `make test` and CI run (its --apt-only part: JupyterLab
# on trixie), and jupyterhub-singleuser, the server JupyterHub (deploy/k8s)
# starts per student. Nothing here runs Node.js: Debian's jupyterlab ships its
# built front end, yet depends on the node packages it is built from (jest,
# webpack, babel...), and jupyterhub on configurable-http-proxy, whose hub
# and proxy run elsewhere (their own pods under Zero to JupyterHub). One empty
# package provides those node dependencies instead, at the versions asked for;
# they would bring nodejs and hundreds of packages, over 600 MB, into
# every student's image for nothing (docs/instructors.md has the figures).
# Where JupyterLab is installed, the same package stands in for the classic
# Notebook that jupyterhub depends on (jupyterhub-singleuser 5 runs on
# jupyter_server; the Notebook brings MathJax 2 and a second front end, about
# 80 MB). For the same reason the image keeps no manuals, no translations of
# the tools' messages, no documentation but the copyright files (the base
# image leaves them out too: scripts/debian-image.sh), no source maps of
# JupyterLab's front end (the debugger's, 86 MB), no Babel locale data but
# English's (JupyterLab ships no other language pack; 32 MB) and no apt
# package caches (92 MB). JupyterLab's news announcements are off: no toast
# over the lessons, no request to jupyter.org from a classroom.
COPY scripts/setup.sh /tmp/setup.sh
# (--error-on=any: without the network, stop at the mirror it could not reach,
# not later at "Unable to locate package"; Acquire::Retries rides out a
# dropped connection.)
RUN echo 'Acquire::Retries "3";' >/etc/apt/apt.conf.d/80-retries \
    && { apt-get update --error-on=any || { echo "image: could not fetch Debian's package lists from $(grep -h -o 'http[^ ]*' /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null | sort -u | tr '\n' ' '): no network, or the mirror is unreachable" >&2; exit 1; }; } \
    && printf '%s\n' 'path-exclude=/usr/share/doc/*' 'path-include=/usr/share/doc/*/copyright' 'path-exclude=/usr/share/man/*' \
        'path-exclude=/usr/share/info/*' 'path-exclude=/usr/share/locale/*' 'path-include=/usr/share/locale/locale.alias' >/etc/dpkg/dpkg.cfg.d/90-gpumem-slim \
    && apt-get install -y --no-install-recommends ca-certificates git make gcc libc6-dev \
    && if apt-cache policy jupyterlab | grep -q 'Candidate: [0-9]'; then classic='|python3-notebook$'; else classic=; fi \
    && node=$(apt-cache show --no-all-versions jupyterlab jupyterhub | sed -n 's/^Depends: //p' | tr ',' '\n' \
        | sed 's/^ *//; s/ *|.*//' | grep -E "^(node-|nodejs|jest|webpack|yarnpkg$classic)" | sed -E 's/ \((>=|=) ([^)]*)\)/ (= \2)/' \
        | sort -u | paste -sd, | sed 's/,/, /g') \
    && mkdir -p /tmp/standin/DEBIAN \
    && printf '%s\n' 'Package: gpumem-node-standin' 'Version: 0~gpumem' 'Architecture: all' \
        'Maintainer: gpumem course' "Provides: $node" \
        'Description: empty stand-in: JupyterLab is served prebuilt, the hub and its proxy run outside this image, the classic Notebook is not served' >/tmp/standin/DEBIAN/control \
    && dpkg-deb -b /tmp/standin /tmp/standin.deb >/dev/null && dpkg -i /tmp/standin.deb >/dev/null \
    && HOME=/root bash /tmp/setup.sh --apt-only \
    && apt-get install -y --no-install-recommends jupyterhub \
    && find /usr/share/jupyter/lab /usr/share/nodejs -name '*.js.map' -delete \
    && find /usr/share/python-babel-localedata/locale-data -name '*.dat' ! -name root.dat ! -name 'en.dat' ! -name 'en_*.dat' -delete \
    && mkdir -p /etc/jupyter/labconfig \
    && printf '%s\n' '{"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": true}}' >/etc/jupyter/labconfig/page_config.json \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb /var/cache/apt/*.bin /tmp/setup.sh /tmp/standin /tmp/standin.deb \
    && if command -v node >/dev/null; then echo 'image: nodejs was installed after all (a new dependency of jupyterlab or jupyterhub?)' >&2; exit 1; fi \
    && if command -v jupyter-lab >/dev/null && [ -d /usr/share/javascript/mathjax ]; then echo 'image: the classic Notebook and its MathJax were installed beside JupyterLab (a new dependency?)' >&2; exit 1; fi \
    && (getent group ${NB_GID} || groupadd -g ${NB_GID} users) \
    && useradd -m -s /bin/bash -u ${NB_UID} -g ${NB_GID} ${NB_USER} \
    && install -d -o ${NB_UID} -g ${NB_GID} ${JUPYTER_DATA_DIR} /home/${NB_USER}/course

# Everything else runs as the student, so no layer is copied again by a chown.
USER ${NB_UID}
WORKDIR /home/${NB_USER}/course
# The tools (GoNB, goimports, gopls) and the module cache depend only on the
# go.mod files and the setup script: they stay cached while lessons change,
# and both variants (below) share them.
COPY --chown=${NB_UID}:${NB_GID} go.mod go.sum ./
COPY --chown=${NB_UID}:${NB_GID} tools/ tools/
COPY --chown=${NB_UID}:${NB_GID} scripts/setup.sh scripts/
# Where Go fetches modules while the image is built: Go's default, or a
# mirror or proxy of your own (--build-arg BUILD_GOPROXY=...). The running
# image never fetches (GOPROXY=off at the end).
ARG BUILD_GOPROXY=https://proxy.golang.org,direct
# (GOSUMDB=off: the downloads are checked against go.sum; setup then skips
# caching checksum answers for notebooks, which GOSUMDB=off below makes moot.)
# The tools compile in a build cache that stays outside the image (a cache
# mount, kept by the builder between builds): students need the binaries,
# not the compiler's objects for them, 340 MB, nor the sources of gopls's
# own modules (a second x/tools, x/text, staticcheck...). A dropped connection
# is retried twice; setup names the module and the proxy it could not reach.
# The module cache then keeps the extracted modules and drops their zip
# files (127 MB): the image never downloads, and the go command builds,
# gets and vets from the extracted folders and each zip's hash (.ziphash),
# as every notebook and grader check in make image-test does.
# (The RUN steps that compile mount the build machine's Go at /opt/build-go
# and put it first on PATH, compiling for the image's architecture, with cgo
# through the image's own gcc as a native build would; an empty TARGETARCH,
# under a builder that does not set it, leaves Go's default. Not mounted over
# /usr/local/go: podman 4.3 leaves the mount point empty afterwards. The
# gonb kernel is registered with the image's own Go on its PATH.)
ARG TARGETARCH=
RUN --mount=type=cache,target=/home/${NB_USER}/.cache/go-tools,uid=${NB_UID},gid=${NB_GID} \
    --mount=type=bind,from=build-go,source=/usr/local/go,target=/opt/build-go \
    export PATH=/opt/build-go/bin:$PATH GOROOT=/opt/build-go CGO_ENABLED=1 GOARCH=$TARGETARCH KERNEL_GO_DIR=/usr/local/go/bin \
    && for try in 1 2 3; do \
        GOPROXY=${BUILD_GOPROXY} GOSUMDB=off GOCACHE=/home/${NB_USER}/.cache/go-tools GOPLS_GOMODCACHE=/home/${NB_USER}/.cache/go-tools/mod \
            bash scripts/setup.sh --no-apt \
            && find "$(go env GOMODCACHE)/cache/download" -name '*.zip' -type f -delete && exit 0; \
        [ "$try" = 3 ] || { echo "image: setup failed (attempt $try of 3), retrying in 10 s" >&2; sleep 10; }; \
    done; exit 1

# The GPU variant adds the CUDA headers and driver stub the cuda build tag
# compiles against: Debian's nvidia-cuda-dev and libcuda1 (CUDA 11.8, from
# contrib and non-free) unless the base image has them (nvidia/cuda images
# keep cuda.h in /usr/local/cuda/include). Declared here, the build argument
# leaves every layer above shared by both variants. (The chown: the cache
# mount above made ~/.cache, where Go's build cache and gopls's live, as root.)
ARG GPUKIT_TAGS=
USER root
COPY scripts/install-cuda-headers.sh /tmp/install-cuda-headers.sh
RUN case ",${GPUKIT_TAGS}," in *,cuda,*) \
        [ -f /usr/local/cuda/include/cuda.h ] || bash /tmp/install-cuda-headers.sh ;; esac \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb /tmp/install-cuda-headers.sh \
    && chown ${NB_UID}:${NB_GID} /home/${NB_USER}/.cache
USER ${NB_UID}

# The packages of Go's library and of other modules that the course's code
# imports, listed from the course's files in a stage of their own: the next
# stage copies the list, not the files, so its build of them (40 of the 48 s
# a cold build cache took here) is reused until an import changes, where it
# ran again after every change to the course.
FROM --platform=${TARGETPLATFORM} tools AS deps
ARG NB_UID=1000
ARG NB_GID=100
ARG TARGETARCH=
ARG GPUKIT_TAGS=
COPY --chown=${NB_UID}:${NB_GID} . .
RUN --mount=type=bind,from=build-go,source=/usr/local/go,target=/opt/build-go \
    export PATH=/opt/build-go/bin:$PATH GOROOT=/opt/build-go CGO_ENABLED=1 GOARCH=$TARGETARCH \
    && GOPROXY=off GOFLAGS=${GPUKIT_TAGS:+-tags=${GPUKIT_TAGS}} go list -deps \
        -f '{{if .Standard}}{{.ImportPath}}{{else if .Module}}{{if not .Module.Main}}{{.ImportPath}}{{end}}{{end}}' \
        ./... ./scripts/nbgen >/tmp/deps.txt \
    && CGO_ENABLED=0 GOPROXY=off go list -deps -test \
        -f '{{if .ForTest}}{{else if .Standard}}{{.ImportPath}}{{else if .Module}}{{if not .Module.Main}}{{.ImportPath}}{{end}}{{end}}' \
        ./exercises/... >/tmp/check-deps.txt

FROM --platform=${TARGETPLATFORM} tools
ARG NB_USER=jovyan
ARG NB_UID=1000
ARG NB_GID=100
ARG TARGETARCH=
ARG GPUKIT_TAGS=
COPY --from=deps --chown=${NB_UID}:${NB_GID} /tmp/deps.txt /tmp/check-deps.txt /tmp/
# The same for grader check, which compiles an exercise and its tests as
# grading does (no cgo, -trimpath: other cache entries): the standard
# library and the other modules its tests import (testify), so that the
# check of every exercise after the course is copied compiles only the
# course's own packages.
# Each step that compiles dates the build cache entries it made 2100 (the
# find at its end). The go command rewrites the time of an entry it uses
# an hour or more after that time, and deletes entries older than five
# days at its daily trim (cmd/go/internal/cache/cache.go: mtimeInterval,
# trimLimit); gopls does the same with its own cache (gopls/internal/
# filecache). In an image, a rewrite copies the whole file up into the
# layer that made it (the course step, built two hours after this one,
# grew by 326 MB) or into each student's container (295 entries, Go's
# and gopls's, in one make image-test), and a trim a week after the build would make every
# container compile gpukit anew. Dated in the future, an entry is neither:
# make image-test checks both.
RUN --mount=type=bind,from=build-go,source=/usr/local/go,target=/opt/build-go \
    export PATH=/opt/build-go/bin:$PATH GOROOT=/opt/build-go CGO_ENABLED=1 GOARCH=$TARGETARCH \
    && GOPROXY=off GOFLAGS=${GPUKIT_TAGS:+-tags=${GPUKIT_TAGS}} go build $(cat /tmp/deps.txt) \
    && CGO_ENABLED=0 GOPROXY=off GOFLAGS=-trimpath go build $(cat /tmp/check-deps.txt) \
    && rm /tmp/deps.txt /tmp/check-deps.txt \
    && find "$GOCACHE" -mindepth 2 ! -newermt 2099-01-01 -exec touch -h -d @4102444800 {} +

COPY --chown=${NB_UID}:${NB_GID} . .
RUN if [ -e solutions ] || [ -e grader/hidden ]; then \
        echo "image: the build context holds solutions/ or grader/hidden/, which would reach every student: build from the student edition (go run ./grader/cmd/grader release --out DIR; docker build -f Dockerfile DIR)" >&2; exit 1; \
    fi
# A build of every package warms the build cache, so a notebook's first
# cell compiles in seconds (the course's own packages: the others were
# built above). Nothing is fetched here: setup downloaded it all. Then a
# check of every exercise warms what grader check compiles (as grading
# does: no cgo, -trimpath, other cache keys): in a fresh container the
# first check of 01-shared-storage took 17 s without it, of
# 06-find-the-peak 22 s. With the standard library and testify compiled
# for it above, this step takes 19 s here (56 s without them: it ran on
# every change to the course).
RUN --mount=type=bind,from=build-go,source=/usr/local/go,target=/opt/build-go \
    export PATH=/opt/build-go/bin:$PATH GOROOT=/opt/build-go CGO_ENABLED=1 GOARCH=$TARGETARCH \
    && GOPROXY=off GOFLAGS=${GPUKIT_TAGS:+-tags=${GPUKIT_TAGS}} go build ./... \
    && GOPROXY=off go build -o /dev/null ./scripts/nbgen \
    && GOPROXY=off go run ./grader/cmd/grader check --all >/dev/null \
    && find "$GOCACHE" -mindepth 2 ! -newermt 2099-01-01 -exec touch -h -d @4102444800 {} +

# Offline from here on: Go uses the module cache only, and the checksums it
# verified while downloading (GOSUMDB=off spares the notebooks' scratch
# modules a lookup that would need the network). -ldflags=-w: a cell's
# program is linked without DWARF debug data, which nothing in the image
# reads (it has no debugger; a panic's trace comes from the symbol table):
# a cell's link 0.73 → 0.56 s, two lessons' CPU 44 → 40 s. (Not in the
# gonb kernel's own settings: there it would override the GOFLAGS a user
# sets, e.g. GOFLAGS=-tags=cuda make lab.)
ENV GOPROXY=off \
    GOSUMDB=off \
    GOFLAGS="${GPUKIT_TAGS:+-tags=${GPUKIT_TAGS} }-ldflags=-w"

# And gopls's cache (~/.cache/gopls), so that the first Tab completion of a
# fresh container answers in seconds: gopls type-checks gpukit's packages
# once here, from a scratch module made as each notebook's first cell makes
# its own (same replace, same path), and later finds them by content. Cold,
# that check took 16 to 28 s here; warm, 3.7 s. (With the GOFLAGS the
# notebooks have, above: gopls's view of the packages is made with them.)
RUN d=$(mktemp -d) && cd "$d" && go mod init gonb_warm >/dev/null 2>&1 \
    && go mod edit -require=github.com/gpumem/course@v0.0.0-00010101000000-000000000000 \
        -replace=github.com/gpumem/course=/home/${NB_USER}/course \
    && go get github.com/gpumem/course/gpukit/...@v0.0.0-00010101000000-000000000000 \
    && { echo 'package main'; \
         (cd /home/${NB_USER}/course && go list -f '{{if ne .Name "main"}}{{.ImportPath}}{{end}}' ./gpukit/... | \
            grep -v /internal/ | sed 's/.*/import _ "&"/'); \
         echo 'func main() {}'; } >main.go \
    && /home/${NB_USER}/course/bin/gopls check main.go \
    && cd / && rm -rf "$d" && du -sh /home/${NB_USER}/.cache/gopls \
    && find "$GOCACHE" /home/${NB_USER}/.cache/gopls -mindepth 2 ! -newermt 2099-01-01 -exec touch -h -d @4102444800 {} +
EXPOSE 8888
# JupyterLab, opened at the lesson list; the classic Notebook on a base whose
# release packages no JupyterLab (Ubuntu 22.04, under NVIDIA's CUDA images).
# (A hub starts jupyterhub-singleuser instead, with its own default URL:
# deploy/k8s/values.yaml.)
CMD ["bash", "-c", "if command -v jupyter-lab >/dev/null; then exec jupyter lab --no-browser --ip=0.0.0.0 --port=8888 --ServerApp.root_dir=/home/jovyan/course --LabApp.default_url=/lab/tree/notebooks; else exec jupyter notebook --no-browser --ip=0.0.0.0 --port=8888 --notebook-dir=/home/jovyan/course --NotebookApp.default_url=/tree/notebooks; fi"]
