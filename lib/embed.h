/*
 * embed.h - files compiled into the binary (migrations, the OpenAPI spec), so
 * an aidcd binary always carries exactly the schema and spec it was built
 * with. Tables end with a row whose name is NULL. Data is NUL-terminated.
 */
#ifndef AIDC_EMBED_H
#define AIDC_EMBED_H

#include <stddef.h>

struct embed_file {
    const char *name;
    const unsigned char *data;
    size_t len;
};

/* migrations/NNNN_*.sql in order */
extern const struct embed_file embed_migrations[];
/* api/openapi.json */
extern const struct embed_file embed_openapi[];

#endif
