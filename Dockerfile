# syntax=docker/dockerfile:1
#
# One image with both binaries of the schedscope pod:
#   /schedscope-scheduler  (the default entrypoint)
#   /schedscope-sidecar
# The manifests set each container's command.
#
#   docker build --build-arg VERSION=v0.1.0 -t ghcr.io/schedscope/schedscope:v0.1.0 .

FROM golang:1.27.3 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
# Only what the two binaries are built from (bin/ holds large local builds).
COPY cmd/ cmd/
COPY pkg/ pkg/
ARG K8S_VERSION=v1.37.2
ARG VERSION=devel
# Static binaries (the sidecar's SQLite is pure Go), with the Kubernetes
# version kube-scheduler reports and schedscope's own.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w \
      -X github.com/schedscope/schedscope/pkg/version.Version=${VERSION} \
      -X k8s.io/component-base/version.gitVersion=${K8S_VERSION} \
      -X k8s.io/component-base/version.gitMajor=1 \
      -X k8s.io/component-base/version.gitMinor=37" \
      -o /out/ ./cmd/schedscope-scheduler ./cmd/schedscope-sidecar

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/schedscope-scheduler /out/schedscope-sidecar /
USER 65532:65532
ENTRYPOINT ["/schedscope-scheduler"]
