/*
 * log.h - leveled logging to stderr.
 *
 * Every pano program logs through these functions so that messages share one
 * format: "<time> <program>[<pid>] <LEVEL>: message". Messages never contain
 * credentials: anything that may hold a password (URLs above all) must go
 * through pano_url_redact() (url.h) before it is logged.
 */
#ifndef PANO_LOG_H
#define PANO_LOG_H

#include <stdarg.h>

typedef enum {
    PANO_LOG_ERROR = 0,
    PANO_LOG_WARN = 1,
    PANO_LOG_INFO = 2,
    PANO_LOG_DEBUG = 3,
} pano_log_level;

/* Set the program name printed with every message (default "pano"). */
void pano_log_init(const char *program);

/* That name, without its directory ("pano" before pano_log_init). */
const char *pano_log_program(void);

/* Messages above this level are discarded (default PANO_LOG_INFO). */
void pano_log_set_level(pano_log_level level);

/* Parse "error", "warn", "info", "debug" (case-insensitive). -1 if unknown. */
int pano_log_level_parse(const char *name);

void pano_log(pano_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define pano_error(...) pano_log(PANO_LOG_ERROR, __VA_ARGS__)
#define pano_warn(...) pano_log(PANO_LOG_WARN, __VA_ARGS__)
#define pano_info(...) pano_log(PANO_LOG_INFO, __VA_ARGS__)
#define pano_debug(...) pano_log(PANO_LOG_DEBUG, __VA_ARGS__)

#endif
