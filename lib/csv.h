/*
 * csv.h - RFC 4180 cells for the CSV answers (audit export, usage,
 * invoices): quoted when they hold a comma, quote or line break, and text
 * that a spreadsheet would run as a formula (= + - @, tab, CR first) is
 * prefixed with ' inside quotes. Numbers are written as they are, so a
 * negative amount stays a number.
 */
#ifndef AIDC_CSV_H
#define AIDC_CSV_H

struct sbuf;

/* Append text s as one cell (nothing for NULL). */
void csv_cell(struct sbuf *sb, const char *s);
/* Append a decimal number as one cell (NULL: empty). */
void csv_number(struct sbuf *sb, const char *s);

#endif
