#include "secret.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

char *pano_secret_read(const char *key, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: cannot read %s: %s", key, path, strerror(errno));
        return NULL;
    }
    char *line = NULL;
    size_t cap = 0;
    errno = 0;
    ssize_t n = getline(&line, &cap, f);
    int read_errno = ferror(f) ? errno : 0;
    fclose(f);
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = '\0';
    if (n <= 0) {
        snprintf(err, errlen, "%s: cannot read %s: %s", key, path,
                 read_errno ? strerror(read_errno) : "its first line is empty");
        free(line);
        return NULL;
    }
    return line;
}
