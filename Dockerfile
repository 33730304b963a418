# The classroom image: Jupyter Notebook with the Go (gonb) kernel and the
# course, following the Jupyter docker-stacks conventions (user jovyan, uid
# 1000, port 8888, Jupyter as the default command).
#
#   docker build -t gpumem-course .
#   docker run --rm -p 8888:8888 gpumem-course
#
# On a machine with an NVIDIA GPU (and the NVIDIA container toolkit):
#   docker build --build-arg BASE=nvidia/cuda:12.4.1-devel-ubuntu22.04 --build-arg GPUKIT_TAGS=cuda -t gpumem-course:cuda .
#   docker run --rm --gpus all -p 8888:8888 gpumem-course:cuda
# gorgonia.org/cu v0.9.6 compiles against CUDA 11.8 and 12.x headers, not 13.

ARG GO_IMAGE=golang:1.26-bookworm
ARG BASE=debian:bookworm
FROM ${GO_IMAGE} AS go

FROM ${BASE}
ARG GPUKIT_TAGS=
ARG NB_USER=jovyan
ARG NB_UID=1000
ARG NB_GID=100

USER root
ENV DEBIAN_FRONTEND=noninteractive \
    PATH=/usr/local/go/bin:$PATH \
    HOME=/home/${NB_USER} \
    GOPATH=/home/${NB_USER}/go \
    GOCACHE=/home/${NB_USER}/.cache/go-build \
    GOFLAGS=${GPUKIT_TAGS:+-tags=${GPUKIT_TAGS}} \
    JUPYTER_DATA_DIR=/usr/local/share/jupyter \
    LIBRARY_PATH=/usr/local/cuda/lib64/stubs
# (LIBRARY_PATH lets the cuda build link against the CUDA image's libcuda
# stub; at run time the NVIDIA container toolkit provides the real driver.)

COPY --from=go /usr/local/go /usr/local/go
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates git make gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/* \
    && (getent group ${NB_GID} || groupadd -g ${NB_GID} users) \
    && useradd -m -s /bin/bash -u ${NB_UID} -g ${NB_GID} ${NB_USER}

WORKDIR /home/${NB_USER}/course
COPY --chown=${NB_UID}:${NB_GID} . .
# The same script that `make lab`, `make test` and CI run: Jupyter from the
# distribution's packages, GoNB and goimports built from go.mod into bin/,
# and the gonb kernel registered for all users (JUPYTER_DATA_DIR above).
# The module download and a build of gpukit warm the caches, so notebooks
# compile without network access in the classroom.
RUN bash scripts/setup.sh \
    && go mod download && go build ./... \
    && rm -rf /var/lib/apt/lists/* \
    && chown -R ${NB_UID}:${NB_GID} /home/${NB_USER}

USER ${NB_UID}
EXPOSE 8888
CMD ["bash", "-c", "jupyter notebook --no-browser --ip=0.0.0.0 --port=8888 --notebook-dir=/home/jovyan/course --NotebookApp.default_url=/tree/notebooks"]
