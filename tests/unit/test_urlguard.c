/*
 * test_urlguard.c - the webhook request forgery guard (lib/urlguard.h): URL
 * forms refused, every class of address that is not public refused (as a
 * literal, as an IPv6 form embedding one, as a socket address), the loopback
 * only with the tests' setting, a name resolving to the loopback refused at
 * resolution, and the pin libcurl connects to; and the notifier's backoff,
 * HMAC signature and e-mail address check, which need no network.
 */
#include "tests/support/suite.h"

#include "lib/config.h"
#include "lib/err.h"
#include "lib/urlguard.h"
#include "sched/notifier.h"
#include "sched/notifyhook.h"
#include "sched/notifymail.h"

#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <string.h>

static int check(const char *url, bool loopback)
{
    struct urlguard_target t;
    char why[200];
    return urlguard_check(url, loopback, &t, why, sizeof why);
}

START_TEST(forms_and_literal_addresses)
{
    static const char *const refused[] = {
        "ftp://example.org/",
        "file:///etc/passwd",
        "gopher://example.org/",
        "https://",
        "https://user:pw@example.org/",
        "https://user@example.org/",
        "not a url",
        "https://example.org/a b",
        "http://example.org/",
        "https://127.0.0.1/",
        "https://127.255.0.1:8443/",
        "https://10.0.0.1/",
        "https://172.31.255.255/",
        "https://192.168.0.1/",
        "https://169.254.169.254/latest/meta-data/",
        "https://100.64.1.1/",
        "https://0.0.0.0/",
        "https://224.0.0.251/",
        "https://255.255.255.255/",
        "https://192.0.2.1/",
        "https://198.18.0.1/",
        "https://[::1]/",
        "https://[::]/",
        "https://[fe80::1]/",
        "https://[fd12::1]/",
        "https://[fc00::1]/",
        "https://[ff02::1]/",
        "https://[::ffff:127.0.0.1]/",
        "https://[::ffff:10.0.0.1]/",
        "https://[::ffff:169.254.169.254]/",
        "https://[64:ff9b::a9fe:a9fe]/",
        "https://[2001:db8::1]/",
        "https://[fec0::1]/",
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        ck_assert_msg(check(refused[i], false) == AIDC_EINVAL, "%s was accepted", refused[i]);
    static const char *const fine[] = {
        "https://example.org/hook", "https://hooks.example.org:8443/a?b=c",
        "https://93.184.216.34/x",  "https://[2606:2800:220:1::1]/x",
        "HTTPS://Example.ORG/",
    };
    for (size_t i = 0; i < sizeof fine / sizeof fine[0]; i++)
        ck_assert_msg(check(fine[i], false) == 0, "%s was refused", fine[i]);
    char longurl[URLGUARD_MAX_URL + 10] = "https://example.org/";
    memset(longurl + 20, 'a', URLGUARD_MAX_URL - 20 + 1);
    longurl[URLGUARD_MAX_URL + 1] = '\0';
    ck_assert_int_eq(check(longurl, false), AIDC_EINVAL);
    longurl[URLGUARD_MAX_URL] = '\0';
    ck_assert_int_eq(check(longurl, false), 0);
}
END_TEST

START_TEST(the_loopback_only_with_the_setting)
{
    ck_assert_int_eq(check("http://127.0.0.1:8080/x", true), 0);
    ck_assert_int_eq(check("https://[::1]:8443/x", true), 0);
    ck_assert_int_eq(check("http://localhost:8080/x", true), 0); /* resolved at delivery */
    /* other private addresses stay refused, and plain http elsewhere too */
    ck_assert_int_eq(check("https://10.0.0.1/", true), AIDC_EINVAL);
    ck_assert_int_eq(check("https://169.254.169.254/", true), AIDC_EINVAL);
    ck_assert_int_eq(check("http://93.184.216.34/", true), AIDC_EINVAL);
    ck_assert_int_eq(check("http://127.0.0.1:8080/x", false), AIDC_EINVAL);
}
END_TEST

START_TEST(names_are_resolved_and_pinned)
{
    struct urlguard_target t;
    char why[200], pin[300];
    ck_assert_int_eq(urlguard_check("https://localhost:9443/x", false, &t, why, sizeof why), 0);
    ck_assert(!t.literal);
    ck_assert_int_eq(urlguard_resolve(&t, false, pin, sizeof pin, why, sizeof why),
                     AIDC_EFORBIDDEN);
    ck_assert_ptr_nonnull(strstr(why, "not a public address"));
    ck_assert_int_eq(urlguard_resolve(&t, true, pin, sizeof pin, why, sizeof why), 0);
    ck_assert_msg(strcmp(pin, "localhost:9443:127.0.0.1") == 0 ||
                      strcmp(pin, "localhost:9443:[::1]") == 0,
                  "pin %s", pin);
    ck_assert_int_eq(urlguard_check("https://no-such-host.invalid/", false, &t, why, sizeof why),
                     0);
    ck_assert_int_eq(urlguard_resolve(&t, false, pin, sizeof pin, why, sizeof why), AIDC_EUNAVAIL);
}
END_TEST

START_TEST(socket_addresses)
{
    struct sockaddr_in a4 = {.sin_family = AF_INET};
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6};
    inet_pton(AF_INET, "169.254.169.254", &a4.sin_addr);
    ck_assert(!urlguard_addr_allowed((struct sockaddr *)&a4, true));
    inet_pton(AF_INET, "127.0.0.1", &a4.sin_addr);
    ck_assert(!urlguard_addr_allowed((struct sockaddr *)&a4, false));
    ck_assert(urlguard_addr_allowed((struct sockaddr *)&a4, true));
    inet_pton(AF_INET, "8.8.8.8", &a4.sin_addr);
    ck_assert(urlguard_addr_allowed((struct sockaddr *)&a4, false));
    inet_pton(AF_INET6, "::ffff:192.168.1.1", &a6.sin6_addr);
    ck_assert(!urlguard_addr_allowed((struct sockaddr *)&a6, true));
    inet_pton(AF_INET6, "2606:4700::1111", &a6.sin6_addr);
    ck_assert(urlguard_addr_allowed((struct sockaddr *)&a6, false));
    ck_assert(!urlguard_addr_allowed(NULL, true));
}
END_TEST

START_TEST(backoff_signature_and_addresses)
{
    struct config cfg = {.notify_backoff_seconds = 30, .notify_backoff_max_seconds = 3600};
    ck_assert(notifier_backoff(&cfg, 1) == 30);
    ck_assert(notifier_backoff(&cfg, 2) == 60);
    ck_assert(notifier_backoff(&cfg, 4) == 240);
    ck_assert(notifier_backoff(&cfg, 30) == 3600);
    char sig[65];
    /* RFC 4231 test case 2 */
    ck_assert(notifyhook_sign("Jefe", "what do ya want for nothing?", sig));
    ck_assert_str_eq(sig, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    ck_assert(notifymail_address_ok("ann@example.org"));
    ck_assert(!notifymail_address_ok("ann@example.org\r\nBcc: x@example.org"));
    ck_assert(!notifymail_address_ok("<ann@example.org>"));
    ck_assert(!notifymail_address_ok("ann@example.org,bob@example.org"));
    ck_assert(!notifymail_address_ok("ann"));
    ck_assert(!notifymail_address_ok("a@b@c"));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("urlguard");
    TCase *tc = tcase_create("urlguard");
    tcase_add_test(tc, forms_and_literal_addresses);
    tcase_add_test(tc, the_loopback_only_with_the_setting);
    tcase_add_test(tc, names_are_resolved_and_pinned);
    tcase_add_test(tc, socket_addresses);
    tcase_add_test(tc, backoff_signature_and_addresses);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
