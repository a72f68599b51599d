#!/usr/bin/env bash
# registry-push.sh - shape a test registry's contents (Registry HTTP API v2) from
# tests, WITHOUT docker: plain curl calls, as deploy/registry-seed.sh does.
# Deterministic: the same arguments give the same bytes, hence the same digests
# (fixed tar/gzip/JSON bytes, fixed "created" time); an image's layer holds REPO,
# TAG, the architecture and --filler bytes, so different images get different digests.
#
# Usage: tests/support/registry-push.sh COMMAND ARGS...
#   push REPO TAG [--oci] [--label K=V]... [--filler BYTES] [--arch ARCH]
#       Push one image: a config blob (.architecture = ARCH (default amd64),
#       .os = linux, .config.Labels = the labels, {} without any), one gzip layer,
#       and a Docker v2 schema-2 manifest under TAG (an OCI image manifest with --oci).
#       Prints: DIGEST SIZE_BYTES   (SIZE_BYTES = config.size + sum(layers[].size))
#       --filler BYTES adds that many bytes of (well compressible) text to the
#       layer: another digest for the same REPO:TAG, a slightly bigger size.
#       --jupyter-stub (with --busybox) adds /bin/jupyter-notebook, a stand-in for an
#       image's own Jupyter (tests/http/test_appsessions.c): busybox httpd on --port
#       serving, under --NotebookApp.base_url, a page that says how it was started.
#       --busybox makes it runnable: the layer also holds Debian's static
#       /bin/busybox with a link per applet in /bin, and /etc/os-release
#       (NAME="aidc-test-busybox"); PATH=/bin, Cmd ["sh"]. Every image's layer
#       has /etc/aidc-test/image (repository=REPO, tag=TAG ...): a file only
#       the image has.
#   index REPO TAG [--label K=V]... [--filler BYTES]
#       Push two OCI image manifests by digest (linux/amd64, linux/arm64; the labels
#       in both configs), then an OCI image index naming both under TAG.
#       Prints: INDEX_DIGEST TOTAL_SIZE (sum over both children of config + layers)
#   delete REPO TAG
#       Resolve TAG's digest (HEAD with a full Accept header) and DELETE the manifest
#       by digest (202). Every tag pointing at that digest goes with it.
#       Prints: DIGEST
#   digest REPO TAG
#       Prints the digest TAG points at now (HEAD with a full Accept header).
#
# Environment:
#   REGISTRY_URL                       required, e.g. http://127.0.0.1:15500
#   REGISTRY_USER, REGISTRY_PASSWORD   optional HTTP basic auth
# Needs: curl jq sha256sum tar gzip (deploy/install-deps.sh test)
# Exit status: 0 on success; 1 on any unexpected HTTP status (the response is
# printed on stderr) or unreachable registry; 2 on bad usage.
set -euo pipefail

PROG=registry-push
die() { echo "$PROG: $*" >&2; exit 1; }
usage() {
    sed -n '/^# Usage:/,/^set -e/{/^set -e/d;s/^# \{0,1\}//;p;}' "$0" >&2
    exit 2
}
bad() { echo "$PROG: $*" >&2; usage; }

[ $# -ge 1 ] || usage
cmd=$1; shift
case "$cmd" in
    push|index|delete|digest) ;;
    -h|--help|help) usage ;;
    *) bad "unknown command '$cmd'" ;;
esac
[ $# -ge 2 ] || bad "$cmd: REPO and TAG are required"
REPO=$1 TAG=$2; shift 2
# the registry's grammar (distribution/reference): lowercase path components, tag
[[ "$REPO" =~ ^[a-z0-9]+([._-][a-z0-9]+)*(/[a-z0-9]+([._-][a-z0-9]+)*)*$ ]] ||
    bad "invalid repository name '$REPO'"
[[ "$TAG" =~ ^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$ ]] || bad "invalid tag '$TAG'"

OCI=0 ARCH=amd64 FILLER=0 BUSYBOX=0 JUPYTER_STUB=0
LABELS='{}'
while [ $# -gt 0 ]; do
    case "$cmd:$1" in
        push:--oci) OCI=1; shift ;;
        push:--busybox) BUSYBOX=1; shift ;;
        push:--jupyter-stub) JUPYTER_STUB=1; shift ;;
        push:--arch)
            [ $# -ge 2 ] || bad "--arch needs a value"
            [[ "$2" =~ ^[a-z0-9]+$ ]] || bad "invalid --arch '$2'"
            ARCH=$2; shift 2 ;;
        push:--filler|index:--filler)
            [ $# -ge 2 ] || bad "--filler needs a value"
            [[ "$2" =~ ^[0-9]{1,9}$ ]] || bad "--filler wants a byte count, got '$2'"
            FILLER=$((10#$2)); shift 2 ;;
        push:--label|index:--label)
            [ $# -ge 2 ] || bad "--label needs K=V"
            case "$2" in ?*=*) ;; *) bad "--label wants K=V with a non-empty K, got '$2'";; esac
            LABELS=$(jq -cn --argjson l "$LABELS" --arg k "${2%%=*}" --arg v "${2#*=}" '$l + {($k): $v}')
            shift 2 ;;
        *) bad "$cmd: unexpected argument '$1'" ;;
    esac
done

[ -n "${REGISTRY_URL:-}" ] || die "REGISTRY_URL is not set (e.g. http://127.0.0.1:15500)"
REGISTRY_URL=${REGISTRY_URL%/}
REGISTRY_USER=${REGISTRY_USER:-}
REGISTRY_PASSWORD=${REGISTRY_PASSWORD:-}
for c in curl jq sha256sum tar gzip; do command -v "$c" >/dev/null || die "$c not found"; done

WORK=$(mktemp -d)   # under $TMPDIR or /tmp
trap 'rm -rf "$WORK"' EXIT

CURL=(curl -sS --max-time 30)
[ -n "$REGISTRY_USER" ] && CURL+=(-u "$REGISTRY_USER:$REGISTRY_PASSWORD")

# Every manifest type a client can meet; without Accept the registry converts a
# Docker v2 manifest to a signed schema 1 one (another digest) and hides OCI ones.
ACCEPT="Accept: application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.docker.distribution.manifest.v2+json, application/vnd.oci.image.manifest.v1+json"

# http METHOD URL [curl args] -> $CODE; response headers in $WORK/h, body in $WORK/b
http() {
    local m=$1 u=$2; shift 2
    if [ "$m" = HEAD ]; then
        CODE=$("${CURL[@]}" -I -o "$WORK/h" -w '%{http_code}' "$@" "$u") || true
        : > "$WORK/b"
    else
        CODE=$("${CURL[@]}" -X "$m" -D "$WORK/h" -o "$WORK/b" -w '%{http_code}' "$@" "$u") || true
    fi
    [ "$CODE" != 000 ] || die "$m $u: no answer (is the registry up at $REGISTRY_URL?)"
}
hdr() { grep -i "^$1:" "$WORK/h" | tail -1 | cut -d' ' -f2- | tr -d '\r'; }
expect() {
    [ "$CODE" = "$1" ] && return
    cat "$WORK/h" "$WORK/b" >&2 2>/dev/null || true
    case "$CODE" in
        401) die "$2: HTTP 401, want $1 (credentials: REGISTRY_USER/REGISTRY_PASSWORD)" ;;
        *)   die "$2: HTTP $CODE, want $1" ;;
    esac
}
digest_of() { echo "sha256:$(sha256sum "$1" | cut -d' ' -f1)"; }
size_of() { stat -c %s "$1"; }

# push_blob FILE -> uploads it to $REPO unless the repository already has it
push_blob() {
    local f=$1 dg loc sep
    dg=$(digest_of "$f")
    http HEAD "$REGISTRY_URL/v2/$REPO/blobs/$dg"
    [ "$CODE" = 200 ] && return
    expect 404 "HEAD blob $REPO@$dg"
    http POST "$REGISTRY_URL/v2/$REPO/blobs/uploads/"
    expect 202 "POST upload $REPO"
    loc=$(hdr Location)
    [ -n "$loc" ] || die "POST upload $REPO: no Location header"
    case "$loc" in /*) loc="$REGISTRY_URL$loc";; esac
    case "$loc" in *\?*) sep='&';; *) sep='?';; esac
    http PUT "$loc${sep}digest=$dg" -H 'Content-Type: application/octet-stream' --data-binary "@$f"
    expect 201 "PUT blob $REPO@$dg"
    [ "$(hdr Docker-Content-Digest)" = "$dg" ] || die "PUT blob: digest header $(hdr Docker-Content-Digest) != $dg"
}

# push_manifest FILE MEDIA_TYPE REFERENCE (a tag or the file's digest)
push_manifest() {
    local f=$1 mt=$2 ref=$3 dg
    dg=$(digest_of "$f")
    http PUT "$REGISTRY_URL/v2/$REPO/manifests/$ref" -H "Content-Type: $mt" --data-binary "@$f"
    expect 201 "PUT manifest $REPO:$ref"
    [ "$(hdr Docker-Content-Digest)" = "$dg" ] || die "PUT manifest $REPO:$ref: digest header $(hdr Docker-Content-Digest) != $dg"
}

# build_image NAME ARCH FORMAT(docker|oci) -> blobs pushed, $WORK/NAME.manifest.json
# written; sets IMG_DIGEST, IMG_SIZE (config.size + layers' sizes), IMG_MT
build_image() {
    local name=$1 arch=$2 fmt=$3 mt_config mt_layer created=2024-01-01T00:00:00Z
    if [ "$fmt" = oci ]; then
        IMG_MT=application/vnd.oci.image.manifest.v1+json
        mt_config=application/vnd.oci.image.config.v1+json
        mt_layer=application/vnd.oci.image.layer.v1.tar+gzip
    else
        IMG_MT=application/vnd.docker.distribution.manifest.v2+json
        mt_config=application/vnd.docker.container.image.v1+json
        mt_layer=application/vnd.docker.image.rootfs.diff.tar.gzip
    fi
    # the layer: who it is (repository, tag, platform) plus FILLER bytes
    local d="$WORK/$name"
    mkdir -p "$d/etc/aidc-test"
    printf 'repository=%s\ntag=%s\narchitecture=%s\nos=linux\n' "$REPO" "$TAG" "$arch" > "$d/etc/aidc-test/image"
    { yes "$REPO:$TAG/$arch" 2>/dev/null || true; } | head -c "$FILLER" > "$d/etc/aidc-test/filler"
    local env='["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]' 
    if [ "$BUSYBOX" = 1 ]; then
        [ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1 ||
            die "--busybox needs Debian's static busybox (apt-get install busybox-static)"
        mkdir -p "$d/bin"
        cp /bin/busybox "$d/bin/busybox"
        local a; for a in $(/bin/busybox --list); do [ "$a" = busybox ] || ln -s busybox "$d/bin/$a"; done
        printf 'NAME="aidc-test-busybox"\nPRETTY_NAME="aidc test image (busybox)"\n' > "$d/etc/os-release"
        env='["PATH=/bin", "AIDC_TEST_IMAGE=busybox"]'
    fi
    if [ "$JUPYTER_STUB" = 1 ]; then
        [ "$BUSYBOX" = 1 ] || bad "--jupyter-stub needs --busybox"
        cat > "$d/bin/jupyter-notebook" <<'STUB'
#!/bin/sh
# a stand-in for an image's own Jupyter Notebook: how it was started, served under its base URL
port= base=
for a in "$@"; do
    case "$a" in
        --port=*) port=${a#--port=} ;;
        --NotebookApp.base_url=*) base=${a#--NotebookApp.base_url=} ;;
    esac
done
mkdir -p "/tmp/www$base"
{
    echo "argv: $*"
    [ -n "$JUPYTER_TOKEN" ] && echo "token: set"
    [ -n "$AIDC_SESSION_TOKEN" ] && echo "the secret is still in the environment"
    echo "uid: $(id -u)"
} > "/tmp/www$base/index.html"
exec httpd -f -p "$port" -h /tmp/www
STUB
    fi
    find "$d" -type d -exec chmod 755 {} + ; find "$d" -type f -exec chmod 644 {} +
    [ "$BUSYBOX" = 0 ] || chmod 755 "$d/bin/busybox"
    [ "$JUPYTER_STUB" = 0 ] || chmod 755 "$d/bin/jupyter-notebook"
    tar --format=gnu --sort=name --mtime=@1704067200 --owner=0 --group=0 --numeric-owner \
        -C "$d" -cf "$d.tar" .
    gzip -9n < "$d.tar" > "$d.tar.gz"

    jq -cn --arg arch "$arch" --arg created "$created" --argjson labels "$LABELS" \
          --arg diff "$(digest_of "$d.tar")" --arg by "registry-push.sh $REPO:$TAG" \
          --argjson env "$env" '{
        architecture: $arch, os: "linux", created: $created,
        config: {Env: $env, Cmd: ["sh"], Labels: $labels},
        rootfs: {type: "layers", diff_ids: [$diff]},
        history: [{created: $created, created_by: $by}]
      }' > "$d.config.json"

    push_blob "$d.tar.gz"
    push_blob "$d.config.json"

    jq -cn --arg mt "$IMG_MT" --arg mtc "$mt_config" --arg mtl "$mt_layer" \
          --arg cd "$(digest_of "$d.config.json")" --argjson cs "$(size_of "$d.config.json")" \
          --arg ld "$(digest_of "$d.tar.gz")" --argjson ls "$(size_of "$d.tar.gz")" \
          --arg fmt "$fmt" --arg created "$created" '{
        schemaVersion: 2, mediaType: $mt,
        config: {mediaType: $mtc, size: $cs, digest: $cd},
        layers: [{mediaType: $mtl, size: $ls, digest: $ld}]
      } + (if $fmt == "oci" then {annotations: {"org.opencontainers.image.created": $created}} else {} end)' \
      > "$d.manifest.json"
    IMG_DIGEST=$(digest_of "$d.manifest.json")
    IMG_SIZE=$(jq '.config.size + ([.layers[].size] | add)' "$d.manifest.json")
}

# resolve -> the digest $TAG points at now
resolve() {
    local dg
    http HEAD "$REGISTRY_URL/v2/$REPO/manifests/$TAG" -H "$ACCEPT"
    [ "$CODE" = 404 ] && die "HEAD manifest $REPO:$TAG: HTTP 404, want 200 (no such tag or repository)"
    expect 200 "HEAD manifest $REPO:$TAG"
    dg=$(hdr Docker-Content-Digest)
    [[ "$dg" =~ ^sha256:[0-9a-f]{64}$ ]] || die "HEAD manifest $REPO:$TAG: bad Docker-Content-Digest '$dg'"
    echo "$dg"
}

case "$cmd" in
push)
    fmt=docker; [ "$OCI" = 1 ] && fmt=oci
    build_image image "$ARCH" "$fmt"
    push_manifest "$WORK/image.manifest.json" "$IMG_MT" "$TAG"
    echo "$IMG_DIGEST $IMG_SIZE"
    ;;
index)
    children='[]' total=0
    for arch in amd64 arm64; do
        build_image "image-$arch" "$arch" oci
        push_manifest "$WORK/image-$arch.manifest.json" "$IMG_MT" "$IMG_DIGEST"
        children=$(jq -cn --argjson c "$children" --arg mt "$IMG_MT" --arg dg "$IMG_DIGEST" \
                      --argjson sz "$(size_of "$WORK/image-$arch.manifest.json")" --arg arch "$arch" \
            '$c + [{mediaType: $mt, size: $sz, digest: $dg, platform: {architecture: $arch, os: "linux"}}]')
        total=$((total + IMG_SIZE))
    done
    jq -cn --argjson m "$children" \
        '{schemaVersion: 2, mediaType: "application/vnd.oci.image.index.v1+json", manifests: $m}' \
        > "$WORK/index.json"
    push_manifest "$WORK/index.json" application/vnd.oci.image.index.v1+json "$TAG"
    echo "$(digest_of "$WORK/index.json") $total"
    ;;
delete)
    dg=$(resolve)
    http DELETE "$REGISTRY_URL/v2/$REPO/manifests/$dg"
    expect 202 "DELETE manifest $REPO@$dg"
    echo "$dg"
    ;;
digest)
    resolve
    ;;
esac
