/* slurp(path, &size): a program image read whole (malloc'd; NULL when it cannot be read), for
 * kernels.c and main_level.c. */
#ifndef CAPI_TEST_IMAGE_H
#define CAPI_TEST_IMAGE_H

#include <stdio.h>
#include <stdlib.h>

static char *slurp(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    char *data = malloc(*size);
    if (data && fread(data, 1, *size, f) != *size) { free(data); data = NULL; }
    fclose(f);
    return data;
}

#endif
