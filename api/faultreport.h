/*
 * faultreport.h - the body of POST /clusters/{name}/gpu-faults, read into
 * a list of reports without touching the database (unit-tested over canned
 * payloads, tests/unit/test_faultreport.c). Two forms:
 *
 * - an operator's: {"node", "gpus": [0, 1] | "all" (default), "reason",
 *   "source" (default "operator")}: one report per GPU, all firing; any
 *   problem refuses the whole body;
 * - an Alertmanager webhook (version "4", as DCGM exporter alerts arrive):
 *   {"alerts": [{"status": "firing" | "resolved", "labels": {...},
 *   "annotations": {...}, "startsAt"}, ...], ...}: one report per alert. The
 *   node is the label "node", else "Hostname", else "instance" without its
 *   port; the GPU the label "gpu" (none: every GPU of the node); the reason
 *   alertname and the summary (or description) annotation. An alert aidc
 *   cannot read is reported with an error and skipped, so one bad alert
 *   does not drop its group. Alertmanager's other fields (and Grafana's)
 *   are not read.
 */
#ifndef AIDC_API_FAULTREPORT_H
#define AIDC_API_FAULTREPORT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Alerts in one request; set Alertmanager's max_alerts to this or less. */
#define FAULTREPORT_MAX_ALERTS 256
/* GPUs one operator request may name. */
#define FAULTREPORT_MAX_GPUS      64
#define FAULTREPORT_MAX_GPU_INDEX 1023
#define FAULTREPORT_MAX_REASON    500

/* Which of its fixed reasons a refusal (or a skipped alert) has: the API
 * answers each with its own problem (api/gpufaults.c). */
enum faultreport_error {
    FAULTREPORT_E_NONE = 0,
    FAULTREPORT_E_BODY,          /* not a JSON object */
    FAULTREPORT_E_UNKNOWN_FIELD, /* field names it */
    FAULTREPORT_E_NODE,
    FAULTREPORT_E_REASON,
    FAULTREPORT_E_SOURCE,
    FAULTREPORT_E_GPUS,
    FAULTREPORT_E_GPUS_ITEM,
    FAULTREPORT_E_GPUS_TOO_MANY,
    FAULTREPORT_E_VERSION,
    FAULTREPORT_E_ALERTS,
    FAULTREPORT_E_ALERTS_TOO_MANY,
    /* one alert of a webhook (faultreport_item.why) */
    FAULTREPORT_E_ALERT_SHAPE,
    FAULTREPORT_E_ALERT_STATUS,
    FAULTREPORT_E_ALERT_NODE,
    FAULTREPORT_E_ALERT_GPU,
};

struct faultreport_item {
    bool firing; /* else resolved: the GPU is back in service */
    char *node;
    int gpu;      /* -1: every GPU of the node */
    char *reason; /* at most FAULTREPORT_MAX_REASON characters */
    char *alert;  /* the alert's name (webhook), or NULL */
    char *since;  /* when it started, "YYYY-MM-DDTHH:MM:SSZ" (webhook), or NULL: now */
    char *error;  /* this alert is skipped, and why (webhook only), or NULL */
    enum faultreport_error why; /* the same as a code, when error is set */
};

struct faultreport {
    bool webhook;
    char *source; /* "alertmanager", or the operator's (default "operator") */
    struct faultreport_item *items;
    size_t n;
    enum faultreport_error error; /* why faultreport_parse refused the body */
};

enum faultreport_status {
    FAULTREPORT_OK = 0,
    FAULTREPORT_BAD = 1,      /* 400: field and message say what */
    FAULTREPORT_TOO_MANY = 2, /* 413: more alerts or GPUs than a request may hold */
};

/*
 * Read body into out (freed with faultreport_free, also after a failure).
 * Returns an enum faultreport_status; on a failure field ("alerts",
 * "gpus", ...) and msg say what, in the API's words, and out->error which
 * reason it is. out owns its strings.
 */
int faultreport_parse(const json_t *body, struct faultreport *out, char *field, size_t fsz,
                      char *msg, size_t msz);
void faultreport_free(struct faultreport *r);

#endif
