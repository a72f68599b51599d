/*
 * browser.h - a browser for the single sign-on tests: libcurl with its cookie
 * engine (aidc's cookies and the provider's on 127.0.0.1 kept apart by path),
 * redirects followed one at a time so a test sees each Location. Assertions
 * fail the running Check test.
 */
#ifndef AIDC_TEST_BROWSER_H
#define AIDC_TEST_BROWSER_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>

struct browser {
    CURL *h;
    long status;         /* of the last answer */
    char location[4096]; /* its Location, absolute ("" for none) */
};

void browser_open(struct browser *b);
void browser_close(struct browser *b);
/* GET url, not followed: its status (status and location kept in b). */
long browser_get(struct browser *b, const char *url);
/*
 * From url, follow redirects until one leads to aidc's callback below base: its
 * URL (with code and state) in b->location. False when the chain ends elsewhere.
 */
bool browser_to_callback(struct browser *b, const char *base, const char *url);
/* The value of cookie name in the browser (malloc'd), or NULL. */
char *browser_cookie(struct browser *b, const char *name);
/* POST an empty body to url with a fresh handle: its status. */
long browser_post_empty(const char *url);

#endif
