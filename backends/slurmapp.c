/* slurmapp.c - where a Slurm session's app answers (see slurmapp.h). */
#include "slurmapp.h"

#include "../lib/err.h"
#include "slurmnode.h"
#include "slurmscript.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLURM_INVALID_JOB_ID 2017
/* below: the node's system services (sshd, ...), never an app's */
#define PORT_MIN 1024
#define PORT_MAX 65535

/* digits only, 1 to max of them, as a number into *v */
static bool number(const char *s, size_t len, size_t max, long *v)
{
    if (len < 1 || len > max)
        return false;
    long x = 0;
    for (size_t i = 0; i < len; i++) {
        if (!isdigit((unsigned char)s[i]))
            return false;
        x = x * 10 + (s[i] - '0');
    }
    *v = x;
    return true;
}

/*
 * The report at the end of comment: 0 with *port and *restarts;
 * AIDC_ENOTFOUND when there is none; AIDC_EINVAL when it is malformed.
 */
static int report_of(const char *comment, long *port, long *restarts, char *err, size_t errsz)
{
    const char *sp = strrchr(comment, ' ');
    const char *last = sp ? sp + 1 : comment;
    size_t tl = strlen(SLURMSCRIPT_PORT_TAG);
    if (strncmp(last, SLURMSCRIPT_PORT_TAG, tl) != 0)
        return AIDC_ENOTFOUND;
    const char *p = last + tl, *colon = strchr(p, ':');
    if (!colon || !number(p, (size_t)(colon - p), 5, port) ||
        !number(colon + 1, strlen(colon + 1), 6, restarts)) {
        snprintf(err, errsz, "the job's comment ends with \"%.40s\", not %s<port>:<restarts>", last,
                 SLURMSCRIPT_PORT_TAG);
        return AIDC_EINVAL;
    }
    return 0;
}

int slurmapp_job_port(const json_t *job, const char *run_key, const char *user, int *port,
                      char *node, size_t n, char *err, size_t errsz)
{
    const char *name = json_string_value(json_object_get(job, "name"));
    const char *owner = json_string_value(json_object_get(job, "user_name"));
    const char *state = json_string_value(json_object_get(job, "job_state"));
    const char *comment = json_string_value(json_object_get(job, "comment"));
    const char *host = json_string_value(json_object_get(job, "batch_host"));
    if (!name || !owner || strcmp(name, run_key) != 0 || strcmp(owner, user) != 0) {
        snprintf(err, errsz, "Slurm job %lld is not run %s's of user %s",
                 (long long)json_integer_value(json_object_get(job, "job_id")), run_key, user);
        return AIDC_EINVAL;
    }
    /* pending (a requeue keeps the last start's comment), ending or ended: no app */
    if (!state || strcmp(state, "RUNNING") != 0 || !comment)
        return AIDC_ENOTFOUND;
    long p = 0, restarts = 0;
    int e = report_of(comment, &p, &restarts, err, errsz);
    if (e)
        return e;
    if (restarts != json_integer_value(json_object_get(job, "restart_cnt")))
        return AIDC_ENOTFOUND; /* an earlier start's report: this one has not said yet */
    if (p < PORT_MIN || p > PORT_MAX) {
        snprintf(err, errsz, "the job reported port %ld: an app's port is %d to %d", p, PORT_MIN,
                 PORT_MAX);
        return AIDC_EINVAL;
    }
    /* where the batch script runs (which bound the port), among the nodes allocated to the
     * job: Slurm's record, which the job cannot write */
    const json_t *res = json_object_get(job, "job_resources");
    const char *alloc = json_string_value(json_object_get(res, "nodes"));
    if (!alloc)
        alloc = json_string_value(json_object_get(job, "nodes"));
    if (!host || !host[0])
        return AIDC_ENOTFOUND;
    if (!backend_node_name_valid(host) || strlen(host) >= n || !alloc ||
        !slurmnode_hostlist_has(alloc, host)) {
        snprintf(err, errsz,
                 "Slurm says the job's batch host is \"%.64s\", not one of its nodes "
                 "\"%.64s\"",
                 host, alloc ? alloc : "");
        return AIDC_EINVAL;
    }
    snprintf(node, n, "%s", host);
    *port = (int)p;
    return 0;
}

/* a host name ([A-Za-z0-9.-], labels not starting or ending with '-') or an IP address */
static bool host_ok(const char *s)
{
    unsigned char buf[sizeof(struct in6_addr)];
    size_t n = strlen(s);
    if (n < 1 || n > 253)
        return false;
    if (strchr(s, ':'))
        return inet_pton(AF_INET6, s, buf) == 1;
    for (size_t i = 0; i < n; i++) {
        bool edge = i == 0 || i == n - 1 || s[i - 1] == '.' || s[i + 1] == '.';
        if (!isalnum((unsigned char)s[i]) && !(s[i] == '.' && !edge) && !(s[i] == '-' && !edge))
            return false;
    }
    return true;
}

int slurmapp_node_host(const json_t *node, const char *name, char *host, size_t n, char *err,
                       size_t errsz)
{
    const char *nm = json_string_value(json_object_get(node, "name"));
    const char *addr = json_string_value(json_object_get(node, "address"));
    if (!nm || strcmp(nm, name) != 0) {
        snprintf(err, errsz, "GET node/%s: the answer is node \"%.64s\"", name, nm ? nm : "");
        return AIDC_EINVAL;
    }
    /* NodeAddr defaults to the node's name (slurm.conf) */
    const char *h = addr && addr[0] ? addr : name;
    if (!host_ok(h) || strlen(h) >= n) {
        snprintf(err, errsz, "node %s's address \"%.64s\" is no host name or IP address", name, h);
        return AIDC_EINVAL;
    }
    snprintf(host, n, "%s", h);
    return 0;
}

/* GET path; its first element of list (new reference) or NULL: *e AIDC_ENOTFOUND when
 * slurmrestd says there is no such job, AIDC_EUNAVAIL for any other failure */
static json_t *get_first(const struct slurmrest_target *t, const char *path, const char *list,
                         int *e, char *err, size_t errsz)
{
    struct slurmrest_answer a;
    *e = slurmrest_call(t, "GET", path, NULL, &a, err, errsz);
    if (*e) {
        *e = AIDC_EUNAVAIL;
        return NULL;
    }
    json_t *first = json_array_get(json_object_get(a.json, list), 0);
    json_t *er = json_array_get(json_object_get(a.json, "errors"), 0);
    json_t *num = json_object_get(er, "error_number");
    if (slurmrest_ok(&a, err, errsz) && json_is_object(first)) {
        json_incref(first);
    } else {
        first = NULL;
        *e = json_integer_value(num ? num : json_object_get(er, "error_code")) ==
                     SLURM_INVALID_JOB_ID
                 ? AIDC_ENOTFOUND
                 : AIDC_EUNAVAIL;
        if (!err[0])
            snprintf(err, errsz, "GET %s: no %s in the answer", path, list);
    }
    slurmrest_answer_free(&a);
    return first;
}

int slurmapp_endpoint(const struct slurmrest_target *t, const char *run_key, const char *backend_id,
                      struct backend_endpoint *out, char *err, size_t errsz)
{
    memset(out, 0, sizeof *out);
    size_t len = backend_id ? strlen(backend_id) : 0;
    long unused;
    if (!number(backend_id ? backend_id : "", len, 10, &unused)) /* Slurm's ids are 32 bits */
        return AIDC_ENOTFOUND;                                   /* never reached Slurm */
    char path[300], node[254];
    snprintf(path, sizeof path, "job/%s", backend_id);
    int e = 0;
    json_t *job = get_first(t, path, "jobs", &e, err, errsz);
    if (job)
        e = slurmapp_job_port(job, run_key, t->user, &out->port, node, sizeof node, err, errsz);
    json_decref(job);
    if (e)
        return e;
    snprintf(path, sizeof path, "node/%s", node);
    json_t *nd = get_first(t, path, "nodes", &e, err, errsz);
    if (nd)
        e = slurmapp_node_host(nd, node, out->host, sizeof out->host, err, errsz);
    else if (e == AIDC_ENOTFOUND)
        e = AIDC_EUNAVAIL; /* a node of a running job: slurmrestd could not say */
    json_decref(nd);
    if (e)
        memset(out, 0, sizeof *out);
    return e;
}
