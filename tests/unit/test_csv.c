/*
 * test_csv.c - CSV cells: RFC 4180 quoting, formula defusing, numbers left
 * as numbers (a negative amount must stay one), UTF-8 passed through.
 */
#include "tests/support/suite.h"

#include "lib/csv.h"
#include "lib/sbuf.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

static char *cell(const char *s, int number)
{
    struct sbuf sb = SBUF_INIT;
    if (number)
        csv_number(&sb, s);
    else
        csv_cell(&sb, s);
    return sbuf_steal(&sb);
}

static void is(const char *in, int number, const char *want)
{
    char *got = cell(in, number);
    ck_assert_msg(strcmp(got, want) == 0, "[%s] became [%s], expected [%s]", in ? in : "(null)",
                  got, want);
    free(got);
}

START_TEST(text_is_quoted_only_when_it_must_be)
{
    is("vision", 0, "vision");
    is("", 0, "");
    is(NULL, 0, "");
    is("a,b", 0, "\"a,b\"");
    is("say \"hi\"", 0, "\"say \"\"hi\"\"\"");
    is("two\nlines", 0, "\"two\nlines\"");
    is("cr\rhere", 0, "\"cr\rhere\"");
    is("视觉组", 0, "视觉组");
    is("a;=cmd", 0, "\"a;=cmd\"");
    is("tab\there", 0, "\"tab\there\"");
}
END_TEST

START_TEST(formulas_are_defused_inside_quotes)
{
    is("=1+2", 0, "\"'=1+2\"");
    is("+1", 0, "\"'+1\"");
    is("-1", 0, "\"'-1\"");
    is("@SUM(A1)", 0, "\"'@SUM(A1)\"");
    is("\tx", 0, "\"'\tx\"");
    is("=\"a\",b", 0, "\"'=\"\"a\"\",b\"");
    is("a=b", 0, "a=b");
}
END_TEST

START_TEST(numbers_stay_numbers_and_anything_else_is_text)
{
    is("-12.00", 1, "-12.00");
    is("5.000000", 1, "5.000000");
    is("0", 1, "0");
    is(NULL, 1, "");
    is("-", 1, "\"'-\"");
    is("1-2", 1, "1-2");
    is("=1", 1, "\"'=1\"");
    is("1e5", 1, "1e5");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("csv");
    TCase *tc = tcase_create("csv");
    tcase_add_test(tc, text_is_quoted_only_when_it_must_be);
    tcase_add_test(tc, formulas_are_defused_inside_quotes);
    tcase_add_test(tc, numbers_stay_numbers_and_anything_else_is_text);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
