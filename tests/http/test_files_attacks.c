/*
 * test_files_attacks.c - the files API attacked: by a member's job that
 * plants things where uploads keep their partial files, by a client whose
 * headers overflow the server's arithmetic, by a tenant admin whose rights
 * are taken away while an upload is on its way, and by names a job gives
 * its files that the API cannot address. Each test is one attack that
 * once worked; the server must refuse it and keep answering.
 */
#include "lib/crypto.h"
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/suite.h"

#include <arpa/inet.h>
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define FILES "/api/v1/tenants/chem/files"

static char *ann, *cat;

static void setup(void)
{
    harness_setup("filesattacks", NULL);
    make_tenant("chem");
    make_project("chem", "mol");
    ann = make_member_login("chem", "ann", "member");
    cat = make_member_login("chem", "cat", "tenant_admin");
}

static void teardown(void)
{
    free(ann);
    free(cat);
    harness_teardown();
}

static const char *disk(const char *rel)
{
    return fmt("%s/storage/chem/%s", harness_srv.data_dir, rel);
}

static void send_all(int fd, const char *data, size_t len)
{
    ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
}

/* Read the answer until the server closes (Connection: close): its status, 0 when none came in time. */
static long read_answer(int fd, char *buf, size_t bufsz)
{
    size_t n = 0;
    ssize_t r;
    while (n + 1 < bufsz && (r = read(fd, buf + n, bufsz - 1 - n)) > 0)
        n += (size_t)r;
    buf[n] = '\0';
    close(fd);
    return n > 12 && strncmp(buf, "HTTP/1.1 ", 9) == 0 ? strtol(buf + 9, NULL, 10) : 0;
}

/* The name of the partial file of user's resumable upload of "<space>/<rel>" (storage/tree.c). */
static const char *part_name(const char *user, const char *space, const char *rel)
{
    char key[512], hash[65];
    snprintf(key, sizeof key, "%s\n%s/%s", user, space, rel);
    crypto_sha256_hex(key, strlen(key), hash);
    return fmt(".aidc-upload-%.32s.part", hash);
}

static int count_prefix(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    if (d)
        closedir(d);
    return n;
}

/*
 * A job knows where a member's next part will be written (the name is a
 * hash of the user and the path) and makes a FIFO there: the part's open
 * for writing waited for a reader that never came, holding one of aidcd's
 * few HTTP threads (and every connection on it) for good.
 */
START_TEST(a_fifo_planted_as_a_partial_upload_holds_no_thread)
{
    ck_assert_int_eq(req("POST", FILES "/projects/mol/d?op=mkdir", ann, NULL), 201);
    const char *fifo = fmt("%s/%s", disk("projects/mol/d"), part_name("ann", "projects/mol", "d/x"));
    ck_assert_int_eq(mkfifo(fifo, 0666), 0);
    ck_assert_int_eq(chmod(fifo, 0666), 0);
    for (int i = 0; i < 2; i++) { /* the second finds the thread still free */
        int fd = http_dial(&harness_srv, 5);
        const char *head = fmt("PUT " FILES "/projects/mol/d/x HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                               "Authorization: Bearer %s\r\nContent-Type: application/octet-stream"
                               "\r\nContent-Length: 1\r\nContent-Range: bytes 1-1/2\r\n"
                               "Connection: close\r\n\r\nx",
                               ann);
        time_t t0 = time(NULL);
        send_all(fd, head, strlen(head));
        char buf[4096];
        long st = read_answer(fd, buf, sizeof buf);
        ck_assert_msg(st == 409, "part over a FIFO: %ld after %lds", st, (long)(time(NULL) - t0));
        ck_assert_ptr_nonnull(strstr(buf, "files.upload_offset"));
    }
    /* the FIFO is a FIFO still (nothing was written through it) and the server answers */
    struct stat st;
    ck_assert_int_eq(lstat(fifo, &st), 0);
    ck_assert(S_ISFIFO(st.st_mode));
    ck_assert_int_eq(req("GET", FILES "/projects/mol/d", ann, NULL), 200);
    /* a fresh upload of the path replaces the FIFO */
    struct http_res r;
    const char *range[] = {"Content-Range: bytes 0-1/2", NULL};
    ck_assert_int_eq(http_raw(&harness_srv, "PUT", FILES "/projects/mol/d/x", ann,
                              "application/octet-stream", "ab", 2, range, &r),
                     201);
    http_res_free(&r);
    ck_assert_int_eq(count_prefix(disk("projects/mol/d"), ".aidc-upload-"), 0);
}
END_TEST

/*
 * Links a job plants where a member's parts go (held): a symbolic link and
 * a hard link to a file of another space, each as long as the next part's
 * offset so that a part would append to it, and a link where a fresh
 * upload starts. Nothing is written through any of them.
 */
START_TEST(links_planted_as_a_partial_upload_are_never_written_through)
{
    struct http_res r;
    ck_assert_int_eq(http_raw(&harness_srv, "PUT", FILES "/home/ann/secret", ann,
                              "application/octet-stream", "secret", 6, NULL, &r),
                     201);
    http_res_free(&r);
    ck_assert_int_eq(req("POST", FILES "/projects/mol/d?op=mkdir", ann, NULL), 201);
    char victim[1024], dir[1024];
    snprintf(victim, sizeof victim, "%s", disk("home/ann/secret"));
    snprintf(dir, sizeof dir, "%s", disk("projects/mol/d"));
    ck_assert_int_eq(symlink(victim, fmt("%s/%s", dir, part_name("ann", "projects/mol", "d/s"))), 0);
    ck_assert_int_eq(link(victim, fmt("%s/%s", dir, part_name("ann", "projects/mol", "d/h"))), 0);
    static const char *const targets[] = {"s", "h"};
    for (size_t i = 0; i < 2; i++) {
        const char *range[] = {"Content-Range: bytes 6-6/7", NULL};
        ck_assert_int_eq(http_raw(&harness_srv, "PUT", fmt(FILES "/projects/mol/d/%s", targets[i]),
                                  ann, "application/octet-stream", "!", 1, range, &r),
                         409);
        expect_problem(&r, "files.upload_offset", "have", "0");
        http_res_free(&r);
    }
    /* a fresh upload over a planted link replaces the link */
    ck_assert_int_eq(symlink(victim, fmt("%s/%s", dir, part_name("ann", "projects/mol", "d/f"))), 0);
    const char *first[] = {"Content-Range: bytes 0-0/2", NULL};
    ck_assert_int_eq(http_raw(&harness_srv, "PUT", FILES "/projects/mol/d/f", ann,
                              "application/octet-stream", "!", 1, first, &r),
                     202);
    http_res_free(&r);
    struct stat st;
    ck_assert_int_eq(lstat(fmt("%s/%s", dir, part_name("ann", "projects/mol", "d/f")), &st), 0);
    ck_assert(S_ISREG(st.st_mode) && st.st_size == 1);
    /* the file the links led to is as it was */
    ck_assert_int_eq(reqj("GET", FILES "/home/ann/secret", ann, NULL, &r), 200);
    ck_assert_int_eq(r.body_len, 6);
    ck_assert_int_eq(memcmp(r.body, "secret", 6), 0);
    http_res_free(&r);
}
END_TEST

/*
 * Content-Range "bytes 0-(2^64-2)/(2^64-1)": the part's length, last-first+1,
 * is 2^64-1, the value meaning "no length said", so neither the size limit
 * nor the length check applied, and last+1 == total made any body the whole
 * file: a 5-byte chunked body was committed as a complete upload.
 */
START_TEST(a_content_range_of_2_64_minus_1_bytes_is_refused)
{
    static const char *const ranges[] = {
        "bytes 0-18446744073709551614/18446744073709551615",
        "bytes 0-4/18446744073709551615",
        "bytes 18446744073709551610-18446744073709551614/18446744073709551615",
    };
    for (size_t i = 0; i < sizeof ranges / sizeof *ranges; i++) {
        int fd = http_dial(&harness_srv, 5);
        const char *head =
            fmt("PUT " FILES "/projects/mol/huge HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                "Authorization: Bearer %s\r\nContent-Type: application/octet-stream\r\n"
                "Transfer-Encoding: chunked\r\nContent-Range: %s\r\nConnection: close\r\n\r\n"
                "5\r\nhello\r\n0\r\n\r\n",
                ann, ranges[i]);
        send_all(fd, head, strlen(head));
        char buf[4096];
        long st = read_answer(fd, buf, sizeof buf);
        ck_assert_msg(st == 413, "%s: %ld %s", ranges[i], st, buf);
        ck_assert_ptr_nonnull(strstr(buf, "files.upload_too_large"));
    }
    ck_assert_int_eq(req("GET", FILES "/projects/mol/huge", ann, NULL), 404);
    ck_assert_int_eq(count_prefix(disk("projects/mol"), ".aidc-upload-"), 0);
}
END_TEST

/*
 * A tenant admin starts an upload into a dataset (members read datasets
 * only) and is made a member while the body is on its way: the request is
 * admitted again at its end, but the space's rights were those of the
 * start, and the file landed in the dataset.
 */
START_TEST(rights_taken_away_mid_upload_stop_the_upload)
{
    ck_assert_int_eq(req("POST", FILES "/datasets/ds?op=mkdir", cat, NULL), 201);
    int fd = http_dial(&harness_srv, 10);
    const char *head = fmt("PUT " FILES "/datasets/ds/x.bin HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                           "Authorization: Bearer %s\r\nContent-Type: application/octet-stream\r\n"
                           "Content-Length: 10\r\nConnection: close\r\n\r\n01234",
                           cat);
    send_all(fd, head, strlen(head));
    /* the upload is under way once its partial file holds the first half */
    const char *dir = disk("datasets/ds");
    for (int i = 0; i < 400 && count_prefix(dir, ".aidc-upload-") == 0; i++)
        usleep(5000);
    ck_assert_int_eq(count_prefix(dir, ".aidc-upload-"), 1);
    make_member("chem", "cat", "member");
    send_all(fd, "56789", 5);
    char buf[4096];
    long st = read_answer(fd, buf, sizeof buf);
    ck_assert_msg(st == 403, "upload by a former admin: %ld %s", st, buf);
    ck_assert_ptr_nonnull(strstr(buf, "files.dataset_read_only"));
    ck_assert_int_eq(access(fmt("%s/x.bin", dir), F_OK), -1);
    ck_assert_int_eq(count_prefix(dir, ".aidc-upload-"), 0);
    /* every thread knows it now (each remembered the admin a while): a new
     * upload into the dataset is refused, a member's into its project goes */
    for (int i = 0; i < 8; i++) {
        struct http_res r;
        st = http_raw(&harness_srv, "PUT", FILES "/datasets/ds/z", cat, "application/octet-stream",
                      "z", 1, NULL, &r);
        ck_assert_msg(st == 403, "a new upload by a former admin: %ld %s", st, r.body ? r.body : "");
        http_res_free(&r);
        st = http_raw(&harness_srv, "PUT", FILES "/projects/mol/y", cat, "application/octet-stream",
                      "y", 1, NULL, &r);
        ck_assert_msg(st == 201, "a member's upload: %ld %s", st, r.body ? r.body : "");
        http_res_free(&r);
    }
    ck_assert_int_eq(count_prefix(dir, ".aidc-upload-"), 0);
}
END_TEST

/*
 * A job names a file with a control character. The listing showed it, and a
 * page ending on it had a cursor the next request refused (400): every entry
 * after it could no longer be listed.
 */
START_TEST(names_the_api_cannot_address_do_not_stop_the_listing)
{
    ck_assert_int_eq(req("POST", FILES "/projects/mol/d?op=mkdir", ann, NULL), 201);
    static const char *const planted[] = {"b\x01", "b\xff", "c\x7f"};
    for (size_t i = 0; i < sizeof planted / sizeof *planted; i++) {
        int fd = open(fmt("%s/%s", disk("projects/mol/d"), planted[i]), O_CREAT | O_WRONLY, 0644);
        ck_assert_int_ge(fd, 0);
        close(fd);
    }
    static const char *const names[] = {"a", "c", "d", "e"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        struct http_res r;
        ck_assert_int_eq(http_raw(&harness_srv, "PUT", fmt(FILES "/projects/mol/d/%s", names[i]),
                                  ann, "application/octet-stream", "x", 1, NULL, &r),
                         201);
        http_res_free(&r);
    }
    char *cursor = NULL;
    size_t seen = 0;
    for (int page = 0; page < 10; page++) {
        struct http_res r;
        const char *path = cursor ? fmt(FILES "/projects/mol/d?limit=1&cursor=%s", cursor)
                                  : FILES "/projects/mol/d?limit=1";
        long st = reqj("GET", path, ann, NULL, &r);
        ck_assert_msg(st == 200, "page %d: %ld %s", page, st, r.body ? r.body : "");
        json_t *items = json_object_get(r.json, "items");
        for (size_t i = 0; i < json_array_size(items); i++, seen++) {
            ck_assert_uint_lt(seen, sizeof names / sizeof *names);
            ck_assert_str_eq(jstr(json_array_get(items, i), "name"), names[seen]);
        }
        free(cursor);
        cursor = jstr(r.json, "next_cursor") ? strdup(jstr(r.json, "next_cursor")) : NULL;
        http_res_free(&r);
        if (!cursor)
            break;
    }
    free(cursor);
    ck_assert_uint_eq(seen, sizeof names / sizeof *names);
}
END_TEST

/*
 * A member with nothing but the API hides files from the space's storage
 * limit (and from metering, which measures the same way): the walk that
 * measures a space stopped descending 256 directories down, so whatever
 * lies deeper was never counted. Paths are at most 4096 bytes, but a move
 * puts a deep tree beneath another.
 */
START_TEST(files_deep_in_a_tree_count_against_the_limit)
{
    /* 0.01 GiB: about 10.7 MB */
    jobs_project_quota("chem", "mol", "{\"storage_gib\":{\"limit\":0.01}}");
    char path[2048] = "";
    size_t n = 0;
    for (int i = 0; i < 300; i++) {
        n += (size_t)snprintf(path + n, sizeof path - n, "%sd", i ? "/" : "");
        ck_assert_int_eq(req("POST", fmt(FILES "/projects/mol/%s?op=mkdir", path), ann, NULL), 201);
    }
    const size_t deep = 6 << 20, top = (7 << 20) / 2;
    char *buf = malloc(deep);
    memset(buf, 'x', deep);
    struct http_res r;
    long st = http_raw(&harness_srv, "PUT", fmt(FILES "/projects/mol/%s/deep.bin", path), ann,
                       "application/octet-stream", buf, deep, NULL, &r);
    ck_assert_msg(st == 201, "%ld %s", st, r.body ? r.body : "");
    http_res_free(&r);
    /* 6 MiB are held 300 directories down: 3.5 MiB more do not fit */
    st = http_raw(&harness_srv, "PUT", FILES "/projects/mol/top.bin", ann,
                  "application/octet-stream", buf, top, NULL, &r);
    ck_assert_msg(st == 422, "an upload past the limit: %ld %s", st, r.body ? r.body : "");
    expect_problem(&r, "files.quota_exceeded", NULL, NULL);
    http_res_free(&r);
    free(buf);
}
END_TEST

/*
 * An upload refused from its headers (here: a member writing a dataset) is
 * answered once its body is read and dropped, so a client still sending it
 * reads why; past a bound it was answered at once and the connection
 * closed under the client (a reset: curl, mid-send, reports no answer).
 * The bound was the JSON bodies' (4 MiB), not an upload's (64 MiB).
 */
START_TEST(an_upload_refused_from_its_headers_is_answered_after_its_body)
{
    ck_assert_int_eq(req("POST", FILES "/datasets/ds?op=mkdir", cat, NULL), 201);
    const size_t len = 32 << 20;
    int fd = http_dial(&harness_srv, 10);
    const char *head = fmt("PUT " FILES "/datasets/ds/x.bin HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                           "Authorization: Bearer %s\r\nContent-Type: application/octet-stream"
                           "\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
                           ann, len);
    send_all(fd, head, strlen(head));
    char *body = calloc(1, len);
    size_t sent = 0;
    while (sent < len) {
        ssize_t w = send(fd, body + sent, len - sent, MSG_NOSIGNAL);
        if (w <= 0)
            break;
        sent += (size_t)w;
    }
    free(body);
    ck_assert_msg(sent == len, "the body broke off at %zu of %zu bytes (%s)", sent, len,
                  strerror(errno));
    char buf[4096];
    long st = read_answer(fd, buf, sizeof buf);
    ck_assert_msg(st == 403, "%ld %s", st, buf);
    ck_assert_ptr_nonnull(strstr(buf, "files.dataset_read_only"));
}
END_TEST

int main(void)
{
    harness_require_pg();
    Suite *s = suite_create("files_attacks");
    TCase *tc = tcase_create("files_attacks");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, a_fifo_planted_as_a_partial_upload_holds_no_thread);
    tcase_add_test(tc, links_planted_as_a_partial_upload_are_never_written_through);
    tcase_add_test(tc, a_content_range_of_2_64_minus_1_bytes_is_refused);
    tcase_add_test(tc, rights_taken_away_mid_upload_stop_the_upload);
    tcase_add_test(tc, names_the_api_cannot_address_do_not_stop_the_listing);
    tcase_add_test(tc, files_deep_in_a_tree_count_against_the_limit);
    tcase_add_test(tc, an_upload_refused_from_its_headers_is_answered_after_its_body);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
