# The classroom image: Jupyter Notebook with the Go (gonb) kernel and the
# course, following the Jupyter docker-stacks conventions (user jovyan, uid
# 1000, port 8888, Jupyter as the default command). Notebooks and the grader
# work with the network off: every module is in the image's module cache and
# Go is told to use only it (GOPROXY=off).
#
#   docker build -t gpumem-course .
#   docker run --rm -p 8888:8888 gpumem-course
#
# On a machine with an NVIDIA GPU (and the NVIDIA container toolkit):
#   docker build --build-arg BASE=nvidia/cuda:12.4.1-devel-ubuntu22.04 --build-arg GPUKIT_TAGS=cuda -t gpumem-course:cuda .
#   docker run --rm --gpus all -p 8888:8888 gpumem-course:cuda
# gorgonia.org/cu v0.9.6 compiles against CUDA 11.8 and 12.x headers, not 13.
#
# Without a registry (CI, or podman on an isolated network), `make image`
# builds the two base images locally (scripts/image-base.sh) and passes them
# as BASE and GO_IMAGE.

ARG GO_IMAGE=golang:1.26-bookworm
ARG BASE=debian:bookworm
FROM ${GO_IMAGE} AS go

FROM ${BASE}
ARG GPUKIT_TAGS=
ARG NB_USER=jovyan
ARG NB_UID=1000
ARG NB_GID=100
# Where Go fetches modules while the image is built: Go's default, or a
# mirror or proxy of your own (--build-arg BUILD_GOPROXY=...). The running
# image never fetches (GOPROXY=off at the end).
ARG BUILD_GOPROXY=https://proxy.golang.org,direct

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
# Debian's packages, as root: the build tools, and Jupyter through the same
# script `make lab`, `make test` and CI run (its --apt-only part).
COPY scripts/setup.sh /tmp/setup.sh
# (--error-on=any: without the network, stop at the mirror it could not reach,
# not later at "Unable to locate package".)
RUN apt-get update --error-on=any && apt-get install -y --no-install-recommends ca-certificates git make gcc libc6-dev \
    && HOME=/root bash /tmp/setup.sh --apt-only \
    && rm -rf /var/lib/apt/lists/* /tmp/setup.sh \
    && (getent group ${NB_GID} || groupadd -g ${NB_GID} users) \
    && useradd -m -s /bin/bash -u ${NB_UID} -g ${NB_GID} ${NB_USER} \
    && install -d -o ${NB_UID} -g ${NB_GID} ${JUPYTER_DATA_DIR} /home/${NB_USER}/course

# Everything else runs as the student, so no layer is copied again by a chown.
USER ${NB_UID}
WORKDIR /home/${NB_USER}/course
# The tools (GoNB, goimports, gopls) and the module cache depend only on the
# go.mod files and the setup script: they stay cached while lessons change.
COPY --chown=${NB_UID}:${NB_GID} go.mod go.sum ./
COPY --chown=${NB_UID}:${NB_GID} tools/ tools/
COPY --chown=${NB_UID}:${NB_GID} scripts/setup.sh scripts/
# (GOSUMDB=off: the downloads are checked against go.sum; setup then skips
# caching checksum answers for notebooks, which GOSUMDB=off below makes moot.)
RUN GOPROXY=${BUILD_GOPROXY} GOSUMDB=off GOFLAGS=${GPUKIT_TAGS:+-tags=${GPUKIT_TAGS}} bash scripts/setup.sh --no-apt
COPY --chown=${NB_UID}:${NB_GID} . .
# A build of every package warms the build cache, so a notebook's first
# cell compiles in seconds. Nothing is fetched here: setup downloaded it all.
RUN GOPROXY=off GOFLAGS=${GPUKIT_TAGS:+-tags=${GPUKIT_TAGS}} go build ./... \
    && GOPROXY=off go build -o /dev/null ./scripts/nbgen

# Offline from here on: Go uses the module cache only, and the checksums it
# verified while downloading (GOSUMDB=off spares the notebooks' scratch
# modules a lookup that would need the network).
ENV GOPROXY=off \
    GOSUMDB=off \
    GOFLAGS=${GPUKIT_TAGS:+-tags=${GPUKIT_TAGS}}
EXPOSE 8888
CMD ["bash", "-c", "jupyter notebook --no-browser --ip=0.0.0.0 --port=8888 --notebook-dir=/home/jovyan/course --NotebookApp.default_url=/tree/notebooks"]
