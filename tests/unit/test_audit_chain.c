/*
 * test_audit_chain.c - the audit chain's arithmetic (audit/chain.h), checkpoint
 * keys (audit/sign.h), CSV cells of exports (api/auditexport.h) and the time
 * parser of the audit filters (api/auditfilter.h).
 *
 * The known answer was computed by an independent implementation (Python's
 * json.dumps(sort_keys=True, separators=(',', ':'), ensure_ascii=False) and
 * hashlib), as an auditor would: docs/audit.md's description must be enough.
 */
#include "tests/support/suite.h"
#include "api/auditfilter.h"
#include "audit/chain.h"
#include "api/auditexport.h"
#include "audit/sign.h"
#include "lib/csv.h"
#include "lib/sbuf.h"

#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char event_json[] =
    "{\"id\": 42, \"seq\": 7, \"hash\": \"ignored\", \"prev_hash\": \"ignored too\","
    " \"ts\": \"2026-12-02T08:00:00.123456Z\","
    " \"actor\": {\"user\": \"alice\", \"user_id\": null, \"token_id\": null, \"roles\": [\"auditor\"]},"
    " \"tenant\": \"physics\", \"tenant_id\": null, \"source_ip\": \"10.0.0.1\","
    " \"user_agent\": \"curl/8\", \"request_id\": \"r1\", \"action\": \"job.submit\","
    " \"resource\": {\"type\": \"job\", \"id\": \"j1\"}, \"outcome\": \"success\", \"status\": 201,"
    " \"details\": {\"name\": \"训练\", \"gpus\": 2}, \"record_id\": null}";

START_TEST(canonical_form_and_links_match_an_independent_implementation)
{
    json_t *ev = json_loads(event_json, 0, NULL);
    ck_assert_ptr_nonnull(ev);
    char *c = chain_canonical(ev);
    ck_assert_str_eq(c, "{\"action\":\"job.submit\",\"actor\":{\"roles\":[\"auditor\"],\"token_id\":null,"
                        "\"user\":\"alice\",\"user_id\":null},\"details\":{\"gpus\":2,\"name\":\"训练\"},"
                        "\"id\":42,\"outcome\":\"success\",\"record_id\":null,\"request_id\":\"r1\","
                        "\"resource\":{\"id\":\"j1\",\"type\":\"job\"},\"seq\":7,\"source_ip\":\"10.0.0.1\","
                        "\"status\":201,\"tenant\":\"physics\",\"tenant_id\":null,"
                        "\"ts\":\"2026-12-02T08:00:00.123456Z\",\"user_agent\":\"curl/8\"}");
    /* the event itself still has its hashes: only the copy lost them */
    ck_assert_ptr_nonnull(json_object_get(ev, "hash"));
    unsigned char zero[CHAIN_HASH_LEN] = {0}, h1[CHAIN_HASH_LEN], h2[CHAIN_HASH_LEN];
    char hex[CHAIN_HEX_LEN + 1];
    ck_assert_int_eq(chain_link(zero, ev, h1), 0);
    chain_hex(h1, hex);
    ck_assert_str_eq(hex, "13f930b7fbc6975c63e68a9ceece5e8768c8312df83a4bfa65e1e309e45d004c");
    ck_assert_int_eq(chain_link(h1, ev, h2), 0);
    chain_hex(h2, hex);
    ck_assert_str_eq(hex, "4c4b3c1d610d33545afd70f473d58abbe2d53d30e553f7960659c5cb605f86d7");
    /* any change of any field changes the hash */
    json_object_set_new(json_object_get(ev, "details"), "gpus", json_integer(3));
    ck_assert_int_eq(chain_link(zero, ev, h2), 0);
    ck_assert(memcmp(h1, h2, sizeof h1) != 0);
    free(c);
    json_decref(ev);
}
END_TEST

START_TEST(hex_round_trip_and_refusals)
{
    unsigned char h[CHAIN_HASH_LEN], back[CHAIN_HASH_LEN];
    char hex[CHAIN_HEX_LEN + 1];
    for (int i = 0; i < CHAIN_HASH_LEN; i++)
        h[i] = (unsigned char)(i * 37);
    chain_hex(h, hex);
    ck_assert(chain_unhex(hex, back));
    ck_assert(memcmp(h, back, sizeof h) == 0);
    ck_assert(!chain_unhex(NULL, back));
    ck_assert(!chain_unhex("abc", back));
    hex[5] = 'g';
    ck_assert(!chain_unhex(hex, back));
    char msg[256];
    chain_checkpoint_message(12, "ab", "2026-12-02T08:00:00.000001Z", msg, sizeof msg);
    ck_assert_str_eq(msg, "aidc-audit-checkpoint/1\nseq=12\nhead=ab\nts=2026-12-02T08:00:00.000001Z\n");
}
END_TEST

static void tmpname(char *out, size_t n, const char *what)
{
    snprintf(out, n, "/tmp/aidc-unit-%s-%d", what, (int)getpid());
    unlink(out);
}

START_TEST(ed25519_keys_sign_and_public_keys_verify)
{
    char priv[128], pub[128], err[512];
    tmpname(priv, sizeof priv, "ed25519");
    tmpname(pub, sizeof pub, "ed25519-pub");
    ck_assert_int_eq(sign_key_generate(priv, err, sizeof err), 0);
    ck_assert_int_ne(sign_key_generate(priv, err, sizeof err), 0); /* never overwrites */
    struct stat st;
    ck_assert_int_eq(stat(priv, &st), 0);
    ck_assert_int_eq(st.st_mode & 077, 0);
    struct sign_key *k = sign_key_load(priv, err, sizeof err);
    ck_assert_msg(k != NULL, "%s", err);
    ck_assert_str_eq(sign_key_alg(k), "ed25519");
    ck_assert_int_eq(strlen(sign_key_id(k)), 16);
    ck_assert(sign_key_can_sign(k));
    unsigned char sig[64];
    int n = sign_message(k, "hello", sig);
    ck_assert_int_eq(n, 64);
    ck_assert(sign_verify(k, "hello", sig, 64));
    ck_assert(!sign_verify(k, "hellO", sig, 64));
    sig[0] ^= 1;
    ck_assert(!sign_verify(k, "hello", sig, 64));
    sig[0] ^= 1;
    /* the public half alone verifies, cannot sign, and has the same id */
    FILE *f = fopen(pub, "w");
    ck_assert_ptr_nonnull(f);
    fputs(sign_key_public_pem(k), f);
    fclose(f);
    struct sign_key *p = sign_key_load(pub, err, sizeof err);
    ck_assert_msg(p != NULL, "%s", err);
    ck_assert(!sign_key_can_sign(p));
    ck_assert_str_eq(sign_key_id(p), sign_key_id(k));
    ck_assert(sign_verify(p, "hello", sig, 64));
    ck_assert_int_eq(sign_message(p, "hello", sig), -1);
    sign_key_free(p);
    sign_key_free(k);
    /* a private key others can read is refused */
    chmod(priv, 0644);
    ck_assert_ptr_null(sign_key_load(priv, err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "chmod 600"));
    unlink(priv);
    unlink(pub);
}
END_TEST

START_TEST(hmac_keys_and_bad_key_files)
{
    char path[128], err[512];
    tmpname(path, sizeof path, "hmac");
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("short", f);
    fclose(f);
    chmod(path, 0600);
    ck_assert_ptr_null(sign_key_load(path, err, sizeof err)); /* fewer than 32 bytes */
    f = fopen(path, "w");
    fputs("0123456789abcdef0123456789abcdef-hmac", f);
    fclose(f);
    struct sign_key *k = sign_key_load(path, err, sizeof err);
    ck_assert_msg(k != NULL, "%s", err);
    ck_assert_str_eq(sign_key_alg(k), "hmac-sha256");
    ck_assert_ptr_null(sign_key_public_pem(k));
    unsigned char sig[64];
    ck_assert_int_eq(sign_message(k, "m", sig), 32);
    ck_assert(sign_verify(k, "m", sig, 32));
    ck_assert(!sign_verify(k, "n", sig, 32));
    ck_assert(!sign_verify(k, "m", sig, 31));
    sign_key_free(k);
    f = fopen(path, "w");
    fputs("-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n", f);
    fclose(f);
    ck_assert_ptr_null(sign_key_load(path, err, sizeof err));
    unlink(path);
    ck_assert_ptr_null(sign_key_load(path, err, sizeof err)); /* missing */
}
END_TEST

static const char *cell(const char *s)
{
    static char out[256];
    struct sbuf sb = SBUF_INIT;
    csv_cell(&sb, s);
    snprintf(out, sizeof out, "%s", sbuf_str(&sb));
    sbuf_free(&sb);
    return out;
}

START_TEST(csv_cells_quote_and_defuse_formulas)
{
    ck_assert_str_eq(cell("plain"), "plain");
    ck_assert_str_eq(cell(""), "");
    ck_assert_str_eq(cell("a,b"), "\"a,b\"");
    ck_assert_str_eq(cell("say \"hi\""), "\"say \"\"hi\"\"\"");
    ck_assert_str_eq(cell("two\nlines"), "\"two\nlines\"");
    ck_assert_str_eq(cell("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
    ck_assert_str_eq(cell("+1"), "\"'+1\"");
    ck_assert_str_eq(cell("-2"), "\"'-2\"");
    ck_assert_str_eq(cell("@SUM(A1)"), "\"'@SUM(A1)\"");
    ck_assert_str_eq(cell("\tx"), "\"'\tx\"");
    ck_assert_str_eq(cell("a=b"), "a=b"); /* only a leading sign starts a formula */
}
END_TEST

START_TEST(rfc3339_times)
{
    time_t t;
    long ns = -1;
    ck_assert(auditfilter_time("2026-12-02T08:00:00Z", &t, &ns));
    ck_assert_int_eq(t, 1796198400);
    ck_assert_int_eq(ns, 0);
    ck_assert(auditfilter_time("2026-12-02T16:00:00+08:00", &t, NULL));
    ck_assert_int_eq(t, 1796198400);
    ck_assert(auditfilter_time("2026-12-02T08:00:00.123456789Z", &t, &ns));
    ck_assert_int_eq(ns, 123456789);
    ck_assert(auditfilter_time("2026-12-02T08:00:00.5Z", &t, &ns));
    ck_assert_int_eq(ns, 500000000);
    ck_assert(auditfilter_time("2026-12-02t08:00:00z", &t, NULL));
    ck_assert(auditfilter_time("2026-12-02T08:00:00-15:59", &t, NULL));
    static const char *const bad[] = {"2026-12-02", "2026-12-02 08:00:00Z", "2026-13-02T08:00:00Z",
                                      "2026-02-30T08:00:00Z", "2026-12-02T24:00:00Z",
                                      "2026-12-02T08:00:00", "2026-12-02T08:00:00.Z",
                                      "2026-12-02T08:00:00+0800", "x026-12-02T08:00:00Z",
                                      "2026-12-02T08:00:00Zjunk", "2026-12-02T08:00:00+20:00",
                                      ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(!auditfilter_time(bad[i], &t, NULL), "accepted \"%s\"", bad[i]);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("audit_chain");
    TCase *tc = tcase_create("chain");
    tcase_add_test(tc, canonical_form_and_links_match_an_independent_implementation);
    tcase_add_test(tc, hex_round_trip_and_refusals);
    tcase_add_test(tc, ed25519_keys_sign_and_public_keys_verify);
    tcase_add_test(tc, hmac_keys_and_bad_key_files);
    tcase_add_test(tc, csv_cells_quote_and_defuse_formulas);
    tcase_add_test(tc, rfc3339_times);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
