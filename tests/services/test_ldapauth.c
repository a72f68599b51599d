/*
 * test_ldapauth.c - LDAP login (lib/ldapauth.c) against the real OpenLDAP that
 * tests/run.sh starts with deploy/slapd-up.sh (AIDC_TEST_LDAP_*; skipped, exit 77,
 * without it). Its seed: alice (physics-staff), bob (aidc-admins), carol (locked by
 * ppolicy), dave (physics-staff and chem-staff), eve*(ops) (night-ops: a uid full of
 * filter metacharacters); passwords "<uid>-pw"; service cn=aidc-svc / svc-pw.
 *
 * Proves: the users' results and groups; wrong password, locked account, empty
 * password (no connection is even opened) and filter injection all REJECTED;
 * StartTLS and LDAPS with the test CA, and neither with another CA (no plaintext
 * fallback); a dead port, a server that never answers, a wrong service password:
 * UNAVAILABLE within the timeout; the probe; logins on many threads at once.
 */
#include "lib/ldapauth.h"
#include "tests/support/suite.h"

#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static char user_base[512], group_base[512];

/* The test directory's config: StartTLS with the test CA. */
static struct ldapauth_config cfg(void)
{
    struct ldapauth_config c = {
        .url = getenv("AIDC_TEST_LDAP_URL"),
        .start_tls = true,
        .ca_file = getenv("AIDC_TEST_LDAP_CA"),
        .bind_dn = getenv("AIDC_TEST_LDAP_BIND_DN"),
        .bind_password = getenv("AIDC_TEST_LDAP_BIND_PASSWORD"),
        .user_base = user_base,
        .user_filter = "(&(objectClass=inetOrgPerson)(uid={username}))",
        .group_base = group_base,
        .group_filter = "(&(objectClass=groupOfNames)(member={dn}))",
        .timeout_s = 5,
    };
    return c;
}

static bool has_group(const struct ldapauth_user *u, const char *g)
{
    for (size_t i = 0; i < u->ngroups; i++)
        if (strcmp(u->groups[i], g) == 0)
            return true;
    return false;
}

/* login must give want, and (when why_want) that why; *u filled on OK (caller frees). */
static void expect(const struct ldapauth_config *c, const char *user, const char *pw,
                   enum ldapauth_result want, const char *why_want, struct ldapauth_user *u)
{
    char why[LDAPAUTH_WHY_MAX];
    struct ldapauth_user tmp = {0};
    enum ldapauth_result r = ldapauth_login(c, user, pw, u ? u : &tmp, why, sizeof why);
    ck_assert_msg(r == want, "login '%s': %s (%s), want %s", user, ldapauth_result_name(r), why,
                  ldapauth_result_name(want));
    if (why_want)
        ck_assert_msg(strcmp(why, why_want) == 0, "login '%s': why \"%s\", want \"%s\"", user, why,
                      why_want);
    if (pw && *pw)
        ck_assert_msg(!strstr(why, pw), "the password shows in why: %s", why);
    ldapauth_user_free(&tmp);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A loopback TCP socket that listens and never answers (backlog accepts the connect). */
static int silent_listener(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(fd, 8), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

/* A loopback port nobody listens on (bound, then closed: connect is refused). */
static int dead_port(void)
{
    int port;
    int fd = silent_listener(&port);
    close(fd);
    return port;
}

START_TEST(alice_logs_in_with_her_group)
{
    struct ldapauth_config c = cfg();
    struct ldapauth_user u = {0};
    expect(&c, "alice", "alice-pw", LDAPAUTH_OK, "", &u);
    ck_assert_str_eq(u.dn, "uid=alice,ou=people,dc=example,dc=org");
    ck_assert_str_eq(u.username, "alice");
    ck_assert_str_eq(u.display_name, "Alice Example");
    ck_assert_str_eq(u.email, "alice@example.org");
    ck_assert_uint_eq(u.ngroups, 1);
    ck_assert_str_eq(u.groups[0], "physics-staff");
    ldapauth_user_free(&u);
    ck_assert_ptr_null(u.dn);
    ldapauth_user_free(&u); /* twice is harmless */

    /* the username as stored, whatever case was typed */
    expect(&c, "ALICE", "alice-pw", LDAPAUTH_OK, "", &u);
    ck_assert_str_eq(u.username, "alice");
    ldapauth_user_free(&u);
}
END_TEST

START_TEST(groups_of_dave_bob_and_none)
{
    struct ldapauth_config c = cfg();
    struct ldapauth_user u = {0};
    expect(&c, "dave", "dave-pw", LDAPAUTH_OK, "", &u);
    ck_assert_uint_eq(u.ngroups, 2);
    ck_assert(has_group(&u, "physics-staff"));
    ck_assert(has_group(&u, "chem-staff"));
    ldapauth_user_free(&u);

    expect(&c, "bob", "bob-pw", LDAPAUTH_OK, "", &u);
    ck_assert_uint_eq(u.ngroups, 1);
    ck_assert_str_eq(u.groups[0], "aidc-admins");
    ldapauth_user_free(&u);

    /* no group_base: no group search, no groups */
    c.group_base = NULL;
    expect(&c, "dave", "dave-pw", LDAPAUTH_OK, "", &u);
    ck_assert_uint_eq(u.ngroups, 0);
    ldapauth_user_free(&u);
}
END_TEST

START_TEST(wrong_password_and_locked_account_are_rejected)
{
    struct ldapauth_config c = cfg();
    expect(&c, "alice", "not-alice-pw", LDAPAUTH_REJECTED, "wrong password or account locked",
           NULL);
    /* carol's password is right, but ppolicy locked her: the bind fails with 49,
     * and the password policy control says why */
    expect(&c, "carol", "carol-pw", LDAPAUTH_REJECTED, "account locked", NULL);
    expect(&c, "carol", "not-carol-pw", LDAPAUTH_REJECTED, NULL, NULL);
    /* the wrong passwords locked nobody (pwdMaxFailure 0) */
    expect(&c, "alice", "alice-pw", LDAPAUTH_OK, "", NULL);
}
END_TEST

/* The empty password is refused before any connection: a listener sees nothing. */
START_TEST(empty_password_is_refused_before_any_bind)
{
    int port;
    int fd = silent_listener(&port);
    char url[64];
    snprintf(url, sizeof url, "ldap://127.0.0.1:%d", port);
    struct ldapauth_config c = cfg();
    c.url = url;
    expect(&c, "alice", "", LDAPAUTH_REJECTED, "empty password", NULL);
    expect(&c, "alice", NULL, LDAPAUTH_REJECTED, "empty password", NULL);
    struct pollfd p = {.fd = fd, .events = POLLIN};
    ck_assert_msg(poll(&p, 1, 0) == 0, "ldapauth_login connected for an empty password");
    close(fd);
    /* and against the real directory */
    c = cfg();
    expect(&c, "alice", "", LDAPAUTH_REJECTED, "empty password", NULL);
}
END_TEST

START_TEST(filter_injection_finds_nobody)
{
    static const char *const names[] = {
        "*",         "*)(uid=*",   "alice)(uid=*",
        "alice\\",   "(",          "alice*",
        "al*",       "*)(|(uid=*", "alice)(|(objectClass=*)",
        "eve*",      "eve*(ops",   "\\2a",
        "alice\\29",
    };
    struct ldapauth_config c = cfg();
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        expect(&c, names[i], "alice-pw", LDAPAUTH_REJECTED, "no such user", NULL);
    expect(&c, "nobody", "x", LDAPAUTH_REJECTED, "no such user", NULL);

    /* a real uid made of metacharacters: found exactly, and its DN (escaped in the
     * group filter) finds its group */
    struct ldapauth_user u = {0};
    expect(&c, "eve*(ops)", "eve*(ops)-pw", LDAPAUTH_OK, "", &u);
    ck_assert_str_eq(u.username, "eve*(ops)");
    ck_assert_uint_eq(u.ngroups, 1);
    ck_assert_str_eq(u.groups[0], "night-ops");
    ldapauth_user_free(&u);
}
END_TEST

START_TEST(bad_usernames_and_ambiguous_filters)
{
    struct ldapauth_config c = cfg();
    char longname[LDAPAUTH_USERNAME_MAX + 2];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    expect(&c, longname, "x", LDAPAUTH_REJECTED, "invalid username", NULL);
    expect(&c, "", "x", LDAPAUTH_REJECTED, "invalid username", NULL);
    /* a filter that matches more than the user: refused, not the first one taken */
    c.user_filter = "(|(uid={username})(objectClass=inetOrgPerson))";
    expect(&c, "alice", "alice-pw", LDAPAUTH_REJECTED, "several entries match", NULL);
    /* configuration faults are the server side's, not the user's */
    c = cfg();
    c.user_filter = "(uid=alice)";
    expect(&c, "alice", "alice-pw", LDAPAUTH_UNAVAILABLE, "user_filter must contain {username}",
           NULL);
    c = cfg();
    c.user_base = "ou=nowhere,dc=example,dc=org";
    expect(&c, "alice", "alice-pw", LDAPAUTH_UNAVAILABLE, NULL, NULL);
    c = cfg();
    c.url = "http://127.0.0.1:1";
    expect(&c, "alice", "alice-pw", LDAPAUTH_UNAVAILABLE, NULL, NULL);
}
END_TEST

START_TEST(tls_with_the_right_ca_only)
{
    struct ldapauth_config c = cfg();
    /* LDAPS */
    c.url = getenv("AIDC_TEST_LDAPS_URL");
    expect(&c, "alice", "alice-pw", LDAPAUTH_OK, "", NULL);
    /* plain ldap:// works too when StartTLS is not asked for */
    c = cfg();
    c.start_tls = false;
    expect(&c, "alice", "alice-pw", LDAPAUTH_OK, "", NULL);

    /* another CA: StartTLS fails and nothing goes in the clear */
    const char *other = "/etc/ssl/certs/ca-certificates.crt";
    if (access(other, R_OK) == 0) {
        c = cfg();
        c.ca_file = other;
        char why[LDAPAUTH_WHY_MAX];
        struct ldapauth_user u = {0};
        ck_assert_int_eq(ldapauth_login(&c, "alice", "alice-pw", &u, why, sizeof why),
                         LDAPAUTH_UNAVAILABLE);
        ck_assert_msg(strstr(why, "StartTLS"), "%s", why);
        ck_assert_int_eq(ldapauth_probe(&c, why, sizeof why), LDAPAUTH_UNAVAILABLE);
        c.url = getenv("AIDC_TEST_LDAPS_URL");
        expect(&c, "alice", "alice-pw", LDAPAUTH_UNAVAILABLE, NULL, NULL);
    } else {
        printf("%s missing: the other-CA case is left out\n", other);
    }
    /* a CA file that is not there */
    c = cfg();
    c.ca_file = "/nonexistent/ca.pem";
    expect(&c, "alice", "alice-pw", LDAPAUTH_UNAVAILABLE, NULL, NULL);
}
END_TEST

START_TEST(wrong_service_password_is_unavailable)
{
    struct ldapauth_config c = cfg();
    c.bind_password = "not-svc-pw";
    char why[LDAPAUTH_WHY_MAX];
    struct ldapauth_user u = {0};
    ck_assert_int_eq(ldapauth_login(&c, "alice", "alice-pw", &u, why, sizeof why),
                     LDAPAUTH_UNAVAILABLE);
    ck_assert_msg(strstr(why, "service account"), "%s", why);
    ck_assert_msg(!strstr(why, "not-svc-pw"), "%s", why);
    ck_assert_ptr_null(u.dn);
    c.bind_password = "";
    expect(&c, "alice", "alice-pw", LDAPAUTH_UNAVAILABLE, "the service account's password is empty",
           NULL);
}
END_TEST

/* url at a closed port, or at one that never answers: UNAVAILABLE within the timeout */
static void unreachable(const char *scheme, bool start_tls, int port)
{
    char url[64];
    snprintf(url, sizeof url, "%s://127.0.0.1:%d", scheme, port);
    struct ldapauth_config c = cfg();
    c.url = url;
    c.start_tls = start_tls;
    c.timeout_s = 1;
    char why[LDAPAUTH_WHY_MAX];
    struct ldapauth_user u = {0};
    double t0 = now_s();
    enum ldapauth_result r = ldapauth_login(&c, "alice", "alice-pw", &u, why, sizeof why);
    double took = now_s() - t0;
    ck_assert_msg(r == LDAPAUTH_UNAVAILABLE, "%s start_tls %d: %s (%s)", url, start_tls,
                  ldapauth_result_name(r), why);
    ck_assert_msg(took < 3.5, "%s start_tls %d took %.1f s with a 1 s timeout", url, start_tls,
                  took);
    t0 = now_s();
    ck_assert_int_eq(ldapauth_probe(&c, why, sizeof why), LDAPAUTH_UNAVAILABLE);
    ck_assert_msg(now_s() - t0 < 3.5, "probe of %s took %.1f s", url, now_s() - t0);
}

START_TEST(dead_and_silent_servers_are_unavailable_in_time)
{
    int port = dead_port();
    unreachable("ldap", true, port);
    unreachable("ldap", false, port);
    unreachable("ldaps", false, port);
    int fd = silent_listener(&port);
    unreachable("ldap", true, port);
    unreachable("ldap", false, port);
    unreachable("ldaps", false, port);
    close(fd);
}
END_TEST

/* A list of URLs: the first that can be reached serves both connections. */
START_TEST(url_list_fails_over)
{
    char url[256];
    int dead = dead_port();
    struct ldapauth_config c = cfg();
    struct ldapauth_user u = {0};
    char why[LDAPAUTH_WHY_MAX];
    snprintf(url, sizeof url, "ldap://127.0.0.1:%d %s", dead, getenv("AIDC_TEST_LDAP_URL"));
    c.url = url;
    expect(&c, "dave", "dave-pw", LDAPAUTH_OK, "", &u);
    ck_assert_uint_eq(u.ngroups, 2);
    ldapauth_user_free(&u);
    ck_assert_msg(ldapauth_probe(&c, why, sizeof why) == LDAPAUTH_OK, "%s", why);
    c.start_tls = false;
    expect(&c, "dave", "dave-pw", LDAPAUTH_OK, "", NULL);
    snprintf(url, sizeof url, "ldaps://127.0.0.1:%d %s", dead, getenv("AIDC_TEST_LDAPS_URL"));
    expect(&c, "dave", "dave-pw", LDAPAUTH_OK, "", NULL);
    /* a server that answers (here: no to the password) ends the walk */
    snprintf(url, sizeof url, "%s ldap://127.0.0.1:%d", getenv("AIDC_TEST_LDAP_URL"), dead);
    expect(&c, "dave", "not-dave-pw", LDAPAUTH_REJECTED, "wrong password or account locked", NULL);
    /* schemes are not mixed */
    snprintf(url, sizeof url, "%s %s", getenv("AIDC_TEST_LDAP_URL"), getenv("AIDC_TEST_LDAPS_URL"));
    expect(&c, "dave", "dave-pw", LDAPAUTH_UNAVAILABLE, NULL, NULL);
}
END_TEST

START_TEST(probe)
{
    struct ldapauth_config c = cfg();
    char why[LDAPAUTH_WHY_MAX];
    ck_assert_msg(ldapauth_probe(&c, why, sizeof why) == LDAPAUTH_OK, "%s", why);
    c.url = getenv("AIDC_TEST_LDAPS_URL");
    ck_assert_msg(ldapauth_probe(&c, why, sizeof why) == LDAPAUTH_OK, "%s", why);
    c = cfg();
    c.bind_password = "wrong";
    ck_assert_int_eq(ldapauth_probe(&c, why, sizeof why), LDAPAUTH_UNAVAILABLE);
    ck_assert_msg(strstr(why, "service account"), "%s", why);
    c = cfg();
    c.user_base = "ou=nowhere,dc=example,dc=org";
    ck_assert_int_eq(ldapauth_probe(&c, why, sizeof why), LDAPAUTH_UNAVAILABLE);
    ck_assert_msg(strstr(why, "ou=nowhere"), "%s", why);
    c = cfg();
    c.group_base = "ou=nogroups,dc=example,dc=org";
    ck_assert_int_eq(ldapauth_probe(&c, why, sizeof why), LDAPAUTH_UNAVAILABLE);
    /* a filter the server cannot take, or one without its placeholder */
    c = cfg();
    c.user_filter = "(&(uid={username})";
    ck_assert_int_eq(ldapauth_probe(&c, why, sizeof why), LDAPAUTH_UNAVAILABLE);
    ck_assert_msg(strstr(why, "user_filter"), "%s", why);
    c.user_filter = "(uid=alice)";
    ck_assert_int_eq(ldapauth_probe(&c, why, sizeof why), LDAPAUTH_UNAVAILABLE);
    ck_assert_msg(strstr(why, "{username}"), "%s", why);
    /* anonymous: the directory lets it see nothing */
    c = cfg();
    c.bind_dn = NULL;
    c.bind_password = NULL;
    ck_assert_int_eq(ldapauth_probe(&c, why, sizeof why), LDAPAUTH_UNAVAILABLE);
}
END_TEST

/* Logins on many threads at once, each with its own handles and TLS context. */
static void *login_thread(void *arg)
{
    long i = (long)arg;
    struct ldapauth_config c = cfg();
    if (i % 3 == 2)
        c.url = getenv("AIDC_TEST_LDAPS_URL");
    long bad = 0;
    for (int k = 0; k < 4; k++) {
        struct ldapauth_user u = {0};
        char why[LDAPAUTH_WHY_MAX];
        bool right = (i + k) % 2 == 0;
        enum ldapauth_result r =
            ldapauth_login(&c, "dave", right ? "dave-pw" : "nope", &u, why, sizeof why);
        if (r != (right ? LDAPAUTH_OK : LDAPAUTH_REJECTED) || (right && u.ngroups != 2))
            bad++;
        ldapauth_user_free(&u);
    }
    return (void *)bad;
}

START_TEST(concurrent_logins)
{
    pthread_t t[8];
    for (long i = 0; i < 8; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, login_thread, (void *)i), 0);
    long bad = 0;
    for (int i = 0; i < 8; i++) {
        void *ret;
        ck_assert_int_eq(pthread_join(t[i], &ret), 0);
        bad += (long)ret;
    }
    ck_assert_int_eq(bad, 0);
}
END_TEST

int main(void)
{
    const char *base = getenv("AIDC_TEST_LDAP_BASE");
    if (!getenv("AIDC_TEST_LDAP_URL") || !getenv("AIDC_TEST_LDAPS_URL") || !base ||
        !getenv("AIDC_TEST_LDAP_CA") || !getenv("AIDC_TEST_LDAP_BIND_DN") ||
        !getenv("AIDC_TEST_LDAP_BIND_PASSWORD")) {
        printf("skipped: no test directory (AIDC_TEST_LDAP_*: tests/run.sh starts one with "
               "deploy/slapd-up.sh)\n");
        return 77;
    }
    int n = snprintf(user_base, sizeof user_base, "ou=people,%s", base);
    int m = snprintf(group_base, sizeof group_base, "ou=groups,%s", base);
    if (n < 0 || (size_t)n >= sizeof user_base || m < 0 || (size_t)m >= sizeof group_base) {
        fprintf(stderr, "AIDC_TEST_LDAP_BASE is too long\n");
        return 1;
    }
    Suite *s = suite_create("ldapauth");
    TCase *tc = tcase_create("ldapauth");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, alice_logs_in_with_her_group);
    tcase_add_test(tc, groups_of_dave_bob_and_none);
    tcase_add_test(tc, wrong_password_and_locked_account_are_rejected);
    tcase_add_test(tc, empty_password_is_refused_before_any_bind);
    tcase_add_test(tc, filter_injection_finds_nobody);
    tcase_add_test(tc, bad_usernames_and_ambiguous_filters);
    tcase_add_test(tc, tls_with_the_right_ca_only);
    tcase_add_test(tc, wrong_service_password_is_unavailable);
    tcase_add_test(tc, dead_and_silent_servers_are_unavailable_in_time);
    tcase_add_test(tc, url_list_fails_over);
    tcase_add_test(tc, probe);
    tcase_add_test(tc, concurrent_logins);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
