/*
 * fuzz_manifest.c - bodies a container registry answers (images/manifest.c):
 * a manifest under each media type aidc asks for (and none, and schema 1),
 * an image config's labels, a token service's answer, digest checks, and a
 * page of the catalog or of a tag list.
 */
#include "fuzz.h"

#include "images/manifest.h"

static const char *const types[] = {
    MT_DOCKER_MANIFEST, MT_DOCKER_LIST, MT_OCI_MANIFEST, MT_OCI_INDEX,
    "application/vnd.docker.distribution.manifest.v1+prettyjws", "application/json", NULL};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (int null_ok = 0; null_ok < 2; null_ok++) {
        json_t *items = json_array();
        char why[128];
        if (!items)
            abort();
        if (registry_list_page((const char *)data, size, null_ok ? "tags" : "repositories",
                               null_ok, items, why, sizeof why) == 0) {
            size_t i;
            json_t *v;
            json_array_foreach(items, i, v) {
                if (!json_is_string(v))
                    abort(); /* only names go on to the registry's paths */
            }
        } else if (!why[0]) {
            abort();
        }
        json_decref(items);
    }
    const char *body = (const char *)data;
    char err[256];
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        struct manifest m;
        memset(&m, 0, sizeof m);
        if (manifest_parse(body, size, types[t], &m, err, sizeof err) == 0) {
            if (m.size < 0 || (m.index && m.nchildren && !m.children))
                abort();
            for (size_t i = 0; i < m.nchildren; i++)
                if (!imgref_digest_valid(m.children[i].digest) || m.children[i].size < 0)
                    abort();
            if (!m.index && !imgref_digest_valid(m.config_digest))
                abort();
        }
        manifest_free(&m);
    }
    json_t *labels = manifest_config_labels(body, size, err, sizeof err);
    if (labels && json_object_size(labels) > IMAGE_LABELS_MAX + 2)
        abort();
    json_decref(labels);
    free(registry_parse_token(body, size));
    (void)manifest_digest_matches(body, size, "sha256:"
                                  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    return 0;
}
