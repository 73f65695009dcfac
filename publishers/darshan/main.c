/*
 * pano-darshan - publish Darshan I/O logs as darshan.perf events.
 *
 *   pano-darshan [options] LOG...
 *   pano-darshan [options] --text FILE|-
 *   pano-darshan [options] --watch DIR
 *
 * Logs are read by pano-darshan's own reader (darshan_log.h); a log of a
 * format newer than it knows goes to the site's darshan-parser, whose text
 * is converted (darshan_text.h). One event per log.
 */
#include "cli.h"
#include "darshan_event.h"
#include "darshan_log.h"
#include "darshan_summarize.h"
#include "darshan_summary.h"
#include "darshan_text.h"
#include "darshan_watch.h"
#include "event.h"
#include "log.h"
#include "mem.h"
#include "sink.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* darshan-parser output and --text input larger than this are refused. */
#define TEXT_MAX ((size_t)256 << 20)

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: pano-darshan [options] LOG...\n"
            "       pano-darshan [options] --text FILE|-\n"
            "       pano-darshan [options] --watch DIR\n"
            "Read Darshan I/O logs and publish one darshan.perf event per log: the job\n"
            "header, and for each module darshan-parser's --total counters, --perf values\n"
            "and --file table (see docs/darshan.md).\n"
            "\n"
            "Output (default: publish to pano.amqp.url, else JSON lines to pano.output, else the\n"
            "embedded store, pano.store):\n"
            "      --json             print each event as one JSON line on stdout\n"
            "      --payload          print each event in a MONITORING_PAYLOAD block, for\n"
            "                         pano-monitor and pegasus-monitord to pick up\n"
            "  -o, --output FILE      append events to FILE as JSON lines (- for stdout); with\n"
            "                         a broker URL they are published too\n"
            "\n"
            "Input:\n"
            "      --parser PATH      convert the output of this darshan-parser instead of\n"
            "                         reading logs natively (pano.darshan.parser; without it,\n"
            "                         darshan-parser from PATH is used only for logs whose format\n"
            "                         is newer than 3.41)\n"
            "      --text FILE|-      convert darshan-parser --total --perf --file text read\n"
            "                         from FILE or stdin (both the pre-3.4 and 3.4+ layouts)\n"
            "      --watch DIR        publish each new *.darshan log that appears under DIR\n"
            "                         (recursively), once, also across restarts; runs until\n"
            "                         SIGTERM or SIGINT\n"
            "      --state FILE       --watch: the file recording handled logs (pano.darshan.state)\n"
            "\n"
            "Incomplete (partial) modules are always read and flagged \"partial\": true.\n"
            "Workflow context comes from PEGASUS_WF_UUID, PEGASUS_DAG_JOB_ID, CONDOR_JOBID,\n"
            "... or their PANO_* equivalents. Exit status: 0 when every log was published,\n"
            "1 when any failed (each failure is reported), 2 on a usage error.\n"
            "\n" PANO_CLI_COMMON_HELP);
}

typedef enum { OUT_PUBLISH, OUT_JSON, OUT_PAYLOAD } output_mode;

typedef struct {
    pano_config *cfg;
    pano_source *source;
    pano_sink *sink;
    output_mode mode;
    const char *parser; /* explicit darshan-parser, or NULL */
} app;

/* ---- darshan-parser ---------------------------------------------------------- */

/* darshan-parser on PATH, or NULL. */
static char *find_on_path(const char *name)
{
    const char *path = getenv("PATH");
    if (!path)
        return NULL;
    while (*path) {
        size_t n = strcspn(path, ":");
        char *candidate = pano_asprintf("%.*s/%s", (int)n, n ? path : ".", name);
        if (access(candidate, X_OK) == 0)
            return candidate;
        free(candidate);
        path += n;
        if (*path == ':')
            path++;
    }
    return NULL;
}

/* Read fd to the end, at most TEXT_MAX bytes. */
static char *read_all(int fd, size_t *len, char *err, size_t errlen)
{
    size_t cap = 65536, n = 0;
    char *buf = pano_malloc(cap);
    for (;;) {
        if (n == cap) {
            if (cap >= TEXT_MAX) {
                snprintf(err, errlen, "more than %zu bytes of text", TEXT_MAX);
                free(buf);
                return NULL;
            }
            cap *= 2;
            buf = pano_realloc(buf, cap);
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            snprintf(err, errlen, "read error: %s", strerror(errno));
            free(buf);
            return NULL;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    *len = n;
    return buf;
}

/* Run parser with args + log, return its stdout and exit status. */
static char *run_parser_once(const char *parser, const char *const *args, const char *log,
                             size_t *len, int *status, char *err, size_t errlen)
{
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) < 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        return NULL;
    }
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        close(pipefd[0]);
        close(pipefd[1]);
        return NULL;
    }
    if (pid == 0) {
        char *argv[8];
        int n = 0;
        argv[n++] = (char *)parser;
        for (; *args; args++)
            argv[n++] = (char *)*args;
        argv[n++] = (char *)log;
        argv[n] = NULL;
        if (dup2(pipefd[1], STDOUT_FILENO) < 0)
            _exit(127);
        execv(parser, argv);
        _exit(127);
    }
    close(pipefd[1]);
    char *text = read_all(pipefd[0], len, err, errlen);
    close(pipefd[0]);
    int wstatus;
    while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR)
        ;
    *status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
    return text;
}

static int summarize_with_parser(const char *parser, const char *log, pano_darshan_summary *s,
                                 char *err, size_t errlen)
{
    /* --show-incomplete keeps incomplete modules (they are flagged); a
     * darshan-parser too old to know it exits 1 (usage) and is run without. */
    static const char *const with_incomplete[] = {"--show-incomplete", "--total", "--perf",
                                                  "--file", NULL};
    static const char *const plain[] = {"--total", "--perf", "--file", NULL};
    size_t len;
    int status;
    char *text = run_parser_once(parser, with_incomplete, log, &len, &status, err, errlen);
    if (text && status == 1) {
        free(text);
        text = run_parser_once(parser, plain, log, &len, &status, err, errlen);
    }
    if (!text)
        return -1;
    int rc = -1;
    if (status == 127)
        snprintf(err, errlen, "cannot run %s", parser);
    else if (status != 0)
        snprintf(err, errlen, "%s exited with status %d", parser, status);
    else
        rc = pano_darshan_text_parse(text, len, s, err, errlen);
    free(text);
    return rc;
}

/* ---- one log ------------------------------------------------------------------ */

static int summarize_log_file(const app *a, const char *path, pano_darshan_summary *s, char *err,
                              size_t errlen)
{
    if (a->parser)
        return summarize_with_parser(a->parser, path, s, err, errlen);
    pano_darshan_file file;
    if (pano_darshan_file_load(path, &file, err, errlen) < 0)
        return -1;
    int rc = pano_darshan_summarize_log(file.data, file.size, s, err, errlen);
    pano_darshan_file_free(&file);
    if (rc != PANO_DARSHAN_ERR_VERSION)
        return rc;
    char *parser = find_on_path("darshan-parser");
    if (!parser)
        return -1; /* err says to use --parser */
    pano_info("%s: %s; converting the output of %s", path, err, parser);
    rc = summarize_with_parser(parser, path, s, err, errlen);
    free(parser);
    return rc;
}

static void log_notes(const char *what, const pano_darshan_summary *s)
{
    for (size_t i = 0; i < s->n_modules; i++) {
        const pano_darshan_module_summary *m = &s->modules[i];
        if (m->note)
            pano_info("%s: %s module: %s", what, m->name, m->note);
        if (m->partial)
            pano_warn("%s: the %s module holds incomplete data (Darshan ran out of memory "
                      "for records); it is flagged partial",
                      what, m->name);
    }
}

/* Build and send the event. Returns 0, or -1 when it could not be sent. */
static int emit(app *a, const pano_darshan_summary *s, const char *log_file)
{
    pano_json *envelope = pano_event_new(a->source, "darshan.perf");
    pano_buf json = {0};
    pano_darshan_event_write(&json, envelope, s, log_file);
    char err[512];
    int rc = pano_sink_send_raw(a->sink, "darshan.perf", pano_json_get_str(envelope, "event_id"),
                                json.data, json.len, err, sizeof err);
    if (rc < 0)
        pano_error("%s: event not delivered: %s", log_file ? log_file : "stdin", err);
    pano_buf_free(&json);
    pano_json_free(envelope);
    return rc;
}

typedef enum { PROCESS_OK, PROCESS_BAD_LOG, PROCESS_NOT_SENT } process_result;

static process_result process_log(app *a, const char *path)
{
    pano_darshan_summary s;
    char err[512];
    if (summarize_log_file(a, path, &s, err, sizeof err) < 0) {
        pano_error("%s: %s", path, err);
        return PROCESS_BAD_LOG;
    }
    log_notes(path, &s);
    int rc = emit(a, &s, path);
    pano_darshan_summary_free(&s);
    return rc == 0 ? PROCESS_OK : PROCESS_NOT_SENT;
}

static int process_text(app *a, const char *path)
{
    bool is_stdin = strcmp(path, "-") == 0;
    int fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        pano_error("%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    char err[512];
    size_t len;
    char *text = read_all(fd, &len, err, sizeof err);
    if (!is_stdin)
        close(fd);
    pano_darshan_summary s;
    if (!text || pano_darshan_text_parse(text, len, &s, err, sizeof err) < 0) {
        pano_error("%s: %s", is_stdin ? "stdin" : path, err);
        free(text);
        return -1;
    }
    free(text);
    log_notes(is_stdin ? "stdin" : path, &s);
    int rc = emit(a, &s, is_stdin ? NULL : path);
    pano_darshan_summary_free(&s);
    return rc;
}

/* ---- --watch ------------------------------------------------------------------ */

static pano_darshan_watch_result watch_handler(const char *path, void *ctx)
{
    /* A damaged log is reported once and not retried until it changes; one
     * that could not be sent is retried at the next rescan. */
    return process_log(ctx, path) == PROCESS_NOT_SENT ? PANO_DARSHAN_WATCH_RETRY
                                                      : PANO_DARSHAN_WATCH_DONE;
}

static char *default_state_path(void)
{
    const char *state = getenv("XDG_STATE_HOME");
    char *dir;
    if (state && *state)
        dir = pano_asprintf("%s/pano", state);
    else {
        const char *home = getenv("HOME");
        dir = pano_asprintf("%s/.local/state/pano", home && *home ? home : ".");
    }
    /* mkdir -p */
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
            pano_debug("mkdir %s: %s", dir, strerror(errno));
        *p = '/';
    }
    if (mkdir(dir, 0755) < 0 && errno != EEXIST)
        pano_debug("mkdir %s: %s", dir, strerror(errno));
    char *path = pano_asprintf("%s/darshan-watch.state", dir);
    free(dir);
    return path;
}

static int run_watch(app *a, const char *dir)
{
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    if (sigprocmask(SIG_BLOCK, &stop, NULL) < 0) {
        pano_error("sigprocmask: %s", strerror(errno));
        return 1;
    }
    int sigfd = signalfd(-1, &stop, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sigfd < 0) {
        pano_error("signalfd: %s", strerror(errno));
        return 1;
    }
    const char *configured = pano_config_str(a->cfg, "pano.darshan.state");
    char *state = configured ? pano_strdup(configured) : default_state_path();
    pano_darshan_watch_options opt = {
        .dir = dir,
        .state_path = state,
        .rescan_interval = pano_config_double(a->cfg, "pano.darshan.rescan_interval"),
        .publish_existing = pano_config_bool(a->cfg, "pano.darshan.publish_existing"),
        .stop_fd = sigfd,
        .handler = watch_handler,
        .ctx = a,
    };
    pano_debug("state file: %s", state);
    char err[512];
    int rc = pano_darshan_watch_run(&opt, err, sizeof err);
    if (rc < 0)
        pano_error("%s", err);
    else
        pano_info("stopped");
    free(state);
    close(sigfd);
    return rc < 0 ? 1 : 0;
}

/* ---- main --------------------------------------------------------------------- */

enum { OPT_JSON = 0x100, OPT_PAYLOAD, OPT_PARSER, OPT_TEXT, OPT_WATCH, OPT_STATE };

int main(int argc, char **argv)
{
    pano_config *cfg = pano_cli_init("pano-darshan", argc, argv, false);
    if (!cfg)
        return 2;

    static const struct option options[] = {
        {"json", no_argument, NULL, OPT_JSON},
        {"payload", no_argument, NULL, OPT_PAYLOAD},
        {"output", required_argument, NULL, 'o'},
        {"parser", required_argument, NULL, OPT_PARSER},
        {"text", required_argument, NULL, OPT_TEXT},
        {"watch", required_argument, NULL, OPT_WATCH},
        {"state", required_argument, NULL, OPT_STATE},
        {"help", no_argument, NULL, 'h'},
        PANO_CLI_LONG_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    app a = {.cfg = cfg, .mode = OUT_PUBLISH};
    const char *text = NULL, *watch = NULL;
    int opt, usage_error = 0;
    while ((opt = getopt_long(argc, argv, "o:h", options, NULL)) != -1) {
        int handled = pano_cli_option(cfg, opt, optarg);
        if (handled) {
            usage_error |= handled < 0;
            continue;
        }
        switch (opt) {
        case OPT_JSON:
            a.mode = OUT_JSON;
            break;
        case OPT_PAYLOAD:
            a.mode = OUT_PAYLOAD;
            break;
        case 'o':
            usage_error |= pano_cli_set(cfg, "pano.output", optarg) < 0;
            break;
        case OPT_PARSER:
            usage_error |= pano_cli_set(cfg, "pano.darshan.parser", optarg) < 0;
            break;
        case OPT_TEXT:
            text = optarg;
            break;
        case OPT_WATCH:
            watch = optarg;
            break;
        case OPT_STATE:
            usage_error |= pano_cli_set(cfg, "pano.darshan.state", optarg) < 0;
            break;
        case 'h':
            usage(stdout);
            pano_config_free(cfg);
            return 0;
        default:
            usage_error = 1;
        }
    }
    int inputs = (optind < argc) + (text != NULL) + (watch != NULL);
    if (!usage_error && inputs != 1) {
        pano_error(inputs ? "give logs, --text or --watch, not several of them"
                          : "no log given");
        usage_error = 1;
    }
    if (usage_error) {
        usage(stderr);
        pano_config_free(cfg);
        return 2;
    }
    a.parser = pano_config_str(cfg, "pano.darshan.parser");

    a.source = pano_source_new(cfg);
    char err[512];
    if (a.mode == OUT_PUBLISH)
        a.sink = pano_sink_open(cfg, err, sizeof err);
    else
        a.sink = pano_sink_open_file(
            cfg, "-", a.mode == OUT_JSON ? PANO_SINK_JSON_LINES : PANO_SINK_PAYLOAD, err,
            sizeof err);
    if (!a.sink) {
        pano_error("%s", err);
        pano_source_free(a.source);
        pano_config_free(cfg);
        return 1;
    }

    int status = 0;
    if (watch)
        status = run_watch(&a, watch);
    else if (text)
        status = process_text(&a, text) < 0;
    else
        for (int i = optind; i < argc; i++)
            if (process_log(&a, argv[i]) != PROCESS_OK)
                status = 1;

    pano_sink_close(a.sink);
    pano_source_free(a.source);
    pano_config_free(cfg);
    return status;
}
