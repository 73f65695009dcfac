/*
 * pano-transfer - move data and publish transfer statistics.
 *
 *   pano-transfer copy [options] SRC DST
 *   pano-transfer copy [options] --list FILE
 *   pano-transfer globus [options] FILE|-
 *
 * copy publishes one transfer.inv.local.single event per file and one
 * transfer.inv.local summary per run, and exits 1 if any transfer failed.
 * globus turns Globus Transfer task documents into transfer.inv.go events.
 */
#include "cli.h"
#include "copy.h"
#include "event.h"
#include "globus.h"
#include "log.h"
#include "mem.h"
#include "progress.h"
#include "sink.h"
#include "transfer_list.h"
#include "url.h"

#include <ctype.h>
#include <signal.h>
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define INPUT_LIMIT (1u << 30) /* largest list or Globus document read */

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: pano-transfer copy [options] SRC DST\n"
            "       pano-transfer copy [options] --list FILE\n"
            "       pano-transfer globus [options] FILE|-\n"
            "\n"
            "copy moves files (local paths, file://, http(s)://, ftp(s)://, scp://, sftp://)\n"
            "and publishes one transfer.inv.local.single event per file and a\n"
            "transfer.inv.local summary. Exits 1 if any transfer failed.\n"
            "  -l, --list FILE          transfers, one a line: JSON objects {\"src\", \"dst\",\n"
            "                           \"src_site\", \"dst_site\", \"sha256\"} or \"SRC DST\"\n"
            "                           pairs (- for stdin)\n"
            "  -j, --jobs N             transfers at once (pano.transfer.jobs, 4)\n"
            "  -r, --retries N          retries of a failure that may go away (3)\n"
            "      --retry-delay S      first backoff in seconds, doubled each retry (1)\n"
            "      --connect-timeout S  (30)\n"
            "      --stall-timeout S    abort an attempt after S seconds without data (60)\n"
            "      --timeout S          limit of one attempt (0: none)\n"
            "      --checksum sha256    hash the data, verify local copies, report sha256\n"
            "  -c, --continue           resume a partial DST left by an earlier run\n"
            "      --src-site LABEL     source site label (source_site_name)\n"
            "      --dst-site LABEL     destination site label (destination_site_name)\n"
            "      --local-engine E     native (copy_file_range) or curl, for local copies\n"
            "      --progress, --no-progress  progress line on stderr (default: if a terminal)\n"
            "\n"
            "globus reads Globus Transfer task documents (a task, a task with its events,\n"
            "event_list or task_list documents, as the API and `globus ... -F json` print\n"
            "them) and publishes one transfer.inv.go event per task.\n"
            "\n"
            "Output:\n"
            "  -o, --output FILE        append events to FILE as JSON lines; when publishing\n"
            "                           they go to the broker too (default: the broker,\n"
            "                           else the embedded store, pano.store; stdout when\n"
            "                           publishing is off)\n"
            "      --payload            print @@@MONITORING_PAYLOAD@@@ blocks instead (for\n"
            "                           pano-monitor and pegasus-monitord), to stdout or -o\n"
            "  -p, --publish            publish to the broker (PEGASUS_TRANSFER_PUBLISH=1)\n"
            "      --no-publish         never publish, even with a broker URL\n"
            "Events go to the broker in pano.amqp.url (PANO_AMQP_URL, PEGASUS_AMQP_URL)\n"
            "when it is set, unless publishing is turned off: pano.transfer.publish=false,\n"
            "or PEGASUS_TRANSFER_PUBLISH set to anything but 1, true or yes.\n"
            "\n" PANO_CLI_COMMON_HELP);
}

/* ---- output ------------------------------------------------------------- */

typedef struct {
    pano_source *source;
    pano_sink *sink;
    long undelivered;
} output;

/* Where events go: the broker, unless publishing is off or --payload asks
 * for MONITORING_PAYLOAD blocks (then JSON lines or blocks to -o or
 * stdout); without a broker, where every publisher's go (sink.h). */
static int output_open(output *o, pano_config *cfg, bool payload)
{
    char err[512];
    o->source = pano_source_new(cfg);
    const char *mode = pano_config_str(cfg, "pano.transfer.publish");
    int publish = strcasecmp(mode, "auto") == 0 ? -1 : pano_config_parse_bool(mode);
    const char *url = pano_config_str(cfg, "pano.amqp.url");
    bool has_url = url && *url;
    const char *path = pano_config_str(cfg, "pano.output");
    if (!path || !*path)
        path = "-";
    if (payload) {
        if (has_url && publish == 1)
            pano_warn("--payload: events are printed, not published");
        o->sink = pano_sink_open_file(cfg, path, PANO_SINK_PAYLOAD, err, sizeof err);
    } else if (publish == 0 && has_url) {
        pano_debug("publishing is off: events are written as JSON lines");
        o->sink = pano_sink_open_file(cfg, path, PANO_SINK_JSON_LINES, err, sizeof err);
    } else {
        if (publish == 1 && !has_url)
            pano_warn("publishing was asked for but no broker URL is set (pano.amqp.url, "
                      "PEGASUS_AMQP_URL)");
        o->sink = pano_sink_open(cfg, err, sizeof err);
    }
    if (!o->sink) {
        pano_error("%s", err);
        return -1;
    }
    pano_debug("events go to %s", pano_sink_describe(o->sink));
    return 0;
}

static void emit(output *o, pano_json *ev)
{
    char err[512];
    if (pano_sink_send(o->sink, ev, err, sizeof err) < 0) {
        char *json = pano_json_serialize(ev, NULL);
        pano_error("event not delivered (%s): %s", err, json);
        free(json);
        o->undelivered++;
    }
    pano_json_free(ev);
}

/* Write what the sink holds (copy holds events for a file between flushes). */
static void output_flush(output *o)
{
    char err[512];
    if (pano_sink_flush(o->sink, err, sizeof err) < 0)
        o->undelivered++; /* the events were logged */
}

static void output_close(output *o)
{
    pano_sink_close(o->sink);
    pano_source_free(o->source);
}

/* ---- copy ----------------------------------------------------------------- */

static volatile sig_atomic_t stop_signal;

/* The first SIGINT/SIGTERM ends the run cleanly (every transfer reported,
 * no half files); a second one kills at once. */
static void on_stop_signal(int sig)
{
    stop_signal = sig;
    pano_copy_interrupt();
    signal(sig, SIG_DFL);
}

typedef struct {
    output *out;
    pano_progress *progress;
    size_t files, failed;
    long retries;
    uint64_t bytes;
} copy_run;

static void on_done(void *ctx, const pano_copy_result *r)
{
    copy_run *run = ctx;
    const pano_transfer_spec *s = r->spec;
    double duration = r->end - r->start;
    if (duration < 0)
        duration = 0;
    /* Every key is new to the event: added without looking for it first. */
    pano_json *ev = pano_event_new(run->out->source, "transfer.inv.local.single");
    pano_json_add(ev, "level", pano_json_string("INFO"));
    pano_json_add(ev, "status", pano_json_int(r->status));
    const char *local = s->src_path ? s->src_path : s->dst_path;
    if (local)
        pano_json_add(ev, "filename", pano_json_string(local));
    pano_json_add(ev, "source_url", pano_json_string(s->src_shown));
    if (s->src_site)
        pano_json_add(ev, "source_site_name", pano_json_string(s->src_site));
    pano_json_add(ev, "destination_url", pano_json_string(s->dst_shown));
    if (s->dst_site)
        pano_json_add(ev, "destination_site_name", pano_json_string(s->dst_site));
    pano_json_add(ev, "transfer_start_time", pano_json_double(r->start, 6));
    pano_json_add(ev, "transfer_completion_time", pano_json_double(r->end, 6));
    pano_json_add(ev, "transfer_duration", pano_json_double(duration, 6));
    pano_json_add(ev, "bytes_transferred", pano_json_int((int64_t)r->bytes));
    if (r->relayed)
        pano_json_add(ev, "bytes_received", pano_json_int((int64_t)r->received));
    if (r->status == 0 && r->size >= 0)
        pano_json_add(ev, "file_size", pano_json_int(r->size));
    if (duration > 0)
        pano_json_add(ev, "effective_bytes_per_second",
                      pano_json_double((double)r->bytes / duration, 1));
    pano_json_add(ev, "retries", pano_json_int(r->retries));
    if (r->sha256[0])
        pano_json_add(ev, "sha256", pano_json_string(r->sha256));
    if (r->status) {
        pano_json_add(ev, "error", pano_json_string(r->error));
        pano_error("%s -> %s: %s", s->src_shown, s->dst_shown, r->error);
    }
    emit(run->out, ev);
    run->files++;
    run->failed += r->status != 0;
    run->retries += r->retries;
    run->bytes += r->bytes;
}

static void on_tick(void *ctx, const pano_copy_stats *s)
{
    copy_run *run = ctx;
    pano_progress_update(run->progress, s);
}

static void on_flush(void *ctx)
{
    copy_run *run = ctx;
    output_flush(run->out);
}

static void emit_summary(copy_run *run, double start, double end)
{
    double duration = end - start;
    pano_json *ev = pano_event_new(run->out->source, "transfer.inv.local");
    pano_json_set_str(ev, "level", "INFO");
    pano_json_set_int(ev, "status", run->failed ? 1 : 0);
    pano_json_set_int(ev, "total_files", (int64_t)run->files);
    pano_json_set_int(ev, "succeeded_files", (int64_t)(run->files - run->failed));
    pano_json_set_int(ev, "failed_files", (int64_t)run->failed);
    pano_json_set_int(ev, "total_retries", run->retries);
    pano_json_set_double(ev, "transfer_start_time", start, 6);
    pano_json_set_double(ev, "transfer_completion_time", end, 6);
    pano_json_set_double(ev, "transfer_duration", duration, 6);
    pano_json_set_int(ev, "bytes_transferred", (int64_t)run->bytes);
    if (duration > 0)
        pano_json_set_double(ev, "effective_bytes_per_second", (double)run->bytes / duration, 1);
    emit(run->out, ev);
}

/* Read a whole file ("-": stdin). */
static char *read_input(const char *path, size_t *len)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "re");
    if (!f) {
        pano_error("cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 65536, n = 0;
    char *buf = pano_malloc(cap + 1);
    for (;;) {
        if (n == cap) {
            if (cap >= INPUT_LIMIT) {
                pano_error("%s is larger than %u bytes", path, INPUT_LIMIT);
                goto fail;
            }
            cap *= 2;
            buf = pano_realloc(buf, cap + 1);
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0) {
            if (ferror(f)) {
                pano_error("cannot read %s: %s", path, strerror(errno));
                goto fail;
            }
            break;
        }
    }
    if (f != stdin)
        fclose(f);
    buf[n] = '\0';
    *len = n;
    return buf;
fail:
    if (f != stdin)
        fclose(f);
    free(buf);
    return NULL;
}

typedef struct {
    const char *list;
    bool payload;
    int progress; /* -1 auto, 0 off, 1 on */
} cmd_options;

static int do_copy(pano_config *cfg, const cmd_options *co, int argc, char **argv)
{
    pano_copy_options o;
    pano_copy_options_init(&o);
    o.jobs = (int)pano_config_int(cfg, "pano.transfer.jobs");
    o.retries = (int)pano_config_int(cfg, "pano.transfer.retries");
    o.retry_delay = pano_config_double(cfg, "pano.transfer.retry_delay");
    o.retry_max_delay = pano_config_double(cfg, "pano.transfer.retry_max_delay");
    o.connect_timeout = pano_config_double(cfg, "pano.transfer.connect_timeout");
    o.stall_timeout = pano_config_double(cfg, "pano.transfer.stall_timeout");
    o.timeout = pano_config_double(cfg, "pano.transfer.timeout");
    o.resume = pano_config_bool(cfg, "pano.transfer.continue");
    o.tls_verify = pano_config_bool(cfg, "pano.transfer.tls_verify");
    o.cacert = pano_config_str(cfg, "pano.transfer.cacert");
    o.ssh_key = pano_config_str(cfg, "pano.transfer.ssh_key");
    o.ssh_known_hosts = pano_config_str(cfg, "pano.transfer.ssh_known_hosts");
    const char *checksum = pano_config_str(cfg, "pano.transfer.checksum");
    if (strcasecmp(checksum, "sha256") == 0)
        o.checksum = true;
    else if (strcasecmp(checksum, "none") != 0) {
        pano_error("pano.transfer.checksum: '%s' is not sha256 or none", checksum);
        return 2;
    }
    const char *engine = pano_config_str(cfg, "pano.transfer.local_engine");
    if (strcmp(engine, "curl") == 0)
        o.curl_for_local = true;
    else if (strcmp(engine, "native") != 0) {
        pano_error("pano.transfer.local_engine: '%s' is not native or curl", engine);
        return 2;
    }
    const char *src_site = pano_config_str(cfg, "pano.transfer.src_site");
    const char *dst_site = pano_config_str(cfg, "pano.transfer.dst_site");

    pano_transfer_list list = {0};
    char err[512];
    if (co->list) {
        if (argc != 0) {
            pano_error("give either --list FILE or SRC DST, not both");
            return 2;
        }
        size_t len;
        char *text = read_input(co->list, &len);
        if (!text)
            return 2;
        int rc = pano_transfer_list_parse(&list, text, len, src_site, dst_site, err, sizeof err);
        free(text);
        if (rc < 0) {
            pano_error("%s: %s", co->list, err);
            pano_transfer_list_free(&list);
            return 2;
        }
    } else {
        if (argc != 2) {
            pano_error("copy needs SRC and DST (or --list FILE)");
            usage(stderr);
            return 2;
        }
        if (pano_transfer_list_add(&list, argv[0], argv[1], src_site, dst_site, NULL, 0, err,
                                   sizeof err) < 0) {
            pano_error("%s", err);
            return 2;
        }
    }

    if (pano_cli_catch_stop_signals(on_stop_signal, PANO_STOP_ON_HANGUP) < 0) {
        pano_transfer_list_free(&list);
        return 2;
    }
    output out = {0};
    if (output_open(&out, cfg, co->payload) < 0) {
        output_close(&out);
        pano_transfer_list_free(&list);
        return 2;
    }
    bool tty = isatty(STDERR_FILENO);
    copy_run run = {.out = &out,
                    .progress = pano_progress_new(stderr, co->progress < 0 ? tty : co->progress)};
    pano_copy_callbacks cb = {.done = on_done, .tick = on_tick, .flush = on_flush, .ctx = &run};
    /* written to a file once per round of the engine, not one by one */
    pano_sink_hold(out.sink, true);
    double start = pano_now();
    long failed = pano_copy_run(&o, &list, &cb, err, sizeof err);
    double end = pano_now();
    pano_copy_stats final = {.total = list.len, .done = run.files, .failed = run.failed,
                             .bytes = run.bytes};
    pano_progress_finish(run.progress, &final);
    int rc = 0;
    if (failed < 0) {
        pano_error("%s", err);
        rc = 1;
    } else {
        emit_summary(&run, start, end);
        if (failed > 0) {
            pano_error("%ld of %zu transfers failed", failed, list.len);
            rc = 1;
        }
    }
    if (stop_signal) {
        pano_error("stopped by signal %d", (int)stop_signal);
        rc = 128 + stop_signal;
    }
    pano_progress_free(run.progress);
    output_close(&out);
    pano_transfer_list_free(&list);
    return rc;
}

/* ---- globus ---------------------------------------------------------------- */

static const char *const envelope_keys[] = {"event", "ts", "event_id", "seq", "hostname",
                                            "wf_uuid", "wf_label", "dag_job_id",
                                            "condor_job_id", "xformation", "site", "rank",
                                            NULL};

static int do_globus(pano_config *cfg, const cmd_options *co, int argc, char **argv)
{
    if (argc != 1) {
        pano_error("globus needs one FILE (- for stdin)");
        return 2;
    }
    size_t len;
    char *text = read_input(argv[0], &len);
    if (!text)
        return 2;
    pano_json *bodies = pano_json_array();
    char err[512];
    long n = pano_globus_parse(text, len, bodies, err, sizeof err);
    free(text);
    if (n < 0) {
        pano_error("%s: %s", strcmp(argv[0], "-") == 0 ? "stdin" : argv[0], err);
        pano_json_free(bodies);
        return 1;
    }
    output out = {0};
    if (output_open(&out, cfg, co->payload) < 0) {
        output_close(&out);
        pano_json_free(bodies);
        return 2;
    }
    for (size_t i = 0; i < pano_json_len(bodies); i++) {
        const pano_json *b = pano_json_at(bodies, i);
        pano_json *ev = pano_event_new(out.source, "transfer.inv.go");
        /* task_id is the Globus task's here, as in Panorama; the Pegasus task
         * id, if any, moves aside. */
        const char *pegasus_task = pano_json_get_str(ev, "task_id");
        if (pegasus_task) {
            pano_json_set_str(ev, "pegasus_task_id", pegasus_task);
            pano_json_remove(ev, "task_id");
        }
        for (size_t k = 0; k < pano_json_len(b); k++) {
            const char *key = pano_json_key_at(b, k);
            bool clash = false;
            for (const char *const *e = envelope_keys; *e; e++)
                clash |= strcmp(*e, key) == 0;
            char *name = clash ? pano_asprintf("globus_%s", key) : pano_strdup(key);
            pano_json_set(ev, name, pano_json_clone(pano_json_at(b, k)));
            free(name);
        }
        emit(&out, ev);
    }
    pano_debug("%ld Globus task%s read", n, n == 1 ? "" : "s");
    long undelivered = out.undelivered;
    output_close(&out);
    pano_json_free(bodies);
    return undelivered ? 1 : 0;
}

/* ---- main ------------------------------------------------------------------- */

/* PEGASUS_TRANSFER_PUBLISH: on for 1, true or yes only (Panorama turned
 * publishing on when the variable merely existed, even as 0). */
static int apply_pegasus_publish(pano_config *cfg)
{
    const char *v = getenv("PEGASUS_TRANSFER_PUBLISH");
    if (!v || getenv("PANO_TRANSFER_PUBLISH"))
        return 0;
    char word[16];
    size_t n = 0;
    while (isspace((unsigned char)*v))
        v++;
    while (*v && !isspace((unsigned char)*v) && n < sizeof word - 1)
        word[n++] = (char)tolower((unsigned char)*v++);
    word[n] = '\0';
    bool on = strcmp(word, "1") == 0 || strcmp(word, "true") == 0 || strcmp(word, "yes") == 0;
    if (!on && n && strcmp(word, "0") != 0 && strcmp(word, "false") != 0 &&
        strcmp(word, "no") != 0)
        pano_warn("PEGASUS_TRANSFER_PUBLISH=%s is not 1, true or yes: publishing is off",
                  getenv("PEGASUS_TRANSFER_PUBLISH"));
    char err[256];
    if (pano_config_set(cfg, "pano.transfer.publish", on ? "true" : "false", PANO_CFG_ENV, err,
                        sizeof err) < 0) {
        pano_error("%s", err);
        return -1;
    }
    return 0;
}

enum {
    OPT_RETRY_DELAY = 0x2000,
    OPT_CONNECT_TIMEOUT,
    OPT_STALL_TIMEOUT,
    OPT_TIMEOUT,
    OPT_CHECKSUM,
    OPT_SRC_SITE,
    OPT_DST_SITE,
    OPT_LOCAL_ENGINE,
    OPT_PROGRESS,
    OPT_NO_PROGRESS,
    OPT_PAYLOAD,
    OPT_NO_PUBLISH,
};

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("pano %s\n", PANO_VERSION);
        return 0;
    }
    const char *command = argv[1];
    bool is_copy = strcmp(command, "copy") == 0, is_globus = strcmp(command, "globus") == 0;
    pano_config *cfg = pano_cli_init("pano-transfer", argc, argv, false);
    if (!cfg)
        return 2;
    if (!is_copy && !is_globus) {
        pano_error("unknown command '%s' (copy or globus)", command);
        usage(stderr);
        pano_config_free(cfg);
        return 2;
    }
    if (apply_pegasus_publish(cfg) < 0) {
        pano_config_free(cfg);
        return 2;
    }

    static const struct option options[] = {
        {"list", required_argument, NULL, 'l'},
        {"jobs", required_argument, NULL, 'j'},
        {"retries", required_argument, NULL, 'r'},
        {"retry-delay", required_argument, NULL, OPT_RETRY_DELAY},
        {"connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT},
        {"stall-timeout", required_argument, NULL, OPT_STALL_TIMEOUT},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"checksum", required_argument, NULL, OPT_CHECKSUM},
        {"continue", no_argument, NULL, 'c'},
        {"src-site", required_argument, NULL, OPT_SRC_SITE},
        {"dst-site", required_argument, NULL, OPT_DST_SITE},
        {"local-engine", required_argument, NULL, OPT_LOCAL_ENGINE},
        {"progress", no_argument, NULL, OPT_PROGRESS},
        {"no-progress", no_argument, NULL, OPT_NO_PROGRESS},
        {"output", required_argument, NULL, 'o'},
        {"payload", no_argument, NULL, OPT_PAYLOAD},
        {"publish", no_argument, NULL, 'p'},
        {"no-publish", no_argument, NULL, OPT_NO_PUBLISH},
        {"help", no_argument, NULL, 'h'},
        PANO_CLI_LONG_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    cmd_options co = {.progress = -1};
    int opt, bad = 0;
    int sub_argc = argc - 1;
    char **sub_argv = argv + 1;
    while ((opt = getopt_long(sub_argc, sub_argv, "l:j:r:co:ph", options, NULL)) != -1) {
        int handled = pano_cli_option(cfg, opt, optarg);
        if (handled < 0)
            bad = 1;
        if (handled)
            continue;
        int rc = 0;
        switch (opt) {
        case 'l': co.list = optarg; break;
        case 'j': rc = pano_cli_set(cfg, "pano.transfer.jobs", optarg); break;
        case 'r': rc = pano_cli_set(cfg, "pano.transfer.retries", optarg); break;
        case OPT_RETRY_DELAY: rc = pano_cli_set(cfg, "pano.transfer.retry_delay", optarg); break;
        case OPT_CONNECT_TIMEOUT:
            rc = pano_cli_set(cfg, "pano.transfer.connect_timeout", optarg);
            break;
        case OPT_STALL_TIMEOUT:
            rc = pano_cli_set(cfg, "pano.transfer.stall_timeout", optarg);
            break;
        case OPT_TIMEOUT: rc = pano_cli_set(cfg, "pano.transfer.timeout", optarg); break;
        case OPT_CHECKSUM: rc = pano_cli_set(cfg, "pano.transfer.checksum", optarg); break;
        case 'c': rc = pano_cli_set(cfg, "pano.transfer.continue", "true"); break;
        case OPT_SRC_SITE: rc = pano_cli_set(cfg, "pano.transfer.src_site", optarg); break;
        case OPT_DST_SITE: rc = pano_cli_set(cfg, "pano.transfer.dst_site", optarg); break;
        case OPT_LOCAL_ENGINE:
            rc = pano_cli_set(cfg, "pano.transfer.local_engine", optarg);
            break;
        case OPT_PROGRESS: co.progress = 1; break;
        case OPT_NO_PROGRESS: co.progress = 0; break;
        case 'o': rc = pano_cli_set(cfg, "pano.output", optarg); break;
        case OPT_PAYLOAD: co.payload = true; break;
        case 'p': rc = pano_cli_set(cfg, "pano.transfer.publish", "true"); break;
        case OPT_NO_PUBLISH: rc = pano_cli_set(cfg, "pano.transfer.publish", "false"); break;
        case 'h':
            usage(stdout);
            pano_config_free(cfg);
            return 0;
        default:
            bad = 1;
            break;
        }
        if (rc < 0)
            bad = 1;
    }
    const char *publish = pano_config_str(cfg, "pano.transfer.publish");
    if (strcasecmp(publish, "auto") != 0 && pano_config_parse_bool(publish) < 0) {
        pano_error("pano.transfer.publish: '%s' is not auto, true or false", publish);
        bad = 1;
    }
    if (bad) {
        usage(stderr);
        pano_config_free(cfg);
        return 2;
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        pano_error("libcurl could not be initialized");
        pano_config_free(cfg);
        return 2;
    }
    int rc = is_copy ? do_copy(cfg, &co, sub_argc - optind, sub_argv + optind)
                     : do_globus(cfg, &co, sub_argc - optind, sub_argv + optind);
    curl_global_cleanup();
    pano_config_free(cfg);
    return rc;
}
