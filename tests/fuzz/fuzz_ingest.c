/*
 * fuzz_ingest.c - the body of POST /api/v1/audit/commands (api/auditrecord.c):
 * agents' command records, as NDJSON when the first byte is odd, else as
 * {"commands": [...]}. What is accepted must be what db_audit_ingest expects.
 */
#include "fuzz.h"
#include "body.h"

#include "api/auditrecord.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    bool ndjson = data[0] & 1;
    time_t now = 1764662400; /* 2025-12-02T08:00:00Z */
    struct resp rs = {0};
    json_t *records = NULL;
    int e = auditrecord_parse((const char *)data + 1, size - 1, ndjson, 1000, now,
                              now - 400L * 86400, &rs, &records);
    if (e == 0) {
        size_t i;
        json_t *r;
        if (json_array_size(records) == 0)
            abort();
        json_array_foreach(records, i, r) {
            if (!json_is_string(json_object_get(r, "ts")) ||
                !json_is_string(json_object_get(r, "host")) ||
                !json_is_object(json_object_get(r, "details")))
                abort();
        }
    } else if (!rs.err.status) {
        abort(); /* every refusal is a 400 the client can read */
    }
    json_decref(records);
    fuzz_render(&rs);
    return 0;
}
