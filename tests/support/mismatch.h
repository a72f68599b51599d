/*
 * mismatch.h - collecting the mismatches of a table-driven test: note()
 * prints each at once (MISMATCH: ...) and keeps it for finish(), which fails
 * the test with all of them, so one run lists everything that is wrong.
 * One set of them per process: the test programs and the support library's
 * code that notes mismatches (permfixture.c, permrun.c) share it.
 */
#ifndef AIDC_TEST_SUPPORT_MISMATCH_H
#define AIDC_TEST_SUPPORT_MISMATCH_H

/* Print a mismatch at once and keep it for finish(). */
void note(const char *f, ...) __attribute__((format(printf, 1, 2)));
/* Forget the mismatches kept so far: the start of each test. */
void reset_notes(void);
/* Fail the running Check test, with every mismatch kept, if there is one. */
void finish(void);

#endif
