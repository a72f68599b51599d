/*
 * db_template.c - ctest's setup/db_template: make the template database every
 * integration test's set-up copies (harness_db_template), before any of them
 * starts, so that no case's timeout (Check's 4 s by default) pays for migrating
 * it. Exits 77 (skipped) without a test PostgreSQL, 1 when it cannot be made
 * (ctest then runs none of the tests that need it: their database could not
 * be made either).
 */
#include "tests/support/harness.h"

#include <stdlib.h>

int main(void)
{
    return harness_db_template() ? EXIT_SUCCESS : EXIT_FAILURE;
}
