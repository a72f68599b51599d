/* redact.c - secrets out of what is recorded (see redact.h). */
#include "redact.h"

#include <string.h>
#include <strings.h>

int redact_key_is_secret(const char *key)
{
    static const char *const secret_words[] = {
        "password",   "passwd",      "secret",  "token",  "authorization", "cookie",
        "credential", "private_key", "api_key", "apikey", "signature"};
    /* Names of secrets' metadata are not secrets: token_id, token_name. */
    static const char *const harmless_suffixes[] = {"_id", "_name", "_at", "_prefix"};
    size_t kl = strlen(key);
    for (size_t i = 0; i < sizeof harmless_suffixes / sizeof harmless_suffixes[0]; i++) {
        size_t sl = strlen(harmless_suffixes[i]);
        if (kl > sl && strcasecmp(key + kl - sl, harmless_suffixes[i]) == 0)
            return 0;
    }
    for (size_t i = 0; i < sizeof secret_words / sizeof secret_words[0]; i++)
        if (strcasestr(key, secret_words[i]))
            return 1;
    return 0;
}

void redact_details(json_t *v)
{
    if (json_is_object(v)) {
        const char *k;
        json_t *child;
        json_object_foreach(v, k, child)
        {
            if (redact_key_is_secret(k) && !json_is_null(child) && !json_is_boolean(child))
                json_object_set_new(v, k, json_string("[redacted]"));
            else
                redact_details(child);
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *child;
        json_array_foreach(v, i, child) redact_details(child);
    }
}
