# Image of muster-apiserver, the Muster aggregated API server.
#
#   docker build -t muster-apiserver:latest .
#
# Works with BuildKit and with the classic builder alike: no cache mounts, no
# build-platform tricks.

# Build stage. golang:1.26 matches the "go" line in go.mod; GOTOOLCHAIN=local
# makes a mismatch fail here instead of quietly downloading another toolchain.
FROM golang:1.26 AS build
ENV CGO_ENABLED=0 \
    GOTOOLCHAIN=local
WORKDIR /src

# Dependencies first, as a layer of their own: it is rebuilt only when go.mod
# or go.sum change, not on every source edit. "go mod download" also checks
# every module against go.sum.
COPY go.mod go.sum ./
RUN go mod download

COPY . .
# CGO_ENABLED=0 gives a static binary for the distroless static image, which
# has no libc. -trimpath keeps the builder's paths out of the binary, so the
# same source builds the same bytes anywhere.
RUN go build -trimpath -o /out/muster-apiserver ./cmd/muster-apiserver

# Run stage: no shell, no package manager, nothing but the binary, CA
# certificates and time zone data. Pin it by digest in a release build.
FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/muster-apiserver /usr/local/bin/muster-apiserver
# The image's "nonroot" user, given by number so the kubelet can check
# runAsNonRoot against the image without a passwd lookup.
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/muster-apiserver"]
