/*
 * fuzz_faultreport.c - the body of POST /clusters/{name}/gpu-faults: an
 * operator's report or an Alertmanager webhook (api/faultreport.c).
 */
#include "fuzz.h"
#include "body.h"

#include "api/faultreport.h"
#include "server/validate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *body = fuzz_body(data, size);
    if (!body)
        return 0;
    struct faultreport fr;
    memset(&fr, 0, sizeof fr);
    char field[64], msg[256];
    field[0] = msg[0] = '\0';
    int st = faultreport_parse(body, &fr, field, sizeof field, msg, sizeof msg);
    if (st == FAULTREPORT_OK) {
        for (size_t i = 0; i < fr.n; i++) {
            const struct faultreport_item *it = &fr.items[i];
            if (it->error)
                continue;
            /* what api/gpufaults.c stores: text the database takes */
            if (!it->node || !it->reason || it->gpu < -1 ||
                it->gpu > FAULTREPORT_MAX_GPU_INDEX ||
                validate_utf8_len(it->reason) > FAULTREPORT_MAX_REASON)
                abort();
        }
    } else if (strlen(field) >= sizeof field || strlen(msg) >= sizeof msg) {
        abort();
    }
    faultreport_free(&fr);
    json_decref(body);
    return 0;
}
