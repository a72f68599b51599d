#!/usr/bin/env bash
# registry-seed.sh - push small test images into a Registry HTTP API v2 registry
# WITHOUT docker: plain curl calls (blob upload POST+PUT, cross-repo mount, manifest PUT).
# Idempotent (existing blobs are skipped, manifests re-PUT give the same digest) and
# deterministic (fixed tar/gzip/JSON bytes -> the same digests on every run).
# tests/run.sh seeds its test registries with it; tests add, re-tag and delete
# images on top with tests/support/registry-push.sh.
#
# Seeds (2 repositories x 2 tags; each image = config blob + shared base layer + own layer):
#   pytorch/pytorch:2.4-cuda12.4  pytorch/pytorch:2.3-cuda12.1     Docker schema 2 manifests
#   tensorflow/tensorflow:2.16-gpu tensorflow/tensorflow:2.15-gpu   OCI image manifests
# Config labels: framework, framework_version, cuda_version, python_version,
#   org.opencontainers.image.title, org.opencontainers.image.version
#
# Environment (all optional):
#   REGISTRY_URL       default: from $REGISTRY_DIR/env (written by deploy/registry-up.sh), else http://127.0.0.1:5000
#   REGISTRY_USER, REGISTRY_PASSWORD   basic auth (also read from $REGISTRY_DIR/env)
#   REGISTRY_DIR       default /tmp/aidc-registry (only used to find env)
#   SEED_OUT           also write the result table (TSV) to this file
# Needs: curl jq sha256sum tar gzip (deploy/install-deps.sh test)
# Output (stdout): TSV header + one line per image:
#   repository tag manifest_media_type manifest_digest size_bytes config_digest labels_json
#   size_bytes = config.size + sum(layers[].size), i.e. compressed bytes a pull transfers.
set -euo pipefail

REGISTRY_DIR=${REGISTRY_DIR:-/tmp/aidc-registry}
if [ -z "${REGISTRY_URL:-}" ] && [ -r "$REGISTRY_DIR/env" ]; then
    # shellcheck disable=SC1091
    . "$REGISTRY_DIR/env"
fi
REGISTRY_URL=${REGISTRY_URL:-http://127.0.0.1:5000}
REGISTRY_URL=${REGISTRY_URL%/}
REGISTRY_USER=${REGISTRY_USER:-}
REGISTRY_PASSWORD=${REGISTRY_PASSWORD:-}

die() { echo "registry-seed: $*" >&2; exit 1; }
log() { echo "registry-seed: $*" >&2; }
for c in curl jq sha256sum tar gzip; do command -v "$c" >/dev/null || die "$c not found"; done

WORK=$(mktemp -d)   # under $TMPDIR or /tmp
trap 'rm -rf "$WORK"' EXIT

CURL=(curl -sS --max-time 30)
[ -n "$REGISTRY_USER" ] && CURL+=(-u "$REGISTRY_USER:$REGISTRY_PASSWORD")

# http METHOD URL [curl args] -> $CODE; response headers in $WORK/h, body in $WORK/b
http() {
    local m=$1 u=$2; shift 2
    if [ "$m" = HEAD ]; then
        CODE=$("${CURL[@]}" -I -o "$WORK/h" -w '%{http_code}' "$@" "$u"); : > "$WORK/b"
    else
        CODE=$("${CURL[@]}" -X "$m" -D "$WORK/h" -o "$WORK/b" -w '%{http_code}' "$@" "$u")
    fi
}
hdr() { grep -i "^$1:" "$WORK/h" | tail -1 | cut -d' ' -f2- | tr -d '\r'; }
expect() { [ "$CODE" = "$1" ] || { cat "$WORK/h" "$WORK/b" >&2; die "$2: HTTP $CODE, want $1"; }; }
digest_of() { echo "sha256:$(sha256sum "$1" | cut -d' ' -f1)"; }
size_of() { stat -c %s "$1"; }

# push_blob REPO FILE [MOUNT_FROM_REPO] -> uploads unless the repo already has it
push_blob() {
    local repo=$1 f=$2 from=${3:-} dg loc sep
    dg=$(digest_of "$f")
    http HEAD "$REGISTRY_URL/v2/$repo/blobs/$dg"
    if [ "$CODE" = 200 ]; then log "  blob $dg exists in $repo"; return; fi
    [ "$CODE" = 404 ] || expect 404 "HEAD blob"
    if [ -n "$from" ]; then
        http POST "$REGISTRY_URL/v2/$repo/blobs/uploads/?mount=$dg&from=$from"
        if [ "$CODE" = 201 ]; then log "  blob $dg mounted from $from"; return; fi
        expect 202 "POST mount"    # not mountable: an ordinary upload session was opened
    else
        http POST "$REGISTRY_URL/v2/$repo/blobs/uploads/"
        expect 202 "POST upload"
    fi
    loc=$(hdr Location)
    case "$loc" in /*) loc="$REGISTRY_URL$loc";; esac
    case "$loc" in *\?*) sep='&';; *) sep='?';; esac
    http PUT "$loc${sep}digest=$dg" -H 'Content-Type: application/octet-stream' --data-binary "@$f"
    expect 201 "PUT blob"
    [ "$(hdr Docker-Content-Digest)" = "$dg" ] || die "PUT blob: digest header $(hdr Docker-Content-Digest) != $dg"
    log "  blob $dg uploaded to $repo ($(size_of "$f") bytes)"
}

# mk_layer NAME -> $WORK/NAME.tar.gz from directory $WORK/NAME (deterministic bytes)
mk_layer() {
    find "$WORK/$1" -type d -exec chmod 755 {} + ; find "$WORK/$1" -type f -exec chmod 644 {} +
    tar --format=gnu --sort=name --mtime=@1704067200 --owner=0 --group=0 --numeric-owner \
        -C "$WORK/$1" -cf "$WORK/$1.tar" .
    gzip -9n < "$WORK/$1.tar" > "$WORK/$1.tar.gz"
}

# ---- shared base layer ---------------------------------------------------------
mkdir -p "$WORK/base/etc" "$WORK/base/workspace"
printf 'NAME="aidc test base"\nID=aidc-test\nVERSION_ID=1\n' > "$WORK/base/etc/os-release"
mk_layer base
BASE_DIFF=$(digest_of "$WORK/base.tar")

log "registry $REGISTRY_URL"
http GET "$REGISTRY_URL/v2/"
expect 200 "GET /v2/ (is the registry up, are credentials right?)"

HDR="repository	tag	manifest_media_type	manifest_digest	size_bytes	config_digest	labels_json"
RESULTS=("$HDR")
first_repo=""

# seed REPO TAG FORMAT(docker|oci) FRAMEWORK FRAMEWORK_VERSION CUDA PYTHON CREATED
seed() {
    local repo=$1 tag=$2 fmt=$3 fw=$4 fwv=$5 cuda=$6 py=$7 created=$8
    local name="app-${fw}-${tag}" mt_manifest mt_config mt_layer
    log "$repo:$tag ($fmt)"
    # own layer: a version file plus some filler so sizes differ per image
    mkdir -p "$WORK/$name/opt/$fw"
    printf '%s %s cuda%s python%s\n' "$fw" "$fwv" "$cuda" "$py" > "$WORK/$name/opt/$fw/VERSION"
    { yes "$fw $fwv cuda $cuda" || true; } | head -c $((4096 * ${#fwv})) > "$WORK/$name/opt/$fw/lib.txt"
    mk_layer "$name"
    if [ "$fmt" = oci ]; then
        mt_manifest=application/vnd.oci.image.manifest.v1+json
        mt_config=application/vnd.oci.image.config.v1+json
        mt_layer=application/vnd.oci.image.layer.v1.tar+gzip
    else
        mt_manifest=application/vnd.docker.distribution.manifest.v2+json
        mt_config=application/vnd.docker.container.image.v1+json
        mt_layer=application/vnd.docker.image.rootfs.diff.tar.gzip
    fi
    jq -cn --arg created "$created" --arg fw "$fw" --arg fwv "$fwv" --arg cuda "$cuda" \
          --arg py "$py" --arg tag "$tag" --arg d0 "$BASE_DIFF" --arg d1 "$(digest_of "$WORK/$name.tar")" '{
        architecture: "amd64", os: "linux", created: $created,
        config: {
          Env: ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                "NVIDIA_VISIBLE_DEVICES=all", ("CUDA_VERSION=" + $cuda)],
          Cmd: ["python3"], WorkingDir: "/workspace",
          Labels: {framework: $fw, framework_version: $fwv, cuda_version: $cuda,
                   python_version: $py, "org.opencontainers.image.title": $fw,
                   "org.opencontainers.image.version": $tag}},
        rootfs: {type: "layers", diff_ids: [$d0, $d1]},
        history: [{created: $created, created_by: "registry-seed.sh base layer"},
                  {created: $created, created_by: ("registry-seed.sh " + $fw + " " + $fwv)}]
      }' > "$WORK/$name.config.json"

    push_blob "$repo" "$WORK/base.tar.gz" "$first_repo"
    push_blob "$repo" "$WORK/$name.tar.gz"
    push_blob "$repo" "$WORK/$name.config.json"

    jq -cn --arg mt "$mt_manifest" --arg mtc "$mt_config" --arg mtl "$mt_layer" \
          --arg cd "$(digest_of "$WORK/$name.config.json")" --argjson cs "$(size_of "$WORK/$name.config.json")" \
          --arg l0 "$(digest_of "$WORK/base.tar.gz")" --argjson s0 "$(size_of "$WORK/base.tar.gz")" \
          --arg l1 "$(digest_of "$WORK/$name.tar.gz")" --argjson s1 "$(size_of "$WORK/$name.tar.gz")" \
          --arg fmt "$fmt" --arg created "$created" '{
        schemaVersion: 2, mediaType: $mt,
        config: {mediaType: $mtc, size: $cs, digest: $cd},
        layers: [{mediaType: $mtl, size: $s0, digest: $l0}, {mediaType: $mtl, size: $s1, digest: $l1}]
      } + (if $fmt == "oci" then {annotations: {"org.opencontainers.image.created": $created}} else {} end)' \
      > "$WORK/$name.manifest.json"
    local mdg; mdg=$(digest_of "$WORK/$name.manifest.json")

    http PUT "$REGISTRY_URL/v2/$repo/manifests/$tag" -H "Content-Type: $mt_manifest" \
         --data-binary "@$WORK/$name.manifest.json"
    expect 201 "PUT manifest $repo:$tag"
    [ "$(hdr Docker-Content-Digest)" = "$mdg" ] || die "manifest digest header $(hdr Docker-Content-Digest) != $mdg"

    # read back as a client would: the Accept header must name the manifest type
    http GET "$REGISTRY_URL/v2/$repo/manifests/$tag" -H "Accept: $mt_manifest"
    expect 200 "GET manifest $repo:$tag"
    [ "$(hdr Docker-Content-Digest)" = "$mdg" ] || die "GET manifest digest mismatch"
    cmp -s "$WORK/b" "$WORK/$name.manifest.json" || die "GET manifest bytes differ from PUT"
    local size; size=$(jq '.config.size + ([.layers[].size] | add)' "$WORK/b")
    local cdg; cdg=$(jq -r .config.digest "$WORK/b")
    http GET "$REGISTRY_URL/v2/$repo/blobs/$cdg"
    expect 200 "GET config blob"
    local labels; labels=$(jq -c .config.Labels "$WORK/b")
    RESULTS+=("$repo	$tag	$mt_manifest	$mdg	$size	$cdg	$labels")
    [ -n "$first_repo" ] || first_repo=$repo
}

seed pytorch/pytorch       2.4-cuda12.4 docker pytorch    2.4.0  12.4 3.11 2024-07-24T00:00:00Z
seed pytorch/pytorch       2.3-cuda12.1 docker pytorch    2.3.1  12.1 3.10 2024-06-05T00:00:00Z
seed tensorflow/tensorflow 2.16-gpu     oci    tensorflow 2.16.1 12.3 3.11 2024-03-08T00:00:00Z
seed tensorflow/tensorflow 2.15-gpu     oci    tensorflow 2.15.0 12.2 3.11 2023-11-14T00:00:00Z

# ---- final checks: catalog and tag lists --------------------------------------------
http GET "$REGISTRY_URL/v2/_catalog?n=100"
expect 200 "GET _catalog"
for r in pytorch/pytorch tensorflow/tensorflow; do
    jq -e --arg r "$r" '.repositories | index($r)' "$WORK/b" >/dev/null || die "_catalog lacks $r"
done
http GET "$REGISTRY_URL/v2/pytorch/pytorch/tags/list"
expect 200 "GET tags/list"
[ "$(jq -c '.tags | sort' "$WORK/b")" = '["2.3-cuda12.1","2.4-cuda12.4"]' ] || die "unexpected tags: $(cat "$WORK/b")"

printf '%s\n' "${RESULTS[@]}" | tee ${SEED_OUT:+"$SEED_OUT"}
log "done: ${#RESULTS[@]} lines (incl. header)"
