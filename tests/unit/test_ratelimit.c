/*
 * test_ratelimit.c - the token buckets of server/ratelimit.c on a fake clock,
 * the keys of addresses (IPv6 by /64), the bound on the table, address lists
 * with networks (AIDC_TRUSTED_PROXIES), and the JSON shape check of
 * lib/jsonlimit.c.
 */
#include "lib/jsonlimit.h"
#include "lib/netaddr.h"
#include "server/ratelimit.h"
#include "tests/support/suite.h"

#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static struct config cfg = {
    .rate_limit_per_address = 2,
    .rate_limit_address_burst = 3,
    .rate_limit_per_token = 1,
    .rate_limit_token_burst = 1,
    .max_connections_per_address = 2,
    .max_connections = 8,
};

static void setup(void)
{
    ratelimit_init(&cfg);
}

static void teardown(void)
{
    ratelimit_free();
}

START_TEST(bucket_allows_burst_then_refuses_with_retry_after)
{
    for (int i = 0; i < 3; i++)
        ck_assert(!ratelimit_take_at(RATELIMIT_ADDRESS, "10.0.0.1", 100.0).limited);
    struct ratelimit_decision d = ratelimit_take_at(RATELIMIT_ADDRESS, "10.0.0.1", 100.0);
    ck_assert(d.limited);
    ck_assert(d.first);
    ck_assert_int_eq(d.retry_after, 1);
    d = ratelimit_take_at(RATELIMIT_ADDRESS, "10.0.0.1", 100.1);
    ck_assert(d.limited);
    ck_assert(!d.first); /* the same burst of refusals */
    /* 2/s: half a second later one more is allowed, and the next is refused */
    ck_assert(!ratelimit_take_at(RATELIMIT_ADDRESS, "10.0.0.1", 100.6).limited);
    ck_assert(ratelimit_take_at(RATELIMIT_ADDRESS, "10.0.0.1", 100.6).limited);
    /* another key, and the other kind, have their own buckets */
    ck_assert(!ratelimit_take_at(RATELIMIT_ADDRESS, "10.0.0.2", 100.6).limited);
    ck_assert(!ratelimit_take_at(RATELIMIT_TOKEN, "10.0.0.1", 100.6).limited);
    /* a bucket never holds more than its burst */
    for (int i = 0; i < 3; i++)
        ck_assert(!ratelimit_take_at(RATELIMIT_ADDRESS, "10.0.0.3", 1000.0 + i * 0.01).limited);
    ck_assert(ratelimit_take_at(RATELIMIT_ADDRESS, "10.0.0.3", 1000.05).limited);
}
END_TEST

START_TEST(slow_rate_gives_long_retry_after)
{
    /* 1/s with no burst: right after a request, the next one in a second */
    ck_assert(!ratelimit_take_at(RATELIMIT_TOKEN, "t:x", 5.0).limited);
    struct ratelimit_decision d = ratelimit_take_at(RATELIMIT_TOKEN, "t:x", 5.0);
    ck_assert(d.limited);
    ck_assert_int_eq(d.retry_after, 1);
    d = ratelimit_take_at(RATELIMIT_TOKEN, "t:x", 5.9);
    ck_assert(d.limited);
    ck_assert(!ratelimit_take_at(RATELIMIT_TOKEN, "t:x", 6.0).limited);
}
END_TEST

START_TEST(table_stays_bounded_under_a_flood_of_keys)
{
    char key[32];
    /* every key mid-burst (none refilled): the longest idle are forgotten */
    for (int i = 0; i < RATELIMIT_MAX_KEYS * 2; i++) {
        snprintf(key, sizeof key, "k%d", i);
        ck_assert(!ratelimit_take_at(RATELIMIT_ADDRESS, key, 1.0 + i * 1e-6).limited);
    }
    ck_assert_uint_le(ratelimit_rate_keys(), RATELIMIT_MAX_KEYS);
    /* a key that keeps being refused stays known while new ones come */
    for (int i = 0; i < 4; i++)
        ratelimit_take_at(RATELIMIT_ADDRESS, "hot", 10.0);
    ck_assert(ratelimit_take_at(RATELIMIT_ADDRESS, "hot", 10.0).limited);
}
END_TEST

START_TEST(address_keys)
{
    char k[RATELIMIT_KEY_LEN];
    ratelimit_address_key("192.0.2.7", k, sizeof k);
    ck_assert_str_eq(k, "192.0.2.7");
    ratelimit_address_key("2001:db8:1:2:aaaa:bbbb:cccc:dddd", k, sizeof k);
    ck_assert_str_eq(k, "2001:db8:1:2::/64");
    ratelimit_address_key("2001:db8:1:2::1", k, sizeof k);
    ck_assert_str_eq(k, "2001:db8:1:2::/64");
    ratelimit_address_key("::ffff:192.0.2.7", k, sizeof k);
    ck_assert_str_eq(k, "192.0.2.7");
}
END_TEST

START_TEST(connections_are_counted_per_key)
{
    ck_assert(ratelimit_conn_allowed("a"));
    ratelimit_conn_opened("a");
    ratelimit_conn_opened("a");
    ck_assert(!ratelimit_conn_allowed("a"));
    ck_assert(ratelimit_conn_allowed("b"));
    ratelimit_conn_closed("a");
    ck_assert(ratelimit_conn_allowed("a"));
    ratelimit_conn_closed("a");
    ratelimit_conn_closed("a"); /* an unknown close changes nothing */
    ck_assert(ratelimit_conn_allowed("a"));
}
END_TEST

START_TEST(address_lists_with_networks)
{
    const char *list = "192.0.2.7, 10.244.0.0/16,fd00::/8 ,198.51.100.0/25";
    ck_assert(netaddr_in_list(list, "192.0.2.7"));
    ck_assert(!netaddr_in_list(list, "192.0.2.70"));
    ck_assert(netaddr_in_list(list, "10.244.3.9"));
    ck_assert(!netaddr_in_list(list, "10.245.0.1"));
    ck_assert(netaddr_in_list(list, "fd12:3456::1"));
    ck_assert(!netaddr_in_list(list, "fe80::1"));
    ck_assert(netaddr_in_list(list, "198.51.100.127"));
    ck_assert(!netaddr_in_list(list, "198.51.100.128"));
    ck_assert(!netaddr_in_list(list, "10.244.0.0/16")); /* a client is an address */
    ck_assert(!netaddr_in_list("", "192.0.2.7"));
    ck_assert(netaddr_in_list("0.0.0.0/0", "203.0.113.5"));
    char bad[80];
    ck_assert(netaddr_list_valid(list, bad, sizeof bad));
    ck_assert(netaddr_list_valid("", bad, sizeof bad));
    ck_assert(!netaddr_list_valid("10.0.0.1, nginx.local", bad, sizeof bad));
    ck_assert_str_eq(bad, "nginx.local");
    ck_assert(!netaddr_list_valid("10.0.0.0/33", bad, sizeof bad));
    ck_assert(!netaddr_list_valid("10.0.0.0/", bad, sizeof bad));
    ck_assert(!netaddr_list_valid("::/129", bad, sizeof bad));
}
END_TEST

/* The listening address of AIDC_LISTEN's host (server/http.c, the relay). */
START_TEST(listen_addresses)
{
    struct sockaddr_storage ss;
    const struct sockaddr_in *in4 = (const struct sockaddr_in *)&ss;
    const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&ss;
    ck_assert(netaddr_listen("127.0.0.1", 8080, &ss));
    ck_assert_int_eq(ss.ss_family, AF_INET);
    ck_assert_int_eq(ntohs(in4->sin_port), 8080);
    ck_assert_uint_eq(ntohl(in4->sin_addr.s_addr), 0x7f000001u);
    ck_assert(netaddr_listen("localhost", 1, &ss));
    ck_assert_uint_eq(ntohl(in4->sin_addr.s_addr), 0x7f000001u);
    ck_assert(netaddr_listen("*", 0, &ss)); /* every IPv4 address */
    ck_assert_uint_eq(in4->sin_addr.s_addr, htonl(INADDR_ANY));
    ck_assert(netaddr_listen("", 0, &ss));
    ck_assert_uint_eq(in4->sin_addr.s_addr, htonl(INADDR_ANY));
    ck_assert(netaddr_listen("::1", 443, &ss));
    ck_assert_int_eq(ss.ss_family, AF_INET6);
    ck_assert_int_eq(ntohs(in6->sin6_port), 443);
    netaddr_set_port(&ss, 8443); /* the port the first daemon got, for the others */
    ck_assert_int_eq(ntohs(in6->sin6_port), 8443);
    ck_assert(netaddr_listen("10.0.0.1", 1, &ss));
    netaddr_set_port(&ss, 65535);
    ck_assert_int_eq(ntohs(in4->sin_port), 65535);
    ck_assert(!netaddr_listen("example.org", 80, &ss)); /* numeric only */
    ck_assert(!netaddr_listen("[::1]", 80, &ss));
    ck_assert(!netaddr_listen("10.0.0.256", 80, &ss));
    ck_assert(!netaddr_listen("10.0.0.0/8", 80, &ss));
}
END_TEST

/* every IPv4 address's text is inet_ntop's; IPv6 by inet_ntop; what does not fit is "" */
START_TEST(address_texts)
{
    struct sockaddr_in in4 = {.sin_family = AF_INET};
    char got[64], want[INET_ADDRSTRLEN];
    unsigned x = 12345;
    for (unsigned i = 0; i < 30000; i++) { /* 300,000 passed Check's 4 s under the sanitizers */
        /* each octet through 0..255 in turn, then pseudo-random addresses */
        x = x * 1103515245u + 12345u;
        uint32_t a = i < 1024 ? (i % 256) * 0x01010101u >> (8 * (i / 256)) : x;
        in4.sin_addr.s_addr = a;
        netaddr_text((const struct sockaddr *)&in4, got, sizeof got);
        if (!inet_ntop(AF_INET, &in4.sin_addr, want, sizeof want) || strcmp(got, want) != 0)
            ck_abort_msg("%s, want %s", got, want);
    }
    /* every size of buffer, each exactly that big (a write past it is the sanitizers'
     * error) with a guard after it: the text when it fits with its NUL, else "" */
    struct sockaddr_in6 in6 = {.sin6_family = AF_INET6};
    ck_assert_int_eq(inet_pton(AF_INET6, "fd12:3456:789a:bcde:f012:3456:789a:bcde", &in6.sin6_addr),
                     1);
    in4.sin_addr.s_addr = htonl(0xFFFFFFFFu);
    const struct {
        const struct sockaddr *sa;
        const char *text;
    } cases[] = {{(const struct sockaddr *)&in4, "255.255.255.255"},
                 {(const struct sockaddr *)&in6, "fd12:3456:789a:bcde:f012:3456:789a:bcde"}};
    for (size_t c = 0; c < 2; c++) {
        size_t len = strlen(cases[c].text);
        for (size_t n = 0; n <= len + 2; n++) {
            char *buf = malloc(n + 4);
            ck_assert_ptr_nonnull(buf);
            memset(buf, 'x', n + 4);
            netaddr_text(cases[c].sa, buf, n);
            ck_assert_msg(memcmp(buf + n, "xxxx", 4) == 0, "wrote past %zu bytes", n);
            if (n == 0)
                ck_assert_int_eq(buf[0], 'x'); /* nothing at all */
            else if (n > len)
                ck_assert_str_eq(buf, cases[c].text);
            else
                ck_assert_str_eq(buf, "");
            free(buf);
        }
    }
    struct sockaddr other = {.sa_family = AF_UNIX};
    memset(got, 'x', sizeof got);
    netaddr_text(&other, got, sizeof got);
    ck_assert_str_eq(got, "");
    netaddr_text(NULL, got, sizeof got);
    ck_assert_str_eq(got, "");
}
END_TEST

static bool ok(const char *s, int depth, long values)
{
    return jsonlimit_check(s, strlen(s), depth, values) == JSONLIMIT_OK;
}

START_TEST(json_shape)
{
    ck_assert(ok("{\"a\":[1,2,3]}", 2, 4));
    ck_assert(!ok("{\"a\":[1,2,3]}", 1, 4));         /* two levels */
    ck_assert(!ok("{\"a\":[1,2,3],\"b\":1}", 2, 3)); /* four: one more comma */
    ck_assert(ok("{\"a\":\"[[[[,,,,\"}", 1, 1));     /* strings are not structure */
    ck_assert(ok("{\"a\":\"\\\"[[[,,\"}", 1, 1));    /* escaped quotes stay in the string */
    ck_assert(!ok("[[[[[[[[[[", 9, 100));            /* malformed but deep: refused */
    ck_assert(ok("", 1, 1));
    ck_assert_int_eq(jsonlimit_check("[[[", 3, 3, 2), JSONLIMIT_OK);
    ck_assert_int_eq(jsonlimit_check("[[[[", 4, 3, 10), JSONLIMIT_TOO_DEEP);
    ck_assert_int_eq(jsonlimit_check("[1,2,3]", 7, 1, 2), JSONLIMIT_TOO_MANY_VALUES);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("limits");
    TCase *tc = tcase_create("limits");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, bucket_allows_burst_then_refuses_with_retry_after);
    tcase_add_test(tc, slow_rate_gives_long_retry_after);
    tcase_add_test(tc, table_stays_bounded_under_a_flood_of_keys);
    tcase_add_test(tc, address_keys);
    tcase_add_test(tc, connections_are_counted_per_key);
    tcase_add_test(tc, address_lists_with_networks);
    tcase_add_test(tc, listen_addresses);
    tcase_add_test(tc, address_texts);
    tcase_add_test(tc, json_shape);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
