/*
 * pano-emit - publish a custom metric from a shell script or any language.
 *
 *   pano-emit [options] NAME VALUE
 *   pano-emit [options] --events FILE
 *   pano-emit --flush-spool
 *
 * Sends one custom.metric event (metric.h) with the workflow context of the
 * environment, through the same sink as every pano publisher (broker with
 * confirms, spool when it is down, the embedded store, or JSON lines).
 * --events sends events that are already made, one JSON object a line, as
 * they are (another tool's, a copy kept with pano.output). --flush-spool
 * replays the events waiting in the spool of the configured broker.
 */
#include "cli.h"
#include "json.h"
#include "log.h"
#include "mem.h"
#include "metric.h"
#include "sink.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    OPT_LEVEL = 0x2000,
    OPT_TAG,
    OPT_FLUSH,
    OPT_EVENTS,
};

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: pano-emit [options] NAME VALUE\n"
            "       pano-emit [options] --events FILE\n"
            "       pano-emit [options] --flush-spool\n"
            "Publish a custom.metric event NAME=VALUE with the workflow context of the\n"
            "environment (PEGASUS_WF_UUID, PEGASUS_DAG_JOB_ID, the MPI rank, ...); inside\n"
            "a task of pano-monitor (PANO_METRICS_SOCKET set), through the monitor's\n"
            "metrics socket.\n"
            "\n"
            "      --level N          level of this metric, 1 to 9 (default 1); it is sent\n"
            "                         only if N <= pano.monitor.level (PANO_MONITOR_LEVEL,\n"
            "                         default 1)\n"
            "      --tag KEY=VALUE    a tag (repeatable)\n"
            "  -o, --output FILE      append events to FILE as JSON lines (- for stdout);\n"
            "                         with a broker URL they are published too (default:\n"
            "                         the broker, else the embedded store, pano.store)\n"
            "      --events FILE      send the events of FILE (- for standard input), one\n"
            "                         JSON object with an \"event\" name a line, as they are:\n"
            "                         through the broker (which checks them), or into the\n"
            "                         embedded store (checked the same way)\n"
            "      --flush-spool      replay the events waiting in the spool of the\n"
            "                         configured broker, then exit (1 if some remain)\n"
            "\n"
            "Exit status: 0 sent, spooled for later delivery, or not sent because of\n"
            "its level; 1 not sent (--events: any of them); 2 usage error.\n"
            "\n" PANO_CLI_COMMON_HELP);
}

/* --events FILE: each line's event as it is. 0, or 1 when one was not sent. */
static int send_events(const pano_config *cfg, const char *path)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "re");
    if (!f) {
        pano_error("cannot open %s: %s", path, strerror(errno));
        return 1;
    }
    char err[1024];
    pano_sink *sink = pano_sink_open(cfg, err, sizeof err);
    if (!sink) {
        pano_error("%s", err);
        if (f != stdin)
            fclose(f);
        return 1;
    }
    char *line = NULL;
    size_t cap = 0, lineno = 0, unreadable = 0;
    ssize_t len;
    pano_sink_hold(sink, true); /* many events: written together */
    /* what routes a line: its name and id (read no further; the sink, or
     * the bridge behind a broker, checks the rest) */
    char name[256], id[256];
    pano_json_peek want[] = {{"event", name, sizeof name}, {"event_id", id, sizeof id}};
    while ((len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if (len == 0)
            continue;
        bool named = pano_json_peek_strings(line, (size_t)len, want, 2) && name[0];
        if (!named)
            snprintf(err, sizeof err, "not a JSON object with an \"event\" name");
        if (!named || pano_sink_send_raw(sink, name, id[0] ? id : NULL, line, (size_t)len, err,
                                         sizeof err) < 0)
            pano_error("%s:%zu: %s", path, lineno, err);
        unreadable += !named;
    }
    bool read_error = ferror(f);
    if (read_error)
        pano_error("reading %s: %s", path, strerror(errno));
    pano_sink_flush(sink, err, sizeof err); /* a failure is logged */
    /* held events count once written: the sink's figures say what became of each */
    pano_sink_stats st = pano_sink_get_stats(sink);
    size_t failed = unreadable + st.rejected + st.failed;
    pano_info("%llu event(s) of %s sent to %s, %zu not", (unsigned long long)(st.sent + st.spooled),
              path, pano_sink_describe(sink), failed);
    pano_sink_close(sink);
    free(line);
    if (f != stdin)
        fclose(f);
    return failed || read_error ? 1 : 0;
}

int main(int argc, char **argv)
{
    pano_config *cfg = pano_cli_init("pano-emit", argc, argv, false);
    if (!cfg)
        return 2;
    static const struct option options[] = {
        {"level", required_argument, NULL, OPT_LEVEL},
        {"tag", required_argument, NULL, OPT_TAG},
        {"output", required_argument, NULL, 'o'},
        {"flush-spool", no_argument, NULL, OPT_FLUSH},
        {"events", required_argument, NULL, OPT_EVENTS},
        {"help", no_argument, NULL, 'h'},
        PANO_CLI_LONG_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    int level = 1, opt, rc = 2;
    bool flush = false;
    const char *events = NULL;
    char **tags = pano_calloc((size_t)argc + 1, sizeof *tags);
    size_t ntags = 0;
    char err[512];
    pano_metrics *m = NULL;
    while ((opt = getopt_long(argc, argv, "o:h", options, NULL)) != -1) {
        int handled = pano_cli_option(cfg, opt, optarg);
        if (handled < 0)
            goto out;
        if (handled)
            continue;
        switch (opt) {
        case OPT_LEVEL: {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (end == optarg || *end || v < 1 || v > 9) {
                pano_error("--level expects a number from 1 to 9, got '%s'", optarg);
                goto out;
            }
            level = (int)v;
            break;
        }
        case OPT_TAG: tags[ntags++] = optarg; break;
        case 'o':
            if (pano_cli_set(cfg, "pano.output", optarg) < 0)
                goto out;
            break;
        case OPT_FLUSH: flush = true; break;
        case OPT_EVENTS: events = optarg; break;
        case 'h':
            usage(stdout);
            rc = 0;
            goto out;
        default: usage(stderr); goto out;
        }
    }
    if ((flush || events) ? optind != argc || (flush && events) : optind + 2 != argc) {
        usage(stderr);
        goto out;
    }
    pano_cli_apply_logging(cfg);
    if (events) {
        rc = send_events(cfg, events);
        goto out;
    }
    double value = 0;
    if (!flush) {
        char *end;
        errno = 0;
        value = strtod(argv[optind + 1], &end);
        if (end == argv[optind + 1] || *end || errno || !isfinite(value)) {
            pano_error("VALUE must be a finite number, got '%s'", argv[optind + 1]);
            goto out;
        }
    }
    m = pano_metrics_open(cfg, err, sizeof err);
    if (!m) {
        pano_error("%s", err);
        rc = 1;
        goto out;
    }
    if (flush) {
        int n = pano_metrics_flush_spool(m, 30, err, sizeof err);
        if (n < 0) {
            pano_error("spool not flushed: %s", err);
            rc = 1;
        } else {
            pano_info("%d spooled event(s) delivered", n);
            rc = 0;
        }
        goto out;
    }
    int r = pano_metric(m, argv[optind], value, level, (const char *const *)tags, err,
                        sizeof err);
    if (r < 0) {
        pano_error("%s", err);
        rc = 1;
    } else {
        if (r > 0)
            pano_debug("metric %s not sent: level %d is above pano.monitor.level",
                       argv[optind], level);
        rc = 0;
    }
out:
    pano_metrics_close(m);
    free(tags);
    pano_config_free(cfg);
    return rc;
}
