/* audit.c (api) - the audit endpoints (see audit.h). */
#include "audit.h"

#include <microhttpd.h>

#define TODO(fn)                                                                   \
    int fn(struct req *rq, struct resp *rs)                                        \
    {                                                                              \
        (void)rq;                                                                  \
        return api_fail(rs, MHD_HTTP_NOT_IMPLEMENTED, "not built yet");           \
    }
TODO(api_audit_events)
TODO(api_audit_export)
TODO(api_audit_verify)
TODO(api_audit_checkpoints)
TODO(api_audit_public_key)
TODO(api_audit_ingest)
TODO(api_audit_commands)
