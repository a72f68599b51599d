/*
 * test_ptrset.c - lib/ptrset: members added, found and removed, the set grown
 * past its first table, and removal keeping every other member findable - what
 * a connection's prepared statements rely on (db/db.c) - checked against a
 * plain array over random operations on addresses a few bytes apart (as the
 * static statements are).
 */
#include "lib/ptrset.h"
#include "tests/support/suite.h"

#include <check.h>
#include <stdlib.h>

#define N 1000

static char objects[N * 24]; /* members 24 bytes apart, like struct db_stmt */

static const void *obj(int i)
{
    return &objects[i * 24];
}

START_TEST(add_has_del)
{
    struct ptrset s = {0};
    ck_assert(!ptrset_has(&s, obj(0))); /* an empty set, no table yet */
    ptrset_del(&s, obj(0));
    ptrset_add(&s, obj(1));
    ptrset_add(&s, obj(1));
    ck_assert_uint_eq(s.n, 1);
    ck_assert(ptrset_has(&s, obj(1)));
    ck_assert(!ptrset_has(&s, obj(2)));
    ck_assert(!ptrset_has(&s, NULL));
    ptrset_del(&s, obj(1));
    ck_assert(!ptrset_has(&s, obj(1)));
    ck_assert_uint_eq(s.n, 0);
    ptrset_free(&s);
}
END_TEST

START_TEST(random_operations_match_an_array)
{
    struct ptrset s = {0};
    bool in[N] = {false};
    size_t count = 0;
    srand(4242);
    for (int step = 0; step < 200000; step++) {
        int i = rand() % N;
        if (rand() % 3) {
            count += !in[i];
            in[i] = true;
            ptrset_add(&s, obj(i));
        } else {
            count -= in[i];
            in[i] = false;
            ptrset_del(&s, obj(i));
        }
        if (step % 5000 == 0 || step == 199999) {
            for (int k = 0; k < N; k++)
                ck_assert_msg(ptrset_has(&s, obj(k)) == in[k], "member %d at step %d", k, step);
            ck_assert_uint_eq(s.n, count);
            ck_assert_uint_le(s.n * 2, s.cap); /* at most half full */
        }
    }
    ptrset_clear(&s);
    ck_assert_uint_eq(s.n, 0);
    for (int k = 0; k < N; k++)
        ck_assert(!ptrset_has(&s, obj(k)));
    ptrset_add(&s, obj(7)); /* usable after a clear */
    ck_assert(ptrset_has(&s, obj(7)));
    ptrset_free(&s);
    ck_assert_uint_eq(s.cap, 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ptrset");
    TCase *tc = tcase_create("ptrset");
    tcase_add_test(tc, add_has_del);
    tcase_add_test(tc, random_operations_match_an_array);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
