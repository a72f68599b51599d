/*
 * test_files.c - the files API on a tenant's storage spaces: a member
 * lists, uploads, downloads (ranges too), makes directories, moves and
 * removes; pages list every entry once; who may use which space (another
 * member's home, datasets, viewers, another tenant); and every traversal a
 * member or its job can try (.., encoded slashes, links and a FIFO planted
 * in the space, a hard link to aidcd's key) refused while the server keeps
 * answering. Changes are audited with who, which file and from where.
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/suite.h"

#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FILES "/api/v1/tenants/chem/files"

static char *ann, *bob, *vic, *admin_chem, *pia;

static void setup(void)
{
    harness_setup("files", NULL);
    make_tenant("chem");
    make_tenant("phys");
    make_project("chem", "mol");
    make_project("phys", "quark");
    ann = make_member_login("chem", "ann", "member");
    bob = make_member_login("chem", "bob", "member");
    vic = make_member_login("chem", "vic", "viewer");
    admin_chem = make_member_login("chem", "cat", "tenant_admin");
    pia = make_member_login("phys", "pia", "member");
}

static void teardown(void)
{
    free(ann);
    free(bob);
    free(vic);
    free(admin_chem);
    free(pia);
    harness_teardown();
}

/* PUT bytes as token to the files path; the status, the answer in *r (may be NULL). */
static long put(const char *token, const char *path, const char *data, size_t len,
                const char *const *extra, struct http_res *r)
{
    struct http_res own;
    long st = http_raw(&harness_srv, "PUT", path, token, "application/octet-stream", data, len,
                       extra, r ? r : &own);
    if (!r)
        http_res_free(&own);
    return st;
}

/* r is a 400 whose errors[] name field with code (NULL: any code). */
static void expect_field(const struct http_res *r, const char *field, const char *code)
{
    json_t *errs = json_object_get(r->json, "errors");
    for (size_t i = 0; i < json_array_size(errs); i++) {
        json_t *e = json_array_get(errs, i);
        if (strcmp(jstr(e, "field") ? jstr(e, "field") : "", field) == 0 &&
            (!code || strcmp(jstr(e, "code") ? jstr(e, "code") : "", code) == 0))
            return;
    }
    ck_abort_msg("no error on %s (%s): %s", field, code ? code : "any", r->body ? r->body : "");
}

/*
 * The status of method path sent as it is: curl would resolve "." and ".."
 * segments before sending, and the server must see them to refuse them.
 */
static long raw_status(const char *method, const char *path, const char *token)
{
    int fd = http_dial(&harness_srv, 10);
    char req[8192];
    int n = snprintf(req, sizeof req,
                     "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
                     "Content-Length: %d\r\nConnection: close\r\n\r\n%s",
                     method, path, token, strcmp(method, "PUT") == 0 ? 1 : 0,
                     strcmp(method, "PUT") == 0 ? "x" : "");
    ck_assert(n > 0 && (size_t)n < sizeof req);
    ck_assert_int_eq(write(fd, req, (size_t)n), n);
    char resp[64] = "";
    ssize_t got = read(fd, resp, sizeof resp - 1);
    close(fd);
    ck_assert_int_gt(got, 12);
    resp[got] = '\0';
    return strtol(resp + 9, NULL, 10); /* "HTTP/1.1 NNN" */
}

/* Where a space is on disk (the default storage root, <data dir>/storage). */
static const char *disk(const char *rel)
{
    return fmt("%s/storage/%s", harness_srv.data_dir, rel);
}

START_TEST(a_member_uploads_lists_downloads_moves_and_removes)
{
    struct http_res r;
    ck_assert_int_eq(put(ann, FILES "/projects/mol/notes.txt", "hello, world\n", 13, NULL, &r),
                     201);
    ck_assert_str_eq(jstr(r.json, "name"), "notes.txt");
    ck_assert_int_eq(jint(r.json, "size"), 13);
    ck_assert_ptr_nonnull(jstr(r.json, "mtime"));
    http_res_free(&r);
    /* on disk, the tenant's: its uid owns it, no other tenant's uid enters */
    struct stat st, sp;
    ck_assert_int_eq(stat(disk("chem/projects/mol/notes.txt"), &st), 0);
    ck_assert_int_eq(stat(disk("chem/projects/mol"), &sp), 0);
    ck_assert_int_eq(st.st_uid, sp.st_uid);
    if (geteuid() == 0) {
        ck_assert_int_ge(sp.st_uid, 3000000);
        ck_assert_int_eq(sp.st_mode & 07777, 0770);
        struct stat t;
        ck_assert_int_eq(stat(disk("chem"), &t), 0);
        ck_assert_int_eq(t.st_uid, 0);
        ck_assert_int_eq(t.st_mode & 07777, 0750);
    }
    /* listed, and read back whole and by ranges */
    json_t *items = get_items(FILES "/projects/mol", ann);
    ck_assert_int_eq(json_array_size(items), 1);
    json_t *e = json_array_get(items, 0);
    ck_assert_str_eq(jstr(e, "name"), "notes.txt");
    ck_assert_str_eq(jstr(e, "type"), "file");
    ck_assert_int_eq(jint(e, "size"), 13);
    json_decref(items);
    ck_assert_int_eq(reqj("GET", FILES "/projects/mol/notes.txt", ann, NULL, &r), 200);
    ck_assert_int_eq(r.body_len, 13);
    ck_assert_int_eq(memcmp(r.body, "hello, world\n", 13), 0);
    char *cd = http_header(&r, "Content-Disposition");
    ck_assert_ptr_nonnull(cd);
    ck_assert_ptr_nonnull(strstr(cd, "notes.txt"));
    free(cd);
    http_res_free(&r);
    const char *range[] = {"Range: bytes=7-11", NULL};
    ck_assert_int_eq(http_do(&harness_srv, "GET", FILES "/projects/mol/notes.txt", ann, NULL,
                             range, &r),
                     206);
    ck_assert_int_eq(r.body_len, 5);
    ck_assert_int_eq(memcmp(r.body, "world", 5), 0);
    char *cr = http_header(&r, "Content-Range");
    ck_assert_str_eq(cr, "bytes 7-11/13");
    free(cr);
    http_res_free(&r);
    const char *tail[] = {"Range: bytes=-3", NULL};
    ck_assert_int_eq(http_do(&harness_srv, "GET", FILES "/projects/mol/notes.txt", ann, NULL, tail,
                             &r),
                     206);
    ck_assert_int_eq(memcmp(r.body, "ld\n", 3), 0);
    http_res_free(&r);
    const char *beyond[] = {"Range: bytes=13-", NULL};
    ck_assert_int_eq(http_do(&harness_srv, "GET", FILES "/projects/mol/notes.txt", ann, NULL,
                             beyond, &r),
                     416);
    expect_problem(&r, "files.range", NULL, NULL);
    http_res_free(&r);
    /* directories: made, moved into, not removed while full unless asked */
    ck_assert_int_eq(req("POST", FILES "/projects/mol/runs?op=mkdir", ann, NULL), 201);
    ck_assert_int_eq(reqj("POST", FILES "/projects/mol/runs?op=mkdir", ann, NULL, &r), 409);
    expect_problem(&r, "files.exists", NULL, NULL);
    http_res_free(&r);
    ck_assert_int_eq(req("POST", FILES "/projects/mol/notes.txt?op=move", ann,
                         "{\"to\":\"runs/notes-1.txt\"}"),
                     200);
    ck_assert_int_eq(req("GET", FILES "/projects/mol/notes.txt", ann, NULL), 404);
    ck_assert_int_eq(req("GET", FILES "/projects/mol/runs/notes-1.txt", ann, NULL), 200);
    ck_assert_int_eq(reqj("POST", FILES "/projects/mol/runs?op=move", ann,
                          "{\"to\":\"runs/inside\"}", &r),
                     409);
    expect_problem(&r, "files.move_into_itself", NULL, NULL);
    http_res_free(&r);
    ck_assert_int_eq(put(ann, FILES "/projects/mol/other.txt", "x", 1, NULL, NULL), 201);
    ck_assert_int_eq(reqj("POST", FILES "/projects/mol/other.txt?op=move", ann,
                          "{\"to\":\"runs/notes-1.txt\"}", &r),
                     409);
    expect_problem(&r, "files.exists", NULL, NULL); /* nothing is lost to a move */
    http_res_free(&r);
    ck_assert_int_eq(reqj("DELETE", FILES "/projects/mol/runs", ann, NULL, &r), 409);
    expect_problem(&r, "files.not_empty", NULL, NULL);
    http_res_free(&r);
    ck_assert_int_eq(req("DELETE", FILES "/projects/mol/runs?recursive=true", ann, NULL), 204);
    ck_assert_int_eq(req("GET", FILES "/projects/mol/runs", ann, NULL), 404);
    ck_assert_int_eq(reqj("DELETE", FILES "/projects/mol", ann, NULL, &r), 409);
    expect_problem(&r, "files.space_root", NULL, NULL);
    http_res_free(&r);
    /* a file replaced whole; the upload's partial file is never listed */
    ck_assert_int_eq(put(ann, FILES "/projects/mol/other.txt", "second", 6, NULL, NULL), 201);
    items = get_items(FILES "/projects/mol", ann);
    ck_assert_int_eq(json_array_size(items), 1);
    ck_assert_int_eq(jint(json_array_get(items, 0), "size"), 6);
    json_decref(items);
    /* every change audited: who, which file, how big, from where */
    items = get_items("/api/v1/audit/events?action=file.upload", harness_srv.admin_token);
    ck_assert_int_ge(json_array_size(items), 3);
    json_t *ev = json_array_get(items, 0);
    ck_assert_str_eq(jstr(json_object_get(ev, "actor"), "user"), "ann");
    ck_assert_str_eq(jstr(json_object_get(ev, "resource"), "id"), "chem/projects/mol/other.txt");
    ck_assert_int_eq(jint(json_object_get(ev, "details"), "size"), 6);
    ck_assert_str_eq(jstr(ev, "source_ip"), "127.0.0.1");
    json_decref(items);
    items = get_items("/api/v1/audit/events?action=file.delete", harness_srv.admin_token);
    ck_assert_int_eq(json_array_size(items), 1);
    ck_assert_str_eq(jstr(json_object_get(json_array_get(items, 0), "resource"), "id"),
                     "chem/projects/mol/runs");
    json_decref(items);
}
END_TEST

START_TEST(pages_list_every_entry_once_in_name_order)
{
    ck_assert_int_eq(req("POST", FILES "/projects/mol/many?op=mkdir", ann, NULL), 201);
    for (int i = 0; i < 25; i++)
        ck_assert_int_eq(put(ann, fmt(FILES "/projects/mol/many/f%02d", i), "x", 1, NULL, NULL),
                         201);
    char *cursor = NULL;
    int seen = 0, pages = 0;
    do {
        struct http_res r;
        const char *path = cursor ? fmt(FILES "/projects/mol/many?limit=10&cursor=%s", cursor)
                                  : FILES "/projects/mol/many?limit=10";
        ck_assert_int_eq(reqj("GET", path, ann, NULL, &r), 200);
        json_t *items = json_object_get(r.json, "items");
        for (size_t i = 0; i < json_array_size(items); i++, seen++)
            ck_assert_str_eq(jstr(json_array_get(items, i), "name"), fmt("f%02d", seen));
        free(cursor);
        cursor = jstr(r.json, "next_cursor") ? strdup(jstr(r.json, "next_cursor")) : NULL;
        http_res_free(&r);
        pages++;
    } while (cursor && pages < 10);
    ck_assert_int_eq(seen, 25);
    ck_assert_int_eq(pages, 3);
    struct http_res r;
    ck_assert_int_eq(reqj("GET", FILES "/projects/mol/many?limit=0", ann, NULL, &r), 400);
    http_res_free(&r);
    ck_assert_int_eq(reqj("GET", FILES "/projects/mol/many?cursor=Li4", ann, NULL, &r), 400);
    expect_field(&r, "cursor", NULL); /* a cursor of ".." is no name */
    http_res_free(&r);
}
END_TEST

START_TEST(members_use_the_projects_and_their_own_home_only)
{
    struct http_res r;
    /* one's own home: yes; another member's: 403 (the member is visible) */
    ck_assert_int_eq(put(ann, FILES "/home/ann/a.txt", "a", 1, NULL, NULL), 201);
    ck_assert_int_eq(reqj("GET", FILES "/home/ann", bob, NULL, &r), 403);
    expect_problem(&r, "files.home_not_own", NULL, NULL);
    http_res_free(&r);
    ck_assert_int_eq(put(bob, FILES "/home/ann/b.txt", "b", 1, NULL, &r), 403);
    expect_problem(&r, "files.home_not_own", NULL, NULL); /* refused before its bytes */
    http_res_free(&r);
    ck_assert_int_eq(req("DELETE", FILES "/home/ann/a.txt", bob, NULL), 403);
    ck_assert_int_eq(req("POST", FILES "/home/ann/d?op=mkdir", bob, NULL), 403);
    /* the tenant's admin uses every space; a viewer none */
    ck_assert_int_eq(req("GET", FILES "/home/ann/a.txt", admin_chem, NULL), 200);
    ck_assert_int_eq(req("GET", FILES "/projects/mol", vic, NULL), 403);
    ck_assert_int_eq(put(vic, FILES "/home/vic/x", "x", 1, NULL, NULL), 403);
    /* a home of no member, a project that is not: 404 */
    ck_assert_int_eq(reqj("GET", FILES "/home/nobody", admin_chem, NULL, &r), 404);
    expect_problem(&r, "files.space_not_found", NULL, NULL);
    http_res_free(&r);
    ck_assert_int_eq(reqj("GET", FILES "/projects/quark", ann, NULL, &r), 404);
    expect_problem(&r, "files.space_not_found", NULL, NULL);
    http_res_free(&r);
    ck_assert_int_eq(reqj("GET", FILES "/scratch/x", ann, NULL, &r), 404);
    expect_problem(&r, "files.space_kind", NULL, NULL);
    http_res_free(&r);
    /* datasets: made and filled by the tenant's admin, read by members */
    ck_assert_int_eq(req("GET", FILES "/datasets/imagenet", ann, NULL), 404);
    ck_assert_int_eq(req("POST", FILES "/datasets/imagenet?op=mkdir", ann, NULL), 403);
    ck_assert_int_eq(req("POST", FILES "/datasets/imagenet?op=mkdir", admin_chem, NULL), 201);
    ck_assert_int_eq(req("POST", FILES "/datasets/imagenet?op=mkdir", admin_chem, NULL), 409);
    ck_assert_int_eq(put(admin_chem, FILES "/datasets/imagenet/labels.txt", "cat\n", 4, NULL, NULL),
                     201);
    ck_assert_int_eq(req("GET", FILES "/datasets/imagenet/labels.txt", ann, NULL), 200);
    ck_assert_int_eq(put(ann, FILES "/datasets/imagenet/labels.txt", "dog\n", 4, NULL, &r), 403);
    expect_problem(&r, "files.dataset_read_only", NULL, NULL);
    http_res_free(&r);
    ck_assert_int_eq(req("DELETE", FILES "/datasets/imagenet/labels.txt", ann, NULL), 403);
    ck_assert_int_eq(req("DELETE", FILES "/datasets/imagenet", admin_chem, NULL), 409);
    ck_assert_int_eq(req("DELETE", FILES "/datasets/imagenet?recursive=true", admin_chem, NULL),
                     204);
    ck_assert_int_eq(req("GET", FILES "/datasets/imagenet", admin_chem, NULL), 404);
    /* another tenant's member sees no tenant here, on every route */
    ck_assert_int_eq(req("GET", FILES "/projects/mol/x", pia, NULL), 404);
    ck_assert_int_eq(req("POST", FILES "/projects/mol/x?op=mkdir", pia, NULL), 404);
    ck_assert_int_eq(req("DELETE", FILES "/projects/mol/x", pia, NULL), 404);
    ck_assert_int_eq(put(pia, FILES "/projects/mol/x", "x", 1, NULL, NULL), 404);
    ck_assert_int_eq(req("GET", "/api/v1/tenants/phys/files/projects/mol", pia, NULL), 404);
    /* a token without jobs:write reads only */
    char *ro = make_token(ann, "[\"jobs:read\"]", "chem");
    ck_assert_int_eq(req("GET", FILES "/home/ann/a.txt", ro, NULL), 200);
    ck_assert_int_eq(put(ro, FILES "/home/ann/c.txt", "c", 1, NULL, NULL), 403);
    free(ro);
}
END_TEST

/* Each path a client might send to walk out of a space: refused, never served. */
START_TEST(traversal_by_path_is_refused)
{
    ck_assert_int_eq(put(ann, FILES "/projects/mol/in.txt", "in", 2, NULL, NULL), 201);
    static const char *const bad[] = {
        "/projects/mol/../../phys/projects/quark", "/projects/mol/a/../../x",
        "/projects/mol/%2e%2e/x",                  "/projects/mol/runs%2F..%2F..%2F..%2Fetc",
        "/projects/mol/./in.txt",                  "/projects/mol/a%01b",
        "/projects/mol/%ff%fe",                    "/projects/mol/%c0%ae%c0%ae/x",
        "/projects/mol/x%0ay",                     "/projects/mol/a//b",
        "/projects/mol/..",                        "/projects/mol/in.txt/..",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        long st = raw_status("GET", fmt(FILES "%s", bad[i]), ann);
        ck_assert_msg(st == 400 || st == 404, "%s: %ld", bad[i], st);
        st = raw_status("PUT", fmt(FILES "%s", bad[i]), ann);
        ck_assert_msg(st == 400 || st == 404, "PUT %s: %ld", bad[i], st);
        st = raw_status("DELETE", fmt(FILES "%s", bad[i]), ann);
        ck_assert_msg(st == 400 || st == 404, "DELETE %s: %ld", bad[i], st);
    }
    /* the field says which */
    struct http_res r;
    ck_assert_int_eq(reqj("GET", FILES "/projects/mol/%2e%2e/x", ann, NULL, &r), 400);
    expect_field(&r, "path", "files.path");
    http_res_free(&r);
    /* a name of 256 bytes, a path over 4096 */
    char longname[300];
    memset(longname, 'a', 256);
    longname[256] = '\0';
    ck_assert_int_eq(req("GET", fmt(FILES "/projects/mol/%s", longname), ann, NULL), 400);
    ck_assert_int_eq(reqj("POST", FILES "/projects/mol/in.txt?op=move", ann,
                          "{\"to\":\"../../../../tmp/out\"}", &r),
                     400);
    expect_field(&r, "to", "files.path");
    http_res_free(&r);
    ck_assert_int_eq(req("POST", FILES "/projects/mol/in.txt?op=move", ann, "{\"to\":\"/etc/x\"}"),
                     400);
    ck_assert_int_eq(req("POST", FILES "/projects/mol/in.txt?op=move", ann, "{\"to\":7}"), 400);
    ck_assert_int_eq(req("POST", FILES "/projects/mol/in.txt?op=move", ann, "{\"x\":\"y\"}"), 400);
    ck_assert_int_eq(req("POST", FILES "/projects/mol/in.txt?op=rmrf", ann, NULL), 400);
    ck_assert_int_eq(req("DELETE", FILES "/projects/mol/in.txt?recursive=yes", ann, NULL), 400);
    ck_assert_int_eq(req("GET", FILES "/projects/mol/in.txt", ann, NULL), 200);
}
END_TEST

/* What a job can leave in its project space: links out, a FIFO, a hard link. */
START_TEST(links_and_fifos_planted_in_a_space_are_never_followed_or_opened)
{
    ck_assert_int_eq(req("POST", FILES "/projects/mol/d?op=mkdir", ann, NULL), 201);
    ck_assert_int_eq(put(ann, FILES "/home/ann/private.txt", "ann's", 5, NULL, NULL), 201);
    char space[512];
    snprintf(space, sizeof space, "%s", disk("chem/projects/mol"));
    ck_assert_int_eq(symlink("/etc", fmt("%s/etc", space)), 0);
    ck_assert_int_eq(symlink("../../home/ann", fmt("%s/anns", space)), 0);
    ck_assert_int_eq(symlink(fmt("%s/jwt.key", harness_srv.data_dir), fmt("%s/d/key", space)), 0);
    ck_assert_int_eq(mkfifo(fmt("%s/fifo", space), 0666), 0);
    /* a hard link to aidcd's session key (same file system): the tenant cannot read it */
    bool hard = link(fmt("%s/jwt.key", harness_srv.data_dir), fmt("%s/hard", space)) == 0;
    static const char *const tries[] = {"etc", "etc/passwd", "anns/private.txt", "d/key", "fifo"};
    for (size_t i = 0; i < sizeof tries / sizeof *tries; i++) {
        struct http_res r;
        double t0 = (double)time(NULL);
        long st = reqj("GET", fmt(FILES "/projects/mol/%s", tries[i]), ann, NULL, &r);
        ck_assert_msg(st == 409, "%s: %ld", tries[i], st);
        expect_problem(&r, "files.special", NULL, NULL);
        ck_assert((double)time(NULL) - t0 < 3); /* a FIFO is never waited on */
        http_res_free(&r);
        st = put(ann, fmt(FILES "/projects/mol/%s/x", tries[i]), "x", 1, NULL, NULL);
        ck_assert_msg(st == 409 || st == 404, "PUT %s/x: %ld", tries[i], st);
        st = req("POST", fmt(FILES "/projects/mol/%s/sub?op=mkdir", tries[i]), ann, NULL);
        ck_assert_msg(st == 409 || st == 404, "mkdir %s/sub: %ld", tries[i], st);
    }
    if (hard && geteuid() == 0) {
        struct http_res r;
        ck_assert_int_eq(reqj("GET", FILES "/projects/mol/hard", ann, NULL, &r), 409);
        http_res_free(&r);
    }
    /* listed as nothing; the server kept answering */
    json_t *items = get_items(FILES "/projects/mol", ann);
    for (size_t i = 0; i < json_array_size(items); i++) {
        const char *n = jstr(json_array_get(items, i), "name");
        ck_assert_msg(strcmp(n, "etc") && strcmp(n, "anns") && strcmp(n, "fifo"), "listed %s", n);
    }
    json_decref(items);
    ck_assert_int_eq(req("GET", "/healthz", NULL, NULL), 200);
    /* an upload over a planted link replaces the link, never writes where it leads */
    ck_assert_int_eq(put(ann, FILES "/projects/mol/d/key", "mine", 4, NULL, NULL), 201);
    struct stat st;
    ck_assert_int_eq(lstat(fmt("%s/d/key", space), &st), 0);
    ck_assert(S_ISREG(st.st_mode));
    struct stat key;
    ck_assert_int_eq(lstat(fmt("%s/jwt.key", harness_srv.data_dir), &key), 0);
    ck_assert(S_ISREG(key.st_mode) && key.st_size >= 32); /* the key itself untouched */
    /* removing a link removes the link: /etc stays */
    ck_assert_int_eq(req("DELETE", FILES "/projects/mol/etc?recursive=true", ann, NULL), 204);
    ck_assert_int_eq(access("/etc/passwd", F_OK), 0);
}
END_TEST

int main(void)
{
    harness_require_pg();
    Suite *s = suite_create("files");
    TCase *tc = tcase_create("files");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, a_member_uploads_lists_downloads_moves_and_removes);
    tcase_add_test(tc, pages_list_every_entry_once_in_name_order);
    tcase_add_test(tc, members_use_the_projects_and_their_own_home_only);
    tcase_add_test(tc, traversal_by_path_is_refused);
    tcase_add_test(tc, links_and_fifos_planted_in_a_space_are_never_followed_or_opened);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
