/*
 * pano-explorer - the Workflow Performance Explorer: one program that
 * serves the pages (explorer/www, with Chart.js from Debian's
 * libjs-chart.js) and the JSON API they read (api.h), live while a
 * workflow runs.
 *
 *   pano-explorer [--bind ADDRESS] [--port N] [--es-url URL | --store PATH]
 *
 * It listens on 127.0.0.1 unless told otherwise, and on any other address
 * only with a password (HTTP basic authentication), which comes from the
 * properties file, the environment or a file, never the command line.
 * GET only; every page is served with a Content-Security-Policy that allows
 * no inline script and no other origin.
 */
#include "api.h"
#include "cli.h"
#include "http.h"
#include "log.h"
#include "mem.h"
#include "secret.h"
#include "store.h"
#include "url.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { OPT_BIND = 0x2000, OPT_PORT, OPT_ES_URL, OPT_STORE };

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: pano-explorer [options]\n"
            "Serve the Workflow Performance Explorer: the workflows in the store, each\n"
            "workflow's jobs on a timeline, its CPU, memory and I/O over time, statistics,\n"
            "anomalies, Darshan and transfer summaries, each job's own charts and events;\n"
            "live while the workflow runs. Open the URL it prints in a browser.\n"
            "\n"
            "      --bind ADDRESS     listen on this numeric address (pano.explorer.bind,\n"
            "                         default 127.0.0.1); another than loopback needs a\n"
            "                         password (pano.explorer.password_file)\n"
            "      --port N           port (pano.explorer.port, default 8095; 0: any)\n"
            "      --es-url URL       Elasticsearch (pano.es.url)\n"
            "      --store PATH       read the embedded store instead (pano.store): a store\n"
            "                         directory or one of its files; several (the option\n"
            "                         again, or comma-separated) are read as one\n"
            "\n"
            "The password of basic authentication comes from pano.explorer.password in the\n"
            "properties file or PANO_EXPLORER_PASSWORD, or from pano.explorer.password_file;\n"
            "never from the command line.\n"
            "\n" PANO_CLI_COMMON_HELP);
}

typedef struct {
    pano_config *cfg;
    char *www;
    const char *chartjs;
    explorer_context api;
} explorer;

/* The rows kept for the workflows looked at lately (jobs_cache.h), beyond
 * the latest workflow's: about 400 bytes each. */
#define CACHED_RUNS 1000000

/* The pages: a fixed list, so no request names a file of its own. */
static const struct {
    const char *path, *file, *type;
} pages[] = {
    {"/", "index.html", "text/html; charset=utf-8"},
    {"/index.html", "index.html", "text/html; charset=utf-8"},
    {"/app.js", "app.js", "text/javascript; charset=utf-8"},
    {"/style.css", "style.css", "text/css; charset=utf-8"},
};

static volatile sig_atomic_t stop_signal;
static void on_signal(int sig) { stop_signal = sig; }
/* Requests in progress give up once a stop signal came. */
static bool stopping(void) { return stop_signal != 0; }

static void handle(void *user, const pano_http_request *req, pano_http_reply *reply)
{
    explorer *e = user;
    const char *path = pano_http_path(req);
    if (strncmp(path, "/api/", 5) == 0) {
        explorer_api(&e->api, req, reply);
        return;
    }
    static _Thread_local char file[4096];
    for (size_t i = 0; i < sizeof pages / sizeof pages[0]; i++)
        if (strcmp(path, pages[i].path) == 0) {
            snprintf(file, sizeof file, "%s/%s", e->www, pages[i].file);
            reply->file = file;
            reply->content_type = pages[i].type;
            reply->cache = "no-cache";
            return;
        }
    if (strcmp(path, "/vendor/chart.js") == 0) {
        reply->file = e->chartjs;
        reply->content_type = "text/javascript; charset=utf-8";
        reply->cache = "max-age=86400";
        return;
    }
    reply->status = 404;
    pano_buf_append_str(&reply->body, "not found\n");
}

static bool has_index(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/index.html", dir);
    return access(path, R_OK) == 0;
}

/* pano.explorer.www, else the installed pages, else the source tree's. */
static char *find_www(const pano_config *cfg)
{
    const char *set = pano_config_str(cfg, "pano.explorer.www");
    if (set)
        return pano_strdup(set);
    if (has_index(PANO_EXPLORER_DATADIR))
        return pano_strdup(PANO_EXPLORER_DATADIR);
    return pano_strdup(PANO_EXPLORER_SOURCE);
}

/* The password: never from the command line. NULL when none is configured
 * (ok stays true), or on an error (ok false, message logged). */
static char *read_password(const pano_config *cfg, bool *ok)
{
    *ok = true;
    if (pano_config_source_of(cfg, "pano.explorer.password") == PANO_CFG_CLI) {
        pano_error("pano.explorer.password on the command line would show in ps: put it in "
                   "the properties file, PANO_EXPLORER_PASSWORD or pano.explorer.password_file");
        *ok = false;
        return NULL;
    }
    const char *pw = pano_config_str(cfg, "pano.explorer.password");
    if (pw && *pw)
        return pano_strdup(pw);
    const char *file = pano_config_str(cfg, "pano.explorer.password_file");
    if (!file)
        return NULL;
    char err[512];
    char *line = pano_secret_read("pano.explorer.password_file", file, err, sizeof err);
    if (!line) {
        pano_error("%s", err);
        *ok = false;
    }
    return line;
}


int main(int argc, char **argv)
{
    pano_config *cfg = pano_cli_init("pano-explorer", argc, argv, false);
    if (!cfg)
        return 2;
    static const struct option options[] = {
        {"bind", required_argument, NULL, OPT_BIND},
        {"port", required_argument, NULL, OPT_PORT},
        {"es-url", required_argument, NULL, OPT_ES_URL},
        {"store", required_argument, NULL, OPT_STORE},
        {"help", no_argument, NULL, 'h'},
        PANO_CLI_LONG_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    int opt, rc = 2;
    explorer e = {.cfg = cfg};
    pano_http *server = NULL;
    char *password = NULL;
    while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        int handled = pano_cli_option(cfg, opt, optarg);
        if (handled < 0)
            goto out;
        if (handled)
            continue;
        const char *key = opt == OPT_BIND ? "pano.explorer.bind"
                          : opt == OPT_PORT ? "pano.explorer.port"
                          : opt == OPT_ES_URL ? "pano.es.url"
                          : opt == OPT_STORE  ? "pano.store"
                                              : NULL;
        if (key) {
            if ((opt == OPT_STORE ? pano_cli_add : pano_cli_set)(cfg, key, optarg) < 0)
                goto out;
            continue;
        }
        if (opt == 'h') {
            usage(stdout);
            rc = 0;
        } else
            usage(stderr);
        goto out;
    }
    if (optind != argc) {
        usage(stderr);
        goto out;
    }
    pano_cli_apply_logging(cfg);
    bool ok;
    password = read_password(cfg, &ok);
    if (!ok)
        goto out;
    const char *bind = pano_config_str(cfg, "pano.explorer.bind");
    if (!pano_http_is_loopback(bind) && !password) {
        pano_error("listening on %s, beyond this machine, needs a password: set "
                   "pano.explorer.password_file (or pano.explorer.password in the properties "
                   "file)", bind);
        goto out;
    }
    e.api = (explorer_context){.cfg = cfg, .stopping = stopping,
                               .cache = jobs_cache_new(CACHED_RUNS)};
    e.www = find_www(cfg);
    e.chartjs = pano_config_str(cfg, "pano.explorer.chartjs");
    if (!has_index(e.www))
        pano_warn("no index.html in %s (pano.explorer.www): the API works, the pages will not",
                  e.www);
    if (access(e.chartjs, R_OK) != 0)
        pano_warn("cannot read Chart.js at %s (install libjs-chart.js, or set "
                  "pano.explorer.chartjs): the pages will have no charts", e.chartjs);
    /* No inline script, no other origin: what a page shows of an event is text. */
    static const char *const headers[] = {
        "Content-Security-Policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        "Referrer-Policy", "no-referrer",
        "X-Frame-Options", "DENY",
        NULL,
    };
    pano_http_options ho = {
        .address = bind,
        .port = (int)pano_config_int(cfg, "pano.explorer.port"),
        .user = password ? pano_config_str(cfg, "pano.explorer.user") : NULL,
        .password = password,
        .threads = (unsigned)pano_config_int(cfg, "pano.explorer.threads"),
        .headers = headers,
    };
    char err[512];
    server = pano_http_start(&ho, handle, &e, err, sizeof err);
    if (!server) {
        pano_error("%s", err);
        rc = 1;
        goto out;
    }
    char source[512], store[4096];
    if (pano_store_to_read(cfg, store, sizeof store))
        snprintf(source, sizeof source, "the embedded store %.400s", store);
    else
        pano_url_redact(pano_config_str(cfg, "pano.es.url"), source, sizeof source);
    pano_info("serving %s (pages from %s) on http://%s%s%s:%d/%s", source, e.www,
              strchr(bind, ':') ? "[" : "", bind, strchr(bind, ':') ? "]" : "",
              pano_http_port(server), password ? " (basic authentication)" : "");
    if (pano_cli_catch_stop_signals(on_signal, 0) < 0) {
        rc = 1;
        goto out;
    }
    while (!stop_signal)
        pause();
    pano_info("stopping (signal %d)", (int)stop_signal);
    rc = 0;
out:
    pano_http_stop(server);
    jobs_cache_free(e.api.cache);
    if (password) {
        memset(password, 0, strlen(password));
        free(password);
    }
    free(e.www);
    pano_config_free(cfg);
    return rc;
}
