/*
 * cli.h - the command-line conventions every pano program shares.
 *
 * Each program parses its own options with getopt_long and includes
 * PANO_CLI_LONG_OPTIONS in its table; pano_cli_option() handles those:
 *
 *   --config FILE       properties file (also PANO_CONFIG)
 *   --set KEY=VALUE     set any configuration key
 *   --log-level LEVEL   error, warn, info, debug
 *   --show-config       print the effective configuration and exit
 *   --version           print the version and exit
 *
 * A secret given on the command line (a broker URL with a password) is
 * overwritten in argv so that ps and /proc/PID/cmdline no longer show it.
 * The long-running programs catch the stop signals the same way too.
 */
#ifndef PANO_CLI_H
#define PANO_CLI_H

#include "config.h"

#include <getopt.h>
#include <stdbool.h>

enum {
    PANO_OPT_CONFIG = 0x1000,
    PANO_OPT_SET,
    PANO_OPT_LOG_LEVEL,
    PANO_OPT_SHOW_CONFIG,
    PANO_OPT_VERSION,
};

#define PANO_CLI_LONG_OPTIONS                                                                  \
    {"config", required_argument, NULL, PANO_OPT_CONFIG},                                     \
        {"set", required_argument, NULL, PANO_OPT_SET},                                       \
        {"log-level", required_argument, NULL, PANO_OPT_LOG_LEVEL},                           \
        {"show-config", no_argument, NULL, PANO_OPT_SHOW_CONFIG},                             \
        {"version", no_argument, NULL, PANO_OPT_VERSION}

#define PANO_CLI_COMMON_HELP                                                                   \
    "Common options:\n"                                                                        \
    "      --config FILE      properties file (default: $PANO_CONFIG)\n"                      \
    "      --set KEY=VALUE    set a configuration key (see deploy/pano.properties)\n"         \
    "      --log-level LEVEL  error, warn, info or debug (default: info)\n"                   \
    "      --show-config      print the effective configuration and exit\n"                   \
    "      --version          print the version and exit\n"                                   \
    "  -h, --help             this help\n"                                                     \
    "Configuration is read from the properties file, then the environment\n"                  \
    "(PANO_* and Pegasus variables), then the command line.\n"

/* Name the program in logs, then load the properties file (--config in argv,
 * or PANO_CONFIG) and the environment. On a configuration error it prints
 * the message and returns NULL, unless tolerant (pano-monitor must run its
 * task whatever happens), in which case it warns and goes on with what
 * could be read. */
pano_config *pano_cli_init(const char *program, int argc, char **argv, bool tolerant);

/* Handle one of the common options. Returns 1 if it was one (and --version
 * or --show-config exit here), 0 if it was not, -1 on an invalid value
 * (message printed). */
int pano_cli_option(pano_config *cfg, int opt, char *arg);

/* Set a key from a program-specific option, as PANO_CFG_CLI. Returns 0, or
 * -1 with the error printed. */
int pano_cli_set(pano_config *cfg, const char *key, char *value);

/* A repeatable option that names a list (--store a --store b): the first
 * one on the command line replaces what the file or the environment set,
 * each next one is added after a comma. Returns 0, or -1 with the error
 * printed. */
int pano_cli_add(pano_config *cfg, const char *key, char *value);

/* Apply pano.log.level once options are parsed. */
void pano_cli_apply_logging(const pano_config *cfg);

/* Call HANDLER on SIGINT and SIGTERM (how a user and systemd ask a program
 * to stop); with PANO_STOP_ON_HANGUP on SIGHUP too; with PANO_IGNORE_SIGPIPE
 * ignore SIGPIPE (a daemon's peer that closed its socket is an error return,
 * not a death). Returns 0, or -1 with the error printed. */
enum { PANO_STOP_ON_HANGUP = 1, PANO_IGNORE_SIGPIPE = 2 };
int pano_cli_catch_stop_signals(void (*handler)(int), int flags);

#endif
