/* cli.c - `aidcd audit ...` (see cli.h). */
#include "cli.h"

#include "../db/db.h"
#include "../lib/err.h"
#include "exportcheck.h"
#include "sealer.h"
#include "sign.h"
#include "verify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char audit_cli_usage[] =
    "  aidcd audit verify [--from T] [--to T]\n"
    "                                     recompute the audit hash chain and check the signed\n"
    "                                     checkpoints (AIDC_AUDIT_KEY_FILE); exit 1 if broken\n"
    "  aidcd audit verify-export FILE [--key KEYFILE]\n"
    "                                     check an NDJSON export offline (KEYFILE: the public\n"
    "                                     key PEM, or the HMAC key); exit 1 if it fails\n"
    "  aidcd audit keygen FILE            write a new Ed25519 checkpoint signing key (0600)\n"
    "  aidcd audit public-key             print the public key of AIDC_AUDIT_KEY_FILE\n"
    "  aidcd audit seal                   chain every waiting event now and sign the head\n";

static struct sign_key *load_key(const char *path, bool required)
{
    if (!path || !*path) {
        if (required)
            fprintf(stderr, "aidcd audit: no key: set AIDC_AUDIT_KEY_FILE or pass --key\n");
        return NULL;
    }
    char err[512];
    struct sign_key *k = sign_key_load(path, err, sizeof err);
    if (!k)
        fprintf(stderr, "aidcd audit: %s\n", err);
    return k;
}

static struct db *connect_db(const struct config *cfg)
{
    struct db *db = db_open(cfg->worker_database_url, "aidcd-audit");
    db_set_statement_timeout(db, 0);
    if (db_ensure(db) != 0) {
        fprintf(stderr, "aidcd audit: cannot reach the database: %s\n", db_last_error(db)->message);
        db_close(db);
        return NULL;
    }
    return db;
}

/* The configured key (if any) and the database; nonzero (reported) when either fails. */
static int open_key_and_db(const struct config *cfg, struct sign_key **key, struct db **db)
{
    *key = NULL;
    if (cfg->audit_key_file[0] && !(*key = load_key(cfg->audit_key_file, false)))
        return 1;
    *db = connect_db(cfg);
    if (!*db) {
        sign_key_free(*key);
        *key = NULL;
        return 1;
    }
    return 0;
}

static int begin_system(struct db *db, void *arg)
{
    (void)arg;
    const struct db_ctx ctx = {.roles = "system"};
    return db_begin(db, &ctx, false);
}

static int cmd_verify(const struct config *cfg, int argc, char **argv)
{
    const char *from = NULL, *to = NULL;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--from") == 0 && i + 1 < argc)
            from = argv[++i];
        else if (strcmp(argv[i], "--to") == 0 && i + 1 < argc)
            to = argv[++i];
        else {
            fprintf(stderr, "aidcd audit verify: unexpected argument \"%s\"\n", argv[i]);
            return 2;
        }
    }
    struct sign_key *key = NULL;
    struct db *db = NULL;
    if (open_key_and_db(cfg, &key, &db))
        return 2;
    struct audit_verdict v;
    const struct audit_verify_io io = {.db = db, .begin = begin_system};
    int e = audit_verify(&io, key, from, to, &v);
    int rc = 2;
    if (e) {
        fprintf(stderr, "aidcd audit verify: %s\n",
                db_last_error(db)->message[0] ? db_last_error(db)->message : aidc_err_name(e));
    } else {
        json_t *o = audit_verdict_json(&v);
        char *text = o ? json_dumps(o, JSON_INDENT(2)) : NULL;
        printf("%s\n", text ? text : "{}");
        free(text);
        json_decref(o);
        if (!key)
            fprintf(stderr, "aidcd audit verify: AIDC_AUDIT_KEY_FILE is not set: checkpoint "
                            "signatures were not checked\n");
        rc = v.ok ? 0 : 1;
    }
    db_close(db);
    sign_key_free(key);
    return rc;
}

static int cmd_verify_export(const struct config *cfg, int argc, char **argv)
{
    const char *file = NULL, *keyfile = cfg->audit_key_file;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--key") == 0 && i + 1 < argc)
            keyfile = argv[++i];
        else if (!file && argv[i][0] != '-')
            file = argv[i];
        else {
            fprintf(stderr, "aidcd audit verify-export: unexpected argument \"%s\"\n", argv[i]);
            return 2;
        }
    }
    if (!file) {
        fprintf(stderr, "aidcd audit verify-export: which file? (- for standard input)\n");
        return 2;
    }
    struct sign_key *key = NULL;
    if (keyfile && keyfile[0] && !(key = load_key(keyfile, true)))
        return 2;
    FILE *f = strcmp(file, "-") == 0 ? stdin : fopen(file, "r");
    if (!f) {
        perror(file);
        sign_key_free(key);
        return 2;
    }
    struct export_check r;
    int e = export_check(f, key, &r);
    if (f != stdin)
        fclose(f);
    sign_key_free(key);
    if (e) {
        fprintf(stderr, "aidcd audit verify-export: cannot read %s\n", file);
        return 2;
    }
    if (!r.ok) {
        printf("FAILED at line %lld%s: %s\n", r.bad_line, "", r.reason);
        return 1;
    }
    printf("OK: %lld events (%lld chained, %lld not yet chained when exported), %lld links, "
           "%lld signed checkpoints verified; export signature %s\n",
           r.events, r.sealed, r.unsealed, r.links, r.checkpoints,
           r.signed_export ? "verified" : "NOT checked (no --key, or the server had no key)");
    return 0;
}

static int cmd_seal(const struct config *cfg)
{
    struct sign_key *key = NULL;
    struct db *db = NULL;
    if (open_key_and_db(cfg, &key, &db))
        return 2;
    long long total = 0;
    int n;
    while ((n = sealer_seal(db, 0, 5000)) > 0)
        total += n;
    int e = n < 0 ? n : sealer_checkpoint(db, key, 0);
    if (e < 0)
        fprintf(stderr, "aidcd audit seal: %s\n", aidc_err_name(e));
    else
        printf("chained %lld events%s\n", total, e > 0 ? "; signed the head" : "");
    db_close(db);
    sign_key_free(key);
    return e < 0 ? 1 : 0;
}

int audit_cli(const struct config *cfg, int argc, char **argv)
{
    const char *sub = argc > 1 ? argv[1] : "";
    char err[512];
    if (strcmp(sub, "verify") == 0)
        return cmd_verify(cfg, argc, argv);
    if (strcmp(sub, "verify-export") == 0)
        return cmd_verify_export(cfg, argc, argv);
    if (strcmp(sub, "keygen") == 0 && argc == 3) {
        if (sign_key_generate(argv[2], err, sizeof err) != 0) {
            fprintf(stderr, "aidcd audit keygen: %s\n", err);
            return 1;
        }
        struct sign_key *k = load_key(argv[2], true);
        if (!k)
            return 1;
        printf("wrote an Ed25519 key to %s (key id %s); its public key:\n%s", argv[2],
               sign_key_id(k), sign_key_public_pem(k));
        sign_key_free(k);
        return 0;
    }
    if (strcmp(sub, "public-key") == 0 && argc == 2) {
        struct sign_key *k = load_key(cfg->audit_key_file, true);
        if (!k)
            return 1;
        const char *pem = sign_key_public_pem(k);
        if (pem)
            printf("%s", pem);
        else
            fprintf(stderr, "aidcd audit public-key: an HMAC key has no public half: "
                            "verifiers need the key file itself\n");
        sign_key_free(k);
        return pem ? 0 : 1;
    }
    if (strcmp(sub, "seal") == 0 && argc == 2)
        return cmd_seal(cfg);
    fprintf(stderr, "aidcd audit: unknown or incomplete command; usage:\n%s", audit_cli_usage);
    return 2;
}
