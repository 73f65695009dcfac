#include "cli.h"

#include "log.h"
#include "mem.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

pano_config *pano_cli_init(const char *program, int argc, char **argv, bool tolerant)
{
    pano_log_init(program);
    pano_config *cfg = pano_config_new();
    char err[512];
    if (pano_config_load(cfg, pano_config_find_arg(argc, argv), err, sizeof err) < 0) {
        if (!tolerant) {
            pano_error("%s", err);
            pano_config_free(cfg);
            return NULL;
        }
        pano_warn("%s (continuing without it)", err);
    }
    pano_cli_apply_logging(cfg);
    return cfg;
}

/* Overwrite the password of a URL inside an argv string, in place. */
static void hide_password(char *arg)
{
    char *scheme = strstr(arg, "://");
    if (!scheme)
        return;
    char *auth = scheme + 3;
    char *end = auth + strcspn(auth, "/?#");
    char *at = NULL;
    for (char *p = auth; p < end; p++)
        if (*p == '@')
            at = p;
    char *colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
    if (!colon)
        return;
    memset(colon + 1, 'x', (size_t)(at - colon - 1));
    pano_warn("a password was given on the command line, where other users can see it; "
              "use pano.amqp.password_file or the environment instead");
}

int pano_cli_set(pano_config *cfg, const char *key, char *value)
{
    char err[512];
    if (pano_config_set(cfg, key, value, PANO_CFG_CLI, err, sizeof err) < 0) {
        pano_error("%s", err);
        return -1;
    }
    /* The configuration keeps its own copy; now scrub the visible one. */
    for (const pano_config_key *k = pano_config_keys; k->name; k++)
        if (k->secret && strcmp(k->name, key) == 0)
            hide_password(value);
    return 0;
}

int pano_cli_add(pano_config *cfg, const char *key, char *value)
{
    const char *now = pano_config_str(cfg, key);
    if (pano_config_source_of(cfg, key) != PANO_CFG_CLI || !now || !*now)
        return pano_cli_set(cfg, key, value);
    char *list = pano_asprintf("%s,%s", now, value);
    int rc = pano_cli_set(cfg, key, list);
    free(list);
    return rc;
}

int pano_cli_option(pano_config *cfg, int opt, char *arg)
{
    switch (opt) {
    case PANO_OPT_CONFIG:
        return 1; /* already loaded by pano_cli_init */
    case PANO_OPT_SET: {
        char *eq = strchr(arg, '=');
        if (!eq || eq == arg) {
            pano_error("--set expects KEY=VALUE, got '%s'", arg);
            return -1;
        }
        *eq = '\0';
        int rc = pano_cli_set(cfg, arg, eq + 1);
        *eq = '=';
        return rc < 0 ? -1 : 1;
    }
    case PANO_OPT_LOG_LEVEL:
        if (pano_cli_set(cfg, "pano.log.level", arg) < 0)
            return -1;
        pano_cli_apply_logging(cfg);
        return 1;
    case PANO_OPT_SHOW_CONFIG:
        pano_config_dump(cfg, stdout);
        exit(0);
    case PANO_OPT_VERSION:
        printf("pano %s\n", PANO_VERSION);
        exit(0);
    default:
        return 0;
    }
}

void pano_cli_apply_logging(const pano_config *cfg)
{
    int level = pano_log_level_parse(pano_config_str(cfg, "pano.log.level"));
    if (level >= 0)
        pano_log_set_level((pano_log_level)level);
}

int pano_cli_catch_stop_signals(void (*handler)(int), int flags)
{
    struct sigaction stop = {.sa_handler = handler}, ignore = {.sa_handler = SIG_IGN};
    if (sigemptyset(&stop.sa_mask) < 0 || sigemptyset(&ignore.sa_mask) < 0 ||
        sigaction(SIGINT, &stop, NULL) < 0 || sigaction(SIGTERM, &stop, NULL) < 0 ||
        ((flags & PANO_STOP_ON_HANGUP) && sigaction(SIGHUP, &stop, NULL) < 0) ||
        ((flags & PANO_IGNORE_SIGPIPE) && sigaction(SIGPIPE, &ignore, NULL) < 0)) {
        pano_error("cannot install the signal handlers: %s", strerror(errno));
        return -1;
    }
    return 0;
}
