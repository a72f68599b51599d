/*
 * clock.h - the monotonic clock in milliseconds: for intervals and retry
 * times, which must not jump with the wall clock (NTP, an operator's date).
 */
#ifndef AIDC_CLOCK_H
#define AIDC_CLOCK_H

/* Milliseconds on CLOCK_MONOTONIC (an arbitrary start: compare, never show). */
double clock_now_ms(void);

#endif
