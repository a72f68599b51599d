/*
 * registryfix.h - answers of a real container registry (docker-registry 2.8.2,
 * recorded in shared/fixtures/registry/README.md; the manifests byte for byte,
 * so their sha256 is the recorded Docker-Content-Digest), plus a buildx-style
 * OCI index and small helpers, for the unit tests of images/manifest.h.
 */
#ifndef AIDC_TEST_REGISTRYFIX_H
#define AIDC_TEST_REGISTRYFIX_H

#include "lib/xalloc.h"

#include <stdbool.h>
#include <string.h>

/* ---- the recorded answers ------------------------------------------------------------ */

/* GET /v2/pytorch/pytorch/manifests/2.4-cuda12.4: Content-Length 584, with jq's newline */
static const char DOCKER_V2[] =
    "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.docker.distribution.manifest.v2+json\","
    "\"config\":{\"mediaType\":\"application/vnd.docker.container.image.v1+json\",\"size\":810,"
    "\"digest\":\"sha256:63a9914a0ff3846ebf15ecfac4371d68ca6a0eaa378b1e9424a586c34bb38ac1\"},"
    "\"layers\":[{\"mediaType\":\"application/vnd.docker.image.rootfs.diff.tar.gzip\",\"size\":209,"
    "\"digest\":\"sha256:6e71575bd948ce341dae590d4e8ac03ccb1318235642b1b38d797d7cdb117374\"},"
    "{\"mediaType\":\"application/vnd.docker.image.rootfs.diff.tar.gzip\",\"size\":275,"
    "\"digest\":\"sha256:3f6a53345631b4b2afee4da2da1e3a42038aba90b7a0db00f8ae2d8fb5b77ffb\"}]}\n";
#define DOCKER_V2_DIGEST "sha256:817bafa10c302b932e90a03c553c00a3b8dd7834cbdc9d2196efdb0d0c98afdf"
#define DOCKER_V2_CONFIG "sha256:63a9914a0ff3846ebf15ecfac4371d68ca6a0eaa378b1e9424a586c34bb38ac1"

/* GET /v2/tensorflow/tensorflow/manifests/2.16-gpu (Content-Type: OCI image manifest) */
static const char OCI_MANIFEST[] =
    "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
    "\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\"size\":817,"
    "\"digest\":\"sha256:ce8f045e5ff92f26e40fcaded73eb85bd175ea614436c7b0c37f554321675439\"},"
    "\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\",\"size\":209,"
    "\"digest\":\"sha256:6e71575bd948ce341dae590d4e8ac03ccb1318235642b1b38d797d7cdb117374\"},"
    "{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\",\"size\":288,"
    "\"digest\":\"sha256:7b2312fc4cf7af24950ecbbde14a27c051b913fdfa7134778c3222d347aed6de\"}],"
    "\"annotations\":{\"org.opencontainers.image.created\":\"2024-03-08T00:00:00Z\"}}\n";
#define OCI_MANIFEST_DIGEST                                                                        \
    "sha256:f06701933d31aa4feaea7adc9f1c9d16fa87e27d4e18da540820af795f8f79cf"

/* GET /v2/pytorch/pytorch/blobs/sha256:63a9914a… (the config of DOCKER_V2, 810 bytes) */
static const char CONFIG_BLOB[] =
    "{\"architecture\":\"amd64\",\"os\":\"linux\",\"created\":\"2024-07-24T00:00:00Z\","
    "\"config\":{\"Env\":[\"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\","
    "\"NVIDIA_VISIBLE_DEVICES=all\",\"CUDA_VERSION=12.4\"],\"Cmd\":[\"python3\"],"
    "\"WorkingDir\":\"/workspace\",\"Labels\":{\"framework\":\"pytorch\",\"framework_version\":"
    "\"2.4.0\",\"cuda_version\":\"12.4\",\"python_version\":\"3.11\","
    "\"org.opencontainers.image.title\":\"pytorch\",\"org.opencontainers.image.version\":"
    "\"2.4-cuda12.4\"}},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":["
    "\"sha256:488b53e53e1f86437c1e1edcf58cab278600641d16446c074a7b8e6ce47cd2a7\","
    "\"sha256:24b603dd4bc236194214a232f3c35ac4e6012fbd0c06952d826f980a917fd6a6\"]},"
    "\"history\":[{\"created\":\"2024-07-24T00:00:00Z\",\"created_by\":\"registry-seed.sh base "
    "layer\"},{\"created\":\"2024-07-24T00:00:00Z\",\"created_by\":\"registry-seed.sh pytorch "
    "2.4.0\"}]}\n";

/*
 * What the same registry answers without an Accept header: a signed schema 1
 * manifest (shape of distribution's conversion; the signature is not checked).
 */
static const char SCHEMA1[] =
    "{\n   \"schemaVersion\": 1,\n   \"name\": \"pytorch/pytorch\",\n   \"tag\": "
    "\"2.4-cuda12.4\",\n"
    "   \"architecture\": \"amd64\",\n   \"fsLayers\": [\n      {\n         \"blobSum\": "
    "\"sha256:3f6a53345631b4b2afee4da2da1e3a42038aba90b7a0db00f8ae2d8fb5b77ffb\"\n      },\n"
    "      {\n         \"blobSum\": "
    "\"sha256:6e71575bd948ce341dae590d4e8ac03ccb1318235642b1b38d797d7cdb117374\"\n      }\n   ],\n"
    "   \"history\": [\n      {\n         \"v1Compatibility\": "
    "\"{\\\"architecture\\\":\\\"amd64\\\"}\"\n"
    "      }\n   ],\n   \"signatures\": [\n      {\n         \"header\": {\n            \"jwk\": "
    "{\n"
    "               \"crv\": \"P-256\",\n               \"kty\": \"EC\"\n            },\n"
    "            \"alg\": \"ES256\"\n         },\n         \"signature\": \"c2ln\",\n"
    "         \"protected\": \"eyJmb3JtYXRMZW5ndGgiOjEyMzR9\"\n      }\n   ]\n}";
#define MT_SCHEMA1 "application/vnd.docker.distribution.manifest.v1+prettyjws"

/* A multi-platform image as buildx pushes it: two platforms and an attestation. */
static const char OCI_INDEX[] =
    "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.index.v1+json\",\"manifests\":["
    "{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
    "\"digest\":\"sha256:817bafa10c302b932e90a03c553c00a3b8dd7834cbdc9d2196efdb0d0c98afdf\","
    "\"size\":584,\"platform\":{\"architecture\":\"amd64\",\"os\":\"linux\"}},"
    "{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
    "\"digest\":\"sha256:f06701933d31aa4feaea7adc9f1c9d16fa87e27d4e18da540820af795f8f79cf\","
    "\"size\":630,\"platform\":{\"architecture\":\"arm64\",\"os\":\"linux\",\"variant\":\"v8\"}},"
    "{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
    "\"digest\":\"sha256:924264646214395dd83f4aa65cb05ba12549d17f1097275d88f05c590efc38c9\","
    "\"size\":566,\"annotations\":{\"vnd.docker.reference.digest\":"
    "\"sha256:817bafa10c302b932e90a03c553c00a3b8dd7834cbdc9d2196efdb0d0c98afdf\","
    "\"vnd.docker.reference.type\":\"attestation-manifest\"},"
    "\"platform\":{\"architecture\":\"unknown\",\"os\":\"unknown\"}}]}";

#define HEX64       "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define GOOD_DIGEST "sha256:" HEX64

/* n copies of c (malloc'd) */
static inline char *rep(char c, size_t n)
{
    char *s = xmalloc(n + 1);
    memset(s, c, n);
    s[n] = '\0';
    return s;
}

static inline bool utf8_valid(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        size_t extra = *p < 0x80             ? 0
                       : (*p & 0xE0) == 0xC0 ? 1
                       : (*p & 0xF0) == 0xE0 ? 2
                       : (*p & 0xF8) == 0xF0 ? 3
                                             : 9;
        if (extra == 9)
            return false;
        p++;
        for (size_t i = 0; i < extra; i++, p++)
            if ((*p & 0xC0) != 0x80)
                return false;
    }
    return true;
}

#endif
