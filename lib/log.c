#include "log.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static const char *log_program = "pano";
static pano_log_level log_level = PANO_LOG_INFO;
static const char *const level_names[] = {"ERROR", "WARN", "INFO", "DEBUG"};

void pano_log_init(const char *program)
{
    if (program) {
        const char *slash = strrchr(program, '/');
        log_program = slash ? slash + 1 : program;
    }
}

const char *pano_log_program(void) { return log_program; }

void pano_log_set_level(pano_log_level level) { log_level = level; }


int pano_log_level_parse(const char *name)
{
    for (int i = 0; i < 4; i++)
        if (strcasecmp(name, level_names[i]) == 0)
            return i;
    if (strcasecmp(name, "warning") == 0)
        return PANO_LOG_WARN;
    return -1;
}

void pano_log(pano_log_level level, const char *fmt, ...)
{
    if (level > log_level)
        return;

    /* Build the whole line first so that concurrent writers (threads, or
     * several processes sharing a terminal) do not interleave fragments. */
    char line[2048];
    struct timeval tv;
    struct tm tm;
    gettimeofday(&tv, NULL);
    localtime_r(&tv.tv_sec, &tm);
    int n = (int)strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%S", &tm);
    n += snprintf(line + n, sizeof line - (size_t)n, ".%03ld %s[%d] %s: ",
                  (long)(tv.tv_usec / 1000), log_program, (int)getpid(),
                  level_names[level]);
    if (n < (int)sizeof line) {
        va_list ap;
        va_start(ap, fmt);
        int m = vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
        va_end(ap);
        n = m < 0 ? n : n + m;
    }
    if (n > (int)sizeof line - 2)
        n = (int)sizeof line - 2; /* truncated: still end the line */
    line[n++] = '\n';
    /* stderr is unbuffered; a failed log write has nowhere to be reported. */
    if (fwrite(line, 1, (size_t)n, stderr) != (size_t)n)
        return;
}
