/* crashload.c - the crash test's load generator (see crashload.h). */
#include "crashload.h"

#include "client.h"
#include "harness.h"
#include "slurmtest.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* How long one operation may go unanswered (aidcd restarting, PostgreSQL down). */
#define OP_DEADLINE_S 120.0

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void nap_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0 && errno == EINTR)
        ;
}

static bool retryable(long st)
{
    return st == 0 || st == 500 || st == 502 || st == 503 || st == 504;
}

static void record(struct crashload *l, const struct crashload_op *op)
{
    pthread_mutex_lock(&l->mu);
    if (l->nops == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        struct crashload_op *p = realloc(l->ops, cap * sizeof *p);
        if (!p) {
            pthread_mutex_unlock(&l->mu);
            fprintf(stderr, "crashload: out of memory\n");
            abort();
        }
        l->ops = p;
        l->cap = cap;
    }
    l->ops[l->nops++] = *op;
    pthread_mutex_unlock(&l->mu);
}

/*
 * Send until a final answer (or the deadline): the same request each time.
 * Fills op->status, tries, uncertain; the id of a 2xx answer into id.
 */
static void send_until_final(struct crashload *l, struct crashload_op *op, const char *path,
                             const char *token, const char *ctype, const char *body,
                             const char *key, char *id, size_t idn)
{
    char hdr[128];
    snprintf(hdr, sizeof hdr, "Idempotency-Key: %s", key ? key : "");
    const char *extra[] = {hdr, NULL};
    double until = now_s() + OP_DEADLINE_S;
    for (op->tries = 1;; op->tries++) {
        struct http_res r;
        long st = http_raw(l->srv, "POST", path, token, ctype, body, strlen(body),
                           key ? extra : NULL, &r);
        if (!retryable(st) || now_s() > until || op->give_up || atomic_load(&l->abandon)) {
            op->status = retryable(st) ? 0 : st;
            const char *v = json_string_value(json_object_get(r.json, "id"));
            if (id && st / 100 == 2 && v)
                snprintf(id, idn, "%s", v);
            http_res_free(&r);
            return;
        }
        if (st == 500)
            atomic_fetch_add(&l->retried_500, 1);
        http_res_free(&r);
        op->uncertain = true;
        nap_ms(50);
    }
}

static void do_job(struct crashload *l, int n, unsigned *rs)
{
    struct crashload_op op = {.kind = CRASHLOAD_JOB, .give_up = n % 5 == 4};
    snprintf(op.name, sizeof op.name, "j%d", n);
    char path[160], key[64];
    snprintf(path, sizeof path, "/api/v1/tenants/%s/jobs", l->tenant);
    snprintf(key, sizeof key, "crash-%u-j%d", l->seed, n);
    /* slurmtest_job's buffer is thread-local (fmt): keep a copy across the retries */
    char *body = strdup(
        slurmtest_job(op.name, 1, n % 2 ? "h100" : "a100", "#!/bin/bash\nsleep 1\n"));
    if (!body)
        abort();
    send_until_final(l, &op, path, l->member_jwt, "application/json", body, key, op.id,
                     sizeof op.id);
    /* a pipeline that lost the answer sends the same submit once more */
    if (op.status / 100 == 2 && rand_r(rs) % 4 == 0) {
        struct crashload_op again = {.kind = CRASHLOAD_JOB};
        send_until_final(l, &again, path, l->member_jwt, "application/json", body, key,
                         op.replay_id, sizeof op.replay_id);
        op.replay = again.status;
    }
    free(body);
    record(l, &op);
}

static void do_project(struct crashload *l, int n)
{
    struct crashload_op op = {.kind = CRASHLOAD_PROJECT, .with_key = n % 2 == 1,
                              .give_up = n % 4 == 2};
    snprintf(op.name, sizeof op.name, "p%u-%d", l->seed % 100000, n);
    char path[160], body[200], key[96];
    snprintf(path, sizeof path, "/api/v1/tenants/%s/projects", l->tenant);
    snprintf(body, sizeof body, "{\"slug\":\"%s\",\"name\":\"Project %d\"}", op.name, n);
    snprintf(key, sizeof key, "crash-%s", op.name);
    send_until_final(l, &op, path, l->admin_jwt, "application/json", body,
                     op.with_key ? key : NULL, op.id, sizeof op.id);
    record(l, &op);
}

static void do_batch(struct crashload *l, int n)
{
    struct crashload_op op = {.kind = CRASHLOAD_BATCH, .give_up = n % 4 == 3};
    snprintf(op.name, sizeof op.name, "crash-%u-b%d", l->seed, n);
    char ts[32];
    time_t t = time(NULL) - 5;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
    char body[2048];
    size_t len = 0;
    for (int k = 0; k < CRASHLOAD_BATCH_RECORDS; k++)
        len += (size_t)snprintf(body + len, sizeof body - len,
                                "{\"ts\":\"%s\",\"host\":\"%s\",\"user\":\"ci\",\"uid\":1000,"
                                "\"session\":\"s%d\",\"cwd\":\"/\",\"command\":\"make %d\","
                                "\"exit_code\":0,\"record_id\":\"%s-%d\"}\n",
                                ts, l->host, n, k, op.name, k);
    send_until_final(l, &op, "/api/v1/audit/commands", l->ingest_token, "application/x-ndjson",
                     body, NULL, NULL, 0);
    record(l, &op);
}

static void *run(void *arg)
{
    struct crashload_thread *a = arg;
    struct crashload *l = a->l;
    unsigned rs = l->seed * 3u + (unsigned)a->kind;
    for (int n = 0; !atomic_load(&l->stop); n++) {
        switch (a->kind) {
        case CRASHLOAD_JOB:
            if (n >= l->max_jobs)
                return arg;
            do_job(l, n, &rs);
            break;
        case CRASHLOAD_PROJECT:
            do_project(l, n);
            break;
        case CRASHLOAD_BATCH:
            do_batch(l, n);
            break;
        }
        /* jobs come slower: Slurm must run every one before the deadline */
        nap_ms((long)(rand_r(&rs) % (a->kind == CRASHLOAD_JOB ? 600 : 100)));
    }
    return arg;
}

void crashload_start(struct crashload *l)
{
    atomic_init(&l->stop, false);
    atomic_init(&l->abandon, false);
    atomic_init(&l->retried_500, 0);
    pthread_mutex_init(&l->mu, NULL);
    l->inited = true;
    l->ops = NULL;
    l->nops = l->cap = 0;
    for (int i = 0; i < 3; i++) {
        l->threads[i].l = l;
        l->threads[i].kind = (enum crashload_kind)i;
        if (pthread_create(&l->threads[i].th, NULL, run, &l->threads[i]) != 0) {
            fprintf(stderr, "crashload: cannot start a thread\n");
            abort();
        }
        l->started = i + 1;
    }
}

void crashload_stop(struct crashload *l)
{
    atomic_store(&l->stop, true);
    for (int i = 0; i < l->started; i++)
        pthread_join(l->threads[i].th, NULL);
    l->started = 0;
}

void crashload_abandon(struct crashload *l)
{
    atomic_store(&l->abandon, true);
    crashload_stop(l);
}

void crashload_free(struct crashload *l)
{
    if (!l->inited)
        return;
    l->inited = false;
    free(l->ops);
    l->ops = NULL;
    l->nops = l->cap = 0;
    pthread_mutex_destroy(&l->mu);
}
