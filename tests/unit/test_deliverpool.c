/*
 * test_deliverpool.c - sched/deliverpool: every item delivered once and its
 * owner released once, never more than per_key at once on one key nor more
 * than the threads at all; an item handed over while an earlier one is still
 * in delivery starts at once (the dispatcher no longer waits for a batch's
 * slowest delivery); room, waiting for room, the keys at their limit, and
 * freeing a pool that still holds items. The items use no database: the
 * threads' connections point at a closed port and are never needed.
 */
#include "sched/deliverpool.h"
#include "tests/support/suite.h"

#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define URL "postgresql://127.0.0.1:1/none?connect_timeout=1"

struct item {
    const char *key;
    int id;
    atomic_bool *gate; /* NULL: go; otherwise wait until it opens */
    int sleep_us;
};

/* What the deliveries saw: under mu. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int delivered[256];
static int running_all, max_all;
static int running_key[4], max_key[4];
static atomic_int released;
static atomic_int done_ids[256];

static void reset(void)
{
    memset(delivered, 0, sizeof delivered);
    running_all = max_all = 0;
    memset(running_key, 0, sizeof running_key);
    memset(max_key, 0, sizeof max_key);
    atomic_store(&released, 0);
    for (int i = 0; i < 256; i++)
        atomic_store(&done_ids[i], 0);
}

static const char *key_of(const void *it)
{
    return ((const struct item *)it)->key;
}

static void deliver(struct db *db, const void *it, void *arg)
{
    (void)db;
    (void)arg;
    const struct item *x = it;
    int k = x->key[0] - 'a';
    pthread_mutex_lock(&mu);
    delivered[x->id]++;
    if (++running_all > max_all)
        max_all = running_all;
    if (++running_key[k] > max_key[k])
        max_key[k] = running_key[k];
    pthread_mutex_unlock(&mu);
    while (x->gate && !atomic_load(x->gate))
        usleep(1000);
    if (x->sleep_us)
        usleep((useconds_t)x->sleep_us);
    pthread_mutex_lock(&mu);
    running_all--;
    running_key[k]--;
    pthread_mutex_unlock(&mu);
    atomic_store(&done_ids[x->id], 1);
}

static void release(void *owner)
{
    (void)owner;
    atomic_fetch_add(&released, 1);
}

static void wait_done(int id)
{
    for (int i = 0; i < 5000 && !atomic_load(&done_ids[id]); i++)
        usleep(1000);
}

START_TEST(each_item_once_within_the_limits)
{
    reset();
    struct deliverpool *p = deliverpool_new(URL, "t", 6, 2, key_of, deliver, NULL);
    static struct item items[200];
    static const char *keys[] = {"a", "b", "c", "d"};
    srand(7);
    int adds = 0;
    for (int i = 0; i < 200;) {
        while (deliverpool_room(p) == 0)
            ck_assert(deliverpool_wait_room(p, 5000));
        int n = 1 + rand() % deliverpool_room(p);
        if (n > 200 - i)
            n = 200 - i;
        for (int j = 0; j < n; j++)
            items[i + j] =
                (struct item){.key = keys[rand() % 4], .id = i + j, .sleep_us = rand() % 3000};
        deliverpool_add(p, NULL, &items[i], (size_t)n, sizeof items[0], &items[i], release);
        adds++;
        i += n;
    }
    deliverpool_drain(p);
    for (int i = 0; i < 200; i++)
        ck_assert_int_eq(delivered[i], 1);
    ck_assert_int_eq(atomic_load(&released), adds);
    ck_assert_int_le(max_all, 6);
    for (int k = 0; k < 4; k++)
        ck_assert_int_le(max_key[k], 2);
    ck_assert_int_gt(max_all, 2); /* it did deliver concurrently */
    ck_assert_int_eq(deliverpool_room(p), 6);
    deliverpool_free(p);
}
END_TEST

START_TEST(a_later_item_does_not_wait_for_a_slow_one)
{
    reset();
    atomic_bool gate = false;
    struct deliverpool *p = deliverpool_new(URL, "t", 4, 4, key_of, deliver, NULL);
    struct item slow = {.key = "a", .id = 1, .gate = &gate};
    struct item fast = {.key = "a", .id = 2};
    deliverpool_add(p, NULL, &slow, 1, sizeof slow, NULL, release);
    ck_assert_int_eq(deliverpool_room(p), 3);
    deliverpool_add(p, NULL, &fast, 1, sizeof fast, NULL, release);
    wait_done(2);
    ck_assert_int_eq(atomic_load(&done_ids[2]), 1);
    ck_assert_int_eq(atomic_load(&done_ids[1]), 0); /* the slow one still runs */
    ck_assert_int_eq(atomic_load(&released), 1);
    atomic_store(&gate, true);
    deliverpool_drain(p);
    ck_assert_int_eq(atomic_load(&released), 2);
    deliverpool_free(p);
}
END_TEST

START_TEST(room_and_waiting_for_it)
{
    reset();
    atomic_bool gate = false;
    struct deliverpool *p = deliverpool_new(URL, "t", 2, 2, key_of, deliver, NULL);
    ck_assert_int_eq(deliverpool_room(p), 2); /* before any thread started */
    struct item two[2] = {{.key = "a", .id = 1, .gate = &gate},
                          {.key = "b", .id = 2, .gate = &gate}};
    deliverpool_add(p, NULL, two, 2, sizeof two[0], two, release);
    ck_assert_int_eq(deliverpool_room(p), 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ck_assert(!deliverpool_wait_room(p, 100));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double waited = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    ck_assert(waited >= 0.09);
    ck_assert_int_eq(atomic_load(&released), 0);
    atomic_store(&gate, true);
    ck_assert(deliverpool_wait_room(p, 5000));
    deliverpool_drain(p);
    ck_assert_int_eq(atomic_load(&released), 1); /* one add, released once */
    ck_assert_int_eq(deliverpool_room(p), 2);
    deliverpool_free(p);
}
END_TEST

static void collect(const char *key, void *arg)
{
    char *out = arg;
    strcat(out, key);
}

START_TEST(keys_at_their_limit_are_named)
{
    reset();
    atomic_bool gate = false;
    struct deliverpool *p = deliverpool_new(URL, "t", 4, 1, key_of, deliver, NULL);
    struct item a = {.key = "a", .id = 1, .gate = &gate}, b = {.key = "b", .id = 2};
    char busy[16] = "";
    deliverpool_busy_keys(p, collect, busy); /* no thread yet */
    ck_assert_str_eq(busy, "");
    deliverpool_add(p, NULL, &a, 1, sizeof a, NULL, release);
    deliverpool_add(p, NULL, &b, 1, sizeof b, NULL, release);
    wait_done(2);
    for (int i = 0; i < 5000 && !busy[0]; i++) { /* until the slow one is taken */
        deliverpool_busy_keys(p, collect, busy);
        usleep(1000);
    }
    ck_assert_str_eq(busy, "a");
    atomic_store(&gate, true);
    deliverpool_drain(p);
    busy[0] = '\0';
    deliverpool_busy_keys(p, collect, busy);
    ck_assert_str_eq(busy, "");
    deliverpool_free(p);
}
END_TEST

START_TEST(freed_with_items_it_delivers_them_first)
{
    reset();
    struct deliverpool *p = deliverpool_new(URL, "t", 3, 1, key_of, deliver, NULL);
    static struct item items[3];
    for (int i = 0; i < 3; i++) /* one key, one at a time: two of them wait */
        items[i] = (struct item){.key = "c", .id = i, .sleep_us = 20000};
    deliverpool_add(p, NULL, items, 3, sizeof items[0], items, release);
    deliverpool_free(p);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(delivered[i], 1);
    ck_assert_int_eq(max_key[2], 1);
    ck_assert_int_eq(atomic_load(&released), 1);
}
END_TEST

START_TEST(an_empty_add_releases_at_once)
{
    reset();
    struct deliverpool *p = deliverpool_new(URL, "t", 2, 2, key_of, deliver, NULL);
    deliverpool_add(p, NULL, NULL, 0, sizeof(struct item), NULL, release);
    ck_assert_int_eq(atomic_load(&released), 1);
    deliverpool_free(p);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("deliverpool");
    TCase *tc = tcase_create("deliverpool");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, each_item_once_within_the_limits);
    tcase_add_test(tc, a_later_item_does_not_wait_for_a_slow_one);
    tcase_add_test(tc, room_and_waiting_for_it);
    tcase_add_test(tc, keys_at_their_limit_are_named);
    tcase_add_test(tc, freed_with_items_it_delivers_them_first);
    tcase_add_test(tc, an_empty_add_releases_at_once);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
