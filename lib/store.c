#include "store.h"

#include "arena.h"
#include "buf.h"
#include "clock.h"
#include "log.h"
#include "mem.h"
#include "normalize.h"
#include "partition.h"
#include "pipe.h"
#include "run_delta.h"
#include "schema.h"
#include "store_checkpoint.h"
#include "store_figures.h"
#include "store_runs.h"
#include "store_summaries.h"
#include "zstd_file.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#define APPLICATION_ID 0x70616e6f /* "pano" */
#define PURGE_EVERY 3600.0
/* How long a reader waits for a writer making a file to commit its tables. */
#define MADE_WAIT 5.0
#define EXPORT_ZSTD_LEVEL 3 /* zstd's default: 60 bytes a sample, at 300 MB/s */
/* Files read through a memory map (SQLite caps it at its build's maximum):
 * no copy of each page read, and the pages shared by every process of the
 * host instead of each keeping its own cache. */
#define MMAP_BYTES (1LL << 40)
#define PAGE_BYTES 16384
#define WAL_CHECKPOINT_PAGES ((64 << 20) / PAGE_BYTES)
/* A batch's page cache: room for most pages a transaction of a batch
 * changes (about 20 MB for 10,000 events), which SQLite's default of 2 MB
 * would write to the WAL before the commit and read back (a page written
 * so is written again in place). Set while a batch is open, SQLite's
 * default again after. */
#define BATCH_CACHE_KIB 65536
#define DEFAULT_CACHE_KIB 2000

#define STORE_QUEUE_SLOTS 256 /* events checked ahead of the writer thread */
#define STORE_QUEUE_LINGER 0.001 /* the most an event waits for a writer that caught up */
/* A bigger event is written on the caller's thread once the queue is
 * written: the slots hold at most 256 of 64 KiB, and keep no more. */
#define STORE_QUEUE_MAX_EVENT (64 * 1024)

#define FIRST_FIELD 6 /* the insert's parameter of the first field; doc's follows the last */

/* A field's name in the table of the fields by name (a hash table), with
 * its column, and whether it is an object some fields are members of. */
typedef struct {
    const char *name; /* len bytes of it */
    size_t len;
    int column;   /* 0: none (an object of fields only) */
    bool members; /* "delta" of "delta.utime" */
    int figures;  /* what its value is to the figures (figures_role) */
} field_slot;

/* What a field's value is to the store's figures (store_figures.h): a
 * label, or a summed field (FIGURES_SUMMED + its index in
 * pano_store_summed_fields). */
enum { FIGURES_NONE, FIGURES_WF_LABEL, FIGURES_DAX_LABEL, FIGURES_DELTA, FIGURES_SUMMED };
#define FIELD_SLOTS 256 /* a power of two, over twice the fields and their objects */

/* A batch (pano_store_begin .. pano_store_commit), as its events are
 * written: on the writer thread while events are queued. */
typedef struct {
    bool open;
    bool broken;        /* a transaction could not begin: the rest is lost */
    size_t uncommitted; /* events written in the open transaction */
    size_t lost;        /* events of the batch not stored */
    char why[512];      /* the first reason */
} store_batch;

struct pano_store {
    sqlite3 *db;
    field_slot fields[FIELD_SLOTS]; /* pano_store_fields by name */
    char *file;
    pano_schema_set *schemas;
    pano_normalizer *nz;
    pano_normalize_options nopts;
    pano_stream_policy policies[PANO_N_STREAMS];
    sqlite3_stmt *insert, *dead, *run_latest;
    store_tally *tally; /* the figures of the transaction's events */
    store_summaries *sums;
    store_runs *runs;            /* the runs' states this writer knows */
    pano_arena scratch;          /* a run event's trees, until the next */
    sqlite3_stmt *data_version;  /* whether another connection wrote since */
    int64_t seen_version;
    bool in_transaction;
    double began; /* when the open transaction began (monotonic) */
    store_batch batch;
    pano_pipe *pipe; /* the queue to the writer thread, once used */
    store_checkpointer *checkpointer; /* a WAL file's copies into the file */
};

const char *const pano_store_fields[] = {
    /* what identifies a job, its run and its workflow */
    "dag_job_id", "hostname", "pid", "job_id", "job_inst_id", "js_id", "inv_id", "site",
    "xformation", "exe", "wf_label", "dax_label", "xwf_id", "root_xwf_id", "type_desc",
    "max_retries",
    /* a run's end and its summary figures */
    "exitcode", "signal", "duration", "remote_cpu_time", "maxrss", "rss_peak", "samples",
    "final.rchar", "final.wchar", "start_time", "dur", "interval",
    /* a sample's gauges, counters and their change since the last sample */
    "utime", "stime", "iowait", "vm", "rss", "procs", "threads", "bread", "bwrite", "rchar",
    "wchar", "syscr", "syscw", "delta", "delta.utime", "delta.stime", "delta.iowait",
    "delta.vm", "delta.rss", "delta.procs", "delta.threads", "delta.bread", "delta.bwrite",
    "delta.rchar", "delta.wchar", "delta.syscr", "delta.syscw", NULL};

bool pano_store_is_keyword(const char *field)
{
    static const char *const keywords[] = {
        "dag_job_id", "hostname", "job_id", "site", "xformation", "exe", "wf_label", "dax_label",
        "xwf_id", "root_xwf_id", "type_desc", NULL};
    for (size_t i = 0; keywords[i]; i++)
        if (strcmp(field, keywords[i]) == 0)
            return true;
    return false;
}

const char *const pano_store_summed_fields[] = {
    "delta.utime", "delta.stime", "delta.iowait", "delta.vm",    "delta.rss",
    "delta.procs", "delta.threads", "delta.bread", "delta.bwrite", "delta.rchar",
    "delta.wchar", "delta.syscr", "delta.syscw", NULL};
#define STORE_FIELDS (sizeof pano_store_fields / sizeof *pano_store_fields - 1)
#define SUMMED_FIELDS (sizeof pano_store_summed_fields / sizeof *pano_store_summed_fields - 1)
_Static_assert(SUMMED_FIELDS == STORE_FIGURES_SUMMED, "store_figures.h counts the summed fields");

/* The columns of the index of a workflow's events (events_by_workflow):
 * these, then pano_store_summed_fields. */
static const char *const workflow_index[] = {
    "wf_uuid", "stream", "event", "ts", "wf_label", "dax_label", "job_id", "job_inst_id",
    "delta", NULL};
#define ROOT_INDEX_COLUMNS 3
#define WORKFLOW_INDEX_COLUMNS \
    (sizeof workflow_index / sizeof *workflow_index - 1 + SUMMED_FIELDS)

/* The tables of a file; a field's column has the affinity of its mapping
 * (pano_store_is_keyword). A file made when every field's column was
 * NUMERIC ("ANY") keeps its columns: there a numeric-looking name is a
 * number in its column (its doc holds it as it came). */
static char *create_sql(void)
{
    pano_buf b = {0};
    pano_buf_append_str(&b, "CREATE TABLE IF NOT EXISTS events ("
                            " event_id TEXT NOT NULL UNIQUE,"
                            " wf_uuid TEXT NOT NULL,"
                            " stream TEXT NOT NULL,"
                            " event TEXT NOT NULL,"
                            " ts REAL NOT NULL,");
    for (size_t i = 0; pano_store_fields[i]; i++)
        pano_buf_appendf(&b, " \"%s\" %s,", pano_store_fields[i],
                         pano_store_is_keyword(pano_store_fields[i]) ? "TEXT" : "NUMERIC");
    pano_buf_append_str(&b, " doc TEXT NOT NULL);");
    /* a workflow's events by kind and time; its label, a job instance's
     * ids, which samples carry their change and the changes themselves: a
     * series, and the count of the events a job instance's summary is made
     * of, read the index alone, never the rows */
    pano_buf_append_str(&b, "CREATE INDEX IF NOT EXISTS events_by_workflow ON events (");
    for (size_t i = 0; workflow_index[i]; i++)
        pano_buf_appendf(&b, "%s\"%s\"", i ? ", " : "", workflow_index[i]);
    for (size_t i = 0; pano_store_summed_fields[i]; i++)
        pano_buf_appendf(&b, ", \"%s\"", pano_store_summed_fields[i]);
    pano_buf_append_str(&b, ");"
    /* a job's events, one job or a few (OR) at a time */
    "CREATE INDEX IF NOT EXISTS events_by_job ON events (\"dag_job_id\", wf_uuid);"
    /* the stampede events of a sub-workflow's root, by stream and name
     * (ROOT_INDEX_COLUMNS) */
    "CREATE INDEX IF NOT EXISTS events_by_root ON events (\"root_xwf_id\", stream, event)"
    " WHERE \"root_xwf_id\" IS NOT NULL;"
    /* Fixed statistics (sqlite.org, "The Query Optimizer Overview", manual
     * control of query plans), the shape of a big workflow, so that every
     * file gets the same plans without an ANALYZE: a workflow's events are
     * many, a job's few. */
    "ANALYZE sqlite_schema;"
    "INSERT OR REPLACE INTO sqlite_stat1 VALUES"
    " ('events', 'sqlite_autoindex_events_1', '1000000 1'),"
    " ('events', 'events_by_job', '1000000 100 100'),"
    " ('events', 'events_by_root', '10000 1000 500 100'),"
    " ('events', 'events_by_workflow', '1000000 100000 20000 10000");
    for (size_t i = 3; i < WORKFLOW_INDEX_COLUMNS; i++) /* past event: a few rows each */
        pano_buf_append_str(&b, " 2");
    pano_buf_append_str(&b, "');"
    "CREATE TABLE IF NOT EXISTS dead_letters ("
    " received REAL NOT NULL,"
    " reason TEXT NOT NULL,"
    " event TEXT,"
    " event_id TEXT,"
    " wf_uuid TEXT,"
    " body BLOB NOT NULL);"
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value ANY);");
    return b.data;
}

/* The columns of the events table, in order: "event_id, ..., doc". */
static char *event_columns(void)
{
    pano_buf b = {0};
    pano_buf_append_str(&b, "event_id, wf_uuid, stream, event, ts");
    for (size_t i = 0; pano_store_fields[i]; i++)
        pano_buf_appendf(&b, ", \"%s\"", pano_store_fields[i]);
    pano_buf_append_str(&b, ", doc");
    return b.data;
}

/* A field's value, for its column of the insert (made where the event is
 * checked: the writer reads these, not the event's tree). */
typedef struct {
    int column;
    int figures; /* field_slot's */
    store_cell cell;
} field_value;

/* FNV-1a of p[0..n), from h. */
static uint32_t fnv1a(uint32_t h, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 16777619u;
    }
    return h;
}
#define FNV_START 2166136261u

/* The slot of a name given as key, or as key "." member when member is
 * not NULL: where it is, or the empty one where it goes. */
static size_t field_slot_of(const field_slot *table, const char *key, size_t klen,
                            const char *member)
{
    size_t mlen = member ? strlen(member) : 0, len = member ? klen + 1 + mlen : klen;
    uint32_t h = fnv1a(FNV_START, key, klen);
    if (member)
        h = fnv1a(fnv1a(h, ".", 1), member, mlen);
    for (size_t i = h & (FIELD_SLOTS - 1);; i = (i + 1) & (FIELD_SLOTS - 1)) {
        const field_slot *f = &table[i];
        if (!f->name || (f->len == len && memcmp(f->name, key, klen) == 0 &&
                         (!member || (f->name[klen] == '.' &&
                                      memcmp(f->name + klen + 1, member, mlen) == 0))))
            return i;
    }
}

static int figures_role(const char *name)
{
    if (strcmp(name, "wf_label") == 0)
        return FIGURES_WF_LABEL;
    if (strcmp(name, "dax_label") == 0)
        return FIGURES_DAX_LABEL;
    if (strcmp(name, "delta") == 0)
        return FIGURES_DELTA;
    for (int i = 0; pano_store_summed_fields[i]; i++)
        if (strcmp(name, pano_store_summed_fields[i]) == 0)
            return FIGURES_SUMMED + i;
    return FIGURES_NONE;
}

/* The fields by name, and the objects that hold some ("delta" of
 * "delta.utime"), for field_values. */
static void index_fields(pano_store *s)
{
    for (size_t i = 0; i < STORE_FIELDS; i++) {
        const char *name = pano_store_fields[i];
        field_slot *f = &s->fields[field_slot_of(s->fields, name, strlen(name), NULL)];
        *f = (field_slot){name, strlen(name), FIRST_FIELD + (int)i, f->members, figures_role(name)};
        const char *dot = strchr(name, '.');
        if (dot) {
            f = &s->fields[field_slot_of(s->fields, name, (size_t)(dot - name), NULL)];
            if (!f->name)
                *f = (field_slot){name, (size_t)(dot - name), 0, false, FIGURES_NONE};
            f->members = true;
        }
    }
}

/* A field's value in the column of its own, as SQLite's json_extract gives
 * it (so that a search reads the same from the column as from the doc),
 * but an object or an array is 1: only its presence is asked. */
static store_cell cell_of(const pano_json *v)
{
    switch (v->type) {
    case PANO_JSON_BOOL: return (store_cell){.type = SQLITE_INTEGER, .i = v->u.boolean};
    case PANO_JSON_INT: return (store_cell){.type = SQLITE_INTEGER, .i = v->u.integer};
    case PANO_JSON_DOUBLE: return (store_cell){.type = SQLITE_FLOAT, .r = v->u.real.value};
    case PANO_JSON_STRING:
        return (store_cell){.type = SQLITE_TEXT, .text = v->u.string.text,
                            .len = (int)v->u.string.len};
    case PANO_JSON_ARRAY:
    case PANO_JSON_OBJECT: return (store_cell){.type = SQLITE_INTEGER, .i = 1};
    default: return (store_cell){.type = SQLITE_NULL};
    }
}

/* The event's fields that have a column, with their values, in out (room
 * for room): one walk over its members (and those of an object a dotted
 * field names), not a search per field. Their number. */
static size_t field_values(const pano_store *s, const pano_json *doc, field_value *out,
                           size_t room)
{
    size_t n = 0;
    for (size_t i = 0; i < doc->u.items.len && n < room; i++) {
        const char *key = doc->u.items.keys[i];
        const pano_json *v = doc->u.items.values[i];
        size_t klen = strlen(key);
        const field_slot *f = &s->fields[field_slot_of(s->fields, key, klen, NULL)];
        if (!f->name)
            continue;
        if (f->column > 0)
            out[n++] = (field_value){f->column, f->figures, cell_of(v)};
        if (v->type != PANO_JSON_OBJECT || !f->members)
            continue;
        for (size_t j = 0; j < v->u.items.len && n < room; j++) {
            size_t at = field_slot_of(s->fields, key, klen, v->u.items.keys[j]);
            const field_slot *m = &s->fields[at];
            if (m->name && m->column > 0)
                out[n++] = (field_value){m->column, m->figures, cell_of(v->u.items.values[j])};
        }
    }
    return n;
}

int pano_store_path(const pano_config *cfg, char *out, size_t size, char *err, size_t errlen)
{
    const char *set = pano_config_str(cfg, "pano.store");
    const char *xdg = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
    int n;
    if (set && *set)
        n = snprintf(out, size, "%s", set);
    else if (xdg && xdg[0] == '/')
        n = snprintf(out, size, "%s/pano/store", xdg);
    else if (home && *home)
        n = snprintf(out, size, "%s/.local/share/pano/store", home);
    else {
        snprintf(err, errlen, "no store: set pano.store (PANO_STORE, --store) or HOME");
        return -1;
    }
    if (n < 0 || (size_t)n >= size) {
        snprintf(err, errlen, "store path too long");
        return -1;
    }
    return 0;
}

/* A host's file of a store: <host>.pano.sqlite. */
static bool is_store_file(const char *name)
{
    size_t l = strlen(name), sl = strlen(PANO_STORE_SUFFIX);
    return l > sl && strcmp(name + l - sl, PANO_STORE_SUFFIX) == 0;
}

bool pano_store_to_read(const pano_config *cfg, char *out, size_t size)
{
    const char *set = pano_config_str(cfg, "pano.store");
    if (set && *set)
        return snprintf(out, size, "%s", set) < (int)size;
    const char *url = pano_config_str(cfg, "pano.amqp.url");
    char err[128];
    if (pano_config_source_of(cfg, "pano.es.url") != PANO_CFG_DEFAULT || (url && *url) ||
        pano_store_path(cfg, out, size, err, sizeof err) < 0)
        return false;
    DIR *d = opendir(out);
    bool found = false;
    for (struct dirent *e; d && !found && (e = readdir(d));)
        found = is_store_file(e->d_name);
    if (d)
        closedir(d);
    return found;
}

/* mkdir -p, the directories made 0700. */
static int make_dirs(const char *path, char *err, size_t errlen)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
        snprintf(err, errlen, "store path too long");
        return -1;
    }
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        if (mkdir(buf, 0700) < 0 && errno != EEXIST) {
            snprintf(err, errlen, "cannot create store directory %s: %s", buf, strerror(errno));
            return -1;
        }
        if (c == '\0')
            break;
        *p = c;
    }
    struct stat st;
    if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "store %s is not a directory", path);
        return -1;
    }
    return 0;
}

/* File systems on which several hosts may open one file: SQLite's WAL
 * (shared memory) must not be used there. */
static bool network_fs(const char *dir)
{
    struct statfs fs;
    if (statfs(dir, &fs) < 0)
        return true; /* unknown: the mode safe everywhere */
    switch ((unsigned long)fs.f_type) {
    case 0x6969UL:     /* NFS */
    case 0x0BD00BD0UL: /* Lustre */
    case 0x47504653UL: /* GPFS */
    case 0xFF534D42UL: /* CIFS */
    case 0xFE534D42UL: /* SMB2 */
    case 0x517BUL:     /* SMB */
    case 0x65735546UL: /* FUSE (sshfs, ...) */
    case 0x01021997UL: /* 9p */
    case 0x00C36400UL: /* Ceph */
    case 0x19830326UL: /* BeeGFS */
        return true;
    default:
        return false;
    }
}

static int sql_fail(sqlite3 *db, const char *what, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s: %s", what, sqlite3_errmsg(db));
    return -1;
}

static int exec(sqlite3 *db, const char *sql, char *err, size_t errlen)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK)
        return 0;
    snprintf(err, errlen, "%s", msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    return -1;
}

/* COMMIT when rc is 0, else (or when that fails) ROLLBACK, keeping the
 * first message in err: 0 when committed. */
static int finish(sqlite3 *db, int rc, char *err, size_t errlen)
{
    if (rc == 0 && exec(db, "COMMIT", err, errlen) == 0)
        return 0;
    char ignored[128];
    exec(db, "ROLLBACK", ignored, sizeof ignored);
    return -1;
}

static int64_t pragma_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return -1;
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* Refuse a file that is not a pano store or is of a newer format. */
static int check_format(sqlite3 *db, const char *schema, const char *file, char *err,
                        size_t errlen)
{
    char sql[128];
    snprintf(sql, sizeof sql, "PRAGMA %s.application_id", schema);
    int64_t app = pragma_int(db, sql);
    snprintf(sql, sizeof sql, "PRAGMA %s.user_version", schema);
    int64_t version = pragma_int(db, sql);
    if (app < 0 || version < 0) {
        snprintf(err, errlen, "%s: cannot be read: %s", file, sqlite3_errmsg(db));
        return -1;
    }
    if (app != APPLICATION_ID) {
        snprintf(err, errlen, "%s is not a pano store", file);
        return -1;
    }
    if (version > PANO_STORE_FORMAT) {
        snprintf(err, errlen,
                 "%s is a pano store of format %lld, newer than this pano reads (%d): use a "
                 "newer pano",
                 file, (long long)version, PANO_STORE_FORMAT);
        return -1;
    }
    if (version < PANO_STORE_FORMAT) {
        snprintf(err, errlen,
                 "%s is a pano store of format %lld, from a development version of pano "
                 "that this one (format %d) does not read",
                 file, (long long)version, PANO_STORE_FORMAT);
        return -1;
    }
    return 0;
}

/* Whether a schema (an attached file, or temp) has a table or view of that
 * name (a file made before it had none). */
static bool has_table(sqlite3 *db, const char *schema, const char *table)
{
    char *sql = sqlite3_mprintf("SELECT 1 FROM %s.sqlite_master WHERE type IN ('table', 'view')"
                                " AND name = %Q",
                                schema, table);
    sqlite3_stmt *st;
    bool found = false;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        found = sqlite3_step(st) == SQLITE_ROW;
        sqlite3_finalize(st);
    }
    sqlite3_free(sql);
    return found;
}

/* A schema's figures and seconds, counted from its events when it has
 * not both (store_figures_make), within the caller's transaction. */
static int keep_figures(sqlite3 *db, const char *schema, char *err, size_t errlen)
{
    if (has_table(db, schema, "figures") && has_table(db, schema, "seconds"))
        return 0;
    return store_figures_make(db, schema, err, errlen);
}

bool pano_store_reads_figures(sqlite3 *reader)
{
    return has_table(reader, "temp", "figures");
}

/* Drop index name when it has another number of columns than this pano
 * makes it with (the caller makes it again). */
static int drop_older_index(sqlite3 *db, const char *file, const char *name, size_t columns,
                            char *err, size_t errlen)
{
    char *sql = sqlite3_mprintf("SELECT count(*) FROM pragma_index_info(%Q)", name);
    int64_t has = pragma_int(db, sql);
    sqlite3_free(sql);
    if (has <= 0 || has == (int64_t)columns)
        return 0;
    pano_info("store %s: making its index %s again", file, name);
    sql = sqlite3_mprintf("DROP INDEX %s", name);
    int rc = exec(db, sql, err, errlen);
    sqlite3_free(sql);
    return rc;
}

static int create_tables(sqlite3 *db, const char *file, char *err, size_t errlen)
{
    if (exec(db, "BEGIN IMMEDIATE", err, errlen) < 0)
        return -1;
    int64_t app = pragma_int(db, "PRAGMA main.application_id");
    int64_t tables = pragma_int(db, "SELECT count(*) FROM sqlite_master");
    char sql[160];
    int rc = 0;
    if (app == 0 && tables == 0) {
        snprintf(sql, sizeof sql, "PRAGMA application_id = %d; PRAGMA user_version = %d;",
                 APPLICATION_ID, PANO_STORE_FORMAT);
        rc = exec(db, sql, err, errlen);
    } else
        rc = check_format(db, "main", file, err, errlen);
    /* indexes of fewer columns (a file written before they held the
     * samples' changes, or the root's streams and events) made again */
    if (rc == 0)
        rc = drop_older_index(db, file, "events_by_workflow", WORKFLOW_INDEX_COLUMNS, err, errlen);
    if (rc == 0)
        rc = drop_older_index(db, file, "events_by_root", ROOT_INDEX_COLUMNS, err, errlen);
    if (rc == 0) {
        char *sql_create = create_sql();
        rc = exec(db, sql_create, err, errlen);
        free(sql_create);
    }
    if (rc == 0)
        rc = store_summaries_make(db, file, err, errlen);
    if (rc == 0)
        rc = keep_figures(db, "main", err, errlen);
    return finish(db, rc, err, errlen);
}

/* Delete the events past their stream's retention, at most once an hour. */
static int purge(pano_store *s, char *err, size_t errlen)
{
    bool any = false;
    for (int i = 0; i < PANO_N_STREAMS; i++)
        any |= s->policies[i].retention > 0;
    if (!any)
        return 0;
    double now = pano_now();
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT value FROM meta WHERE key = 'purged'", -1, &st, NULL) !=
        SQLITE_OK)
        return sql_fail(s->db, "reading the store's metadata", err, errlen);
    double last = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_double(st, 0) : 0;
    sqlite3_finalize(st);
    st = NULL;
    sqlite3_stmt *sums = NULL;
    if (now - last < PURGE_EVERY)
        return 0;
    if (exec(s->db, "BEGIN IMMEDIATE", err, errlen) < 0)
        return -1;
    int rc = 0;
    /* and the summaries of runs wholly before it (a run partly purged
     * keeps its summary, which then counts more events than the file
     * holds: readers read that workflow's events) */
    if (sqlite3_prepare_v2(s->db,
                           "DELETE FROM events WHERE stream = ?1 AND ts < ?2",
                           -1, &st, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db, "DELETE FROM summaries WHERE stream = ?1 AND last < ?2", -1,
                           &sums, NULL) != SQLITE_OK)
        rc = sql_fail(s->db, "purging the store", err, errlen);
    for (int i = 0; rc == 0 && i < PANO_N_STREAMS; i++) {
        const pano_stream_policy *p = &s->policies[i];
        if (p->retention <= 0)
            continue;
        /* The periods that ended more than the retention ago. */
        double cutoff = pano_period_start(p->period, now - p->retention);
        sqlite3_bind_text(st, 1, pano_streams[i], -1, SQLITE_STATIC);
        sqlite3_bind_double(st, 2, cutoff);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = sql_fail(s->db, "purging the store", err, errlen);
        else if (sqlite3_changes(s->db) > 0) {
            pano_info("store %s: %d event(s) of stream %s past their retention deleted", s->file,
                      sqlite3_changes(s->db), pano_streams[i]);
            rc = store_figures_recount(s->db, pano_streams[i], err, errlen);
        }
        sqlite3_reset(st);
        sqlite3_bind_text(sums, 1, pano_streams[i], -1, SQLITE_STATIC);
        sqlite3_bind_double(sums, 2, cutoff);
        if (rc == 0 && sqlite3_step(sums) != SQLITE_DONE)
            rc = sql_fail(s->db, "purging the store's summaries", err, errlen);
        sqlite3_reset(sums);
    }
    sqlite3_finalize(st);
    sqlite3_finalize(sums);
    if (rc == 0) {
        char sql[96];
        snprintf(sql, sizeof sql, "INSERT OR REPLACE INTO meta VALUES ('purged', %.3f)", now);
        rc = exec(s->db, sql, err, errlen);
    }
    return finish(s->db, rc, err, errlen);
}

/* A writer's file in its journal mode (mode's pragmas), its tables made or
 * brought up to date, and purged. 0, or -1 with a message in err. */
static int prepare_file(pano_store *s, const char *mode, char *err, size_t errlen)
{
    if (exec(s->db, mode, err, errlen) < 0 || create_tables(s->db, s->file, err, errlen) < 0 ||
        purge(s, err, errlen) < 0)
        return -1;
    return 0;
}

/* SQLite set up once a process, before its first connection: without
 * memory statistics, which take a global mutex at every allocation and
 * which pano never reads. */
static void sqlite_setup_once(void)
{
    int rc = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    if (rc != SQLITE_OK) /* SQLite was started before: the statistics stay */
        pano_debug("SQLite's memory statistics stay on: %s", sqlite3_errstr(rc));
}

static void sqlite_setup(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, sqlite_setup_once);
}

pano_store *pano_store_open_writer(const pano_config *cfg, const char *dir, char *err,
                                   size_t errlen)
{
    if (make_dirs(dir, err, errlen) < 0)
        return NULL;
    char host[256] = "";
    const char *configured = pano_config_str(cfg, "pano.hostname");
    if (configured && *configured)
        snprintf(host, sizeof host, "%s", configured);
    else if (gethostname(host, sizeof host - 1) < 0 || !host[0])
        snprintf(host, sizeof host, "localhost");
    host[64] = '\0';
    for (char *p = host; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '-' || *p == '_' || (*p == '.' && p != host)))
            *p = '_';

    pano_store *s = pano_calloc(1, sizeof *s);
    s->file = pano_asprintf("%s/%s%s", dir, host, PANO_STORE_SUFFIX);
    if (pano_stream_policies(cfg, s->policies, err, errlen) < 0)
        goto fail;
    if (!(s->schemas = pano_schema_set_configured(cfg, err, errlen)))
        goto fail;
    s->nopts = (pano_normalize_options){
        .schemas = s->schemas,
        .max_size = pano_config_size(cfg, "pano.bridge.max_message_size"),
    };
    s->nz = pano_normalizer_new(&s->nopts);

    sqlite_setup();
    mode_t old = umask(077);
    /* one thread at a time uses the connection (the writer thread while
     * events are queued, else the caller's): no mutex on each call */
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    int rc = sqlite3_open_v2(s->file, &s->db, flags, NULL);
    umask(old);
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "cannot open store file %s: %s", s->file,
                 s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
        goto fail;
    }
    sqlite3_busy_timeout(s->db, (int)(pano_config_double(cfg, "pano.store.busy_timeout") * 1000));
    bool network = network_fs(dir);
    char mode[224];
    /* Pages of 16 KiB in a new file (a quarter of the pages and their
     * splits of SQLite's 4 KiB ones, for rows of about 1 KiB); a map only
     * where no other host can shorten the file under it. */
    snprintf(mode, sizeof mode,
             "PRAGMA page_size = %d; PRAGMA journal_mode = %s; PRAGMA synchronous = %s;"
             " PRAGMA mmap_size = %lld;",
             PAGE_BYTES, network ? "DELETE" : "WAL", network ? "FULL" : "NORMAL",
             network ? 0 : MMAP_BYTES);
    char why[256];
    /* Writers opening a new file at once: the one that loses the race to
     * make it a WAL file (two readers of it both asking to write) is told at
     * once that it is locked, SQLite's busy handler not called; it tries
     * again, up to the busy timeout. */
    double give_up = pano_monotonic() + pano_config_double(cfg, "pano.store.busy_timeout");
    int opened;
    while ((opened = prepare_file(s, mode, why, sizeof why)) < 0 &&
           sqlite3_errcode(s->db) == SQLITE_BUSY && pano_monotonic() < give_up)
        usleep(20000);
    if (opened < 0) {
        snprintf(err, errlen, "store file %s: %s", s->file, why);
        goto fail;
    }
    /* the WAL copied into the file every 64 MB rather than SQLite's 4 (a
     * page that every transaction changes, of an index, copied once), on a
     * thread of its own */
    if (!network &&
        !(s->checkpointer = store_checkpointer_new(s->db, s->file, WAL_CHECKPOINT_PAGES, err, errlen)))
        goto fail;
    index_fields(s);
    char *cols = event_columns();
    pano_buf ins = {0};
    pano_buf_appendf(&ins, "INSERT INTO events (%s) VALUES (?", cols);
    for (size_t i = 1; i < FIRST_FIELD + STORE_FIELDS; i++) /* doc's too */
        pano_buf_append_str(&ins, ", ?");
    pano_buf_append_str(&ins, ") ON CONFLICT (event_id) DO NOTHING");
    rc = sqlite3_prepare_v2(s->db, ins.data, -1, &s->insert, NULL);
    pano_buf_free(&ins);
    free(cols);
    if (rc != SQLITE_OK ||
        sqlite3_prepare_v2(s->db,
                           "INSERT INTO dead_letters (received, reason, event, event_id, "
                           "wf_uuid, body) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                           -1, &s->dead, NULL) != SQLITE_OK ||
        /* a run's latest sample or start: its state (run_delta.h) */
        sqlite3_prepare_v2(s->db,
                           "SELECT doc, ts FROM events WHERE \"dag_job_id\" IS ?1 AND wf_uuid = ?2"
                           " AND \"hostname\" = ?3 AND \"pid\" = ?4 AND event IN"
                           " ('kickstart.inv.online', 'kickstart.inv.start')"
                           " ORDER BY ts DESC, rowid DESC LIMIT 1",
                           -1, &s->run_latest, NULL) != SQLITE_OK) {
        sql_fail(s->db, s->file, err, errlen);
        goto fail;
    }
    if (!(s->tally = store_tally_new(s->db, "main", why, sizeof why))) {
        snprintf(err, errlen, "store file %s: %s", s->file, why);
        goto fail;
    }
    s->runs = store_runs_new();
    pano_arena_init(&s->scratch, 0);
    s->seen_version = -1;
    if (sqlite3_prepare_v2(s->db, "PRAGMA data_version", -1, &s->data_version, NULL) !=
        SQLITE_OK) {
        sql_fail(s->db, s->file, err, errlen);
        goto fail;
    }
    if (!(s->sums = store_summaries_new(s->db, why, sizeof why))) {
        snprintf(err, errlen, "store file %s: %s", s->file, why);
        goto fail;
    }
    pano_debug("store %s (%s journal)", s->file, network ? "rollback" : "WAL");
    return s;

fail:
    pano_store_close(s);
    return NULL;
}

const char *pano_store_file(const pano_store *s)
{
    return s->file;
}

static void bind_str(sqlite3_stmt *st, int i, const char *v)
{
    if (v && *v)
        sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, i);
}

/* Open the writer's transaction. */
static int begin_transaction(pano_store *s, char *err, size_t errlen)
{
    if (exec(s->db, "BEGIN IMMEDIATE", err, errlen) < 0)
        return -1;
    s->in_transaction = true;
    s->began = pano_monotonic();
    /* another connection's commits: the runs' states known may be stale */
    int64_t version = -1;
    if (sqlite3_step(s->data_version) == SQLITE_ROW)
        version = sqlite3_column_int64(s->data_version, 0);
    sqlite3_reset(s->data_version);
    if (version < 0 || version != s->seen_version)
        store_runs_forget(s->runs);
    s->seen_version = version;
    return 0;
}

/* End the writer's transaction: the summaries it changed written and
 * COMMIT when ok, else ROLLBACK and their changes forgotten. 0 when
 * committed. */
static int end_transaction(pano_store *s, bool ok, char *err, size_t errlen)
{
    s->in_transaction = false;
    int rc = ok ? store_summaries_flush(s->sums, err, errlen) : -1;
    if (rc == 0)
        rc = store_tally_flush(s->tally, err, errlen);
    if (rc < 0) {
        store_summaries_discard(s->sums);
        store_tally_discard(s->tally);
    }
    if (finish(s->db, rc, err, errlen) < 0) {
        store_runs_forget(s->runs); /* what the rolled back events made */
        return -1;
    }
    return 0;
}

/* One statement, in its own transaction unless a batch is open. */
static int run(pano_store *s, sqlite3_stmt *st, char *err, size_t errlen)
{
    bool own = !s->in_transaction;
    if (own && begin_transaction(s, err, errlen) < 0)
        return -1;
    int rc = 0;
    if (sqlite3_step(st) != SQLITE_DONE)
        rc = sql_fail(s->db, s->file, err, errlen);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return own ? end_transaction(s, rc == 0, err, errlen) : rc;
}

/* Everything queued written (the writer thread idle): before the store's
 * connection is used on the caller's thread. */
static void drain(pano_store *s)
{
    if (s->pipe)
        pano_pipe_drain(s->pipe);
}

static pano_store_outcome keep_refused(pano_store *s, double received, const char *reason,
                                       const char *event, const char *event_id,
                                       const char *wf_uuid, const char *body, size_t len,
                                       char *err, size_t errlen)
{
    if (len > INT_MAX)
        len = 0;
    sqlite3_bind_double(s->dead, 1, received);
    sqlite3_bind_text(s->dead, 2, reason, -1, SQLITE_TRANSIENT);
    bind_str(s->dead, 3, event);
    bind_str(s->dead, 4, event_id);
    bind_str(s->dead, 5, wf_uuid);
    sqlite3_bind_blob(s->dead, 6, body, (int)len, SQLITE_TRANSIENT);
    char why[256];
    if (run(s, s->dead, why, sizeof why) < 0) {
        snprintf(err, errlen, "rejected (%s), and its dead letter not stored: %s", reason, why);
        return PANO_STORE_FAILED;
    }
    snprintf(err, errlen, "%s", reason);
    return PANO_STORE_REJECTED;
}

pano_store_outcome pano_store_keep_refused(pano_store *s, double received, const char *reason,
                                           const char *event, const char *event_id,
                                           const char *wf_uuid, const char *body, size_t len,
                                           char *err, size_t errlen)
{
    drain(s);
    return keep_refused(s, received, reason, event, event_id, wf_uuid, body, len, err, errlen);
}

static pano_store_outcome dead_letter(pano_store *s, const char *json, size_t len,
                                      const char *reason, char *err, size_t errlen)
{
    /* Name and id as far as they can be read from what came. */
    char perr[64];
    pano_json *ev = pano_json_parse(json, len, PANO_JSON_DEFAULT_DEPTH, perr, sizeof perr);
    bool obj = ev && ev->type == PANO_JSON_OBJECT;
    pano_store_outcome o = keep_refused(
        s, pano_now(), reason, obj ? pano_json_get_str(ev, "event") : NULL,
        obj ? pano_json_get_str(ev, "event_id") : NULL,
        obj ? pano_json_get_str(ev, "wf_uuid") : NULL, json, len, err, errlen);
    pano_json_free(ev);
    return o;
}

/* An event stored counted in the transaction's figures: placed at place,
 * its fields' values fv[0..n). */
static void count_figures(pano_store *s, const pano_place *place, const field_value *fv, size_t n)
{
    const store_cell null = {.type = SQLITE_NULL};
    store_figures_event e = {.wf_uuid = place->wf_uuid,
                             .stream = pano_streams[place->stream],
                             .event = place->event,
                             .wf_label = null,
                             .dax_label = null,
                             .delta = null,
                             .ts = place->ts};
    for (size_t i = 0; i < STORE_FIGURES_SUMMED; i++)
        e.summed[i] = null;
    for (size_t i = 0; i < n; i++) {
        switch (fv[i].figures) {
        case FIGURES_NONE: break;
        case FIGURES_WF_LABEL: e.wf_label = fv[i].cell; break;
        case FIGURES_DAX_LABEL: e.dax_label = fv[i].cell; break;
        case FIGURES_DELTA: e.delta = fv[i].cell; break;
        default: e.summed[fv[i].figures - FIGURES_SUMMED] = fv[i].cell; break;
        }
    }
    store_tally_add(s->tally, &e);
}

/* Insert an event placed at place, its document body (len bytes) whose
 * fields with a column are fv[0..nfv), and count it in its summary (sp,
 * its contribution, cleared), in its own transaction unless one is open. */
static pano_store_outcome insert(pano_store *s, const pano_place *place, const char *body,
                                 size_t len, const field_value *fv, size_t nfv,
                                 store_summary_part *sp, char *err, size_t errlen)
{
    bool own = !s->in_transaction;
    if (own && begin_transaction(s, err, errlen) < 0)
        return PANO_STORE_FAILED;
    /* each value outlives the statement's step */
    sqlite3_bind_text(s->insert, 1, place->event_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(s->insert, 2, place->wf_uuid, -1, SQLITE_STATIC);
    sqlite3_bind_text(s->insert, 3, pano_streams[place->stream], -1, SQLITE_STATIC);
    sqlite3_bind_text(s->insert, 4, place->event, -1, SQLITE_STATIC);
    sqlite3_bind_double(s->insert, 5, place->ts);
    sqlite3_bind_text(s->insert, FIRST_FIELD + (int)STORE_FIELDS, body, (int)len, SQLITE_STATIC);
    for (size_t i = 0; i < nfv; i++)
        store_cell_bind(s->insert, fv[i].column, &fv[i].cell);
    pano_store_outcome o = PANO_STORE_STORED;
    if (sqlite3_step(s->insert) != SQLITE_DONE) {
        sql_fail(s->db, s->file, err, errlen);
        o = PANO_STORE_FAILED;
    } else if (sqlite3_changes(s->db) == 0)
        o = PANO_STORE_DUPLICATE;
    sqlite3_reset(s->insert);
    sqlite3_clear_bindings(s->insert);
    if (o == PANO_STORE_STORED)
        count_figures(s, place, fv, nfv);
    if (o == PANO_STORE_STORED &&
        store_summaries_add(s->sums, sp, sqlite3_last_insert_rowid(s->db), err, errlen) < 0)
        o = PANO_STORE_FAILED;
    if (own && end_transaction(s, o != PANO_STORE_FAILED, err, errlen) < 0)
        o = PANO_STORE_FAILED;
    return o;
}

/* The state of run e as the file holds it: from its latest sample or start
 * (kept in s->runs once read). */
static int run_state(pano_store *s, const pano_run_event *e, pano_run_state *r, char *err,
                     size_t errlen)
{
    memset(r, 0, sizeof *r);
    if (store_runs_get(s->runs, e->key, r))
        return 0;
    double latest_ts = -INFINITY;
    sqlite3_stmt *st = s->run_latest;
    bind_str(st, 1, e->job);
    sqlite3_bind_text(st, 2, e->wf, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, e->host, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, e->pid);
    int rc = sqlite3_step(st), out = 0;
    if (rc == SQLITE_ROW) {
        char why[64];
        const char *doc = (const char *)sqlite3_column_text(st, 0);
        const pano_json_parse_options in_scratch = {.arena = &s->scratch};
        pano_json *src = pano_json_parse_with(doc, (size_t)sqlite3_column_bytes(st, 0),
                                              &in_scratch, why, sizeof why);
        if (src)
            pano_run_state_of(src, "store", r);
        latest_ts = sqlite3_column_double(st, 1);
    } else if (rc != SQLITE_DONE)
        out = sql_fail(s->db, s->file, err, errlen);
    if (out == 0)
        store_runs_put(s->runs, e->key, latest_ts, r);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return out;
}

static pano_store_outcome put_one(pano_store *s, const char *routing_key, const char *json,
                                  size_t len, char *err, size_t errlen);

/* What the checks made of one message, before anything is written: what
 * write_checked writes. It points into the message and into the state of
 * the normalizer that checked it. */
typedef struct {
    const char *json; /* the message as it came */
    size_t len;
    bool normalized;   /* n holds what pano_normalize made (to free) */
    pano_normalized n;
    pano_place place;
    pano_run_event *e;   /* a run event whose state it follows, else NULL */
    /* Not a run event, or one read from the bytes that came (own_tree):
     * its fields with a column and its contribution to its run's summary,
     * which a delta made for it leaves as they are but for delta's fields */
    bool own_tree;
    field_value fv[STORE_FIELDS];
    size_t nfv;
    store_summary_part sp;
    const char *refused; /* why it is refused, else NULL */
    char reason[256];
} checked;

/* A run event (run_delta.h): the run's state read, the event stored as it
 * makes it (a sample without delta gets one), and the closing sample an end
 * makes after it, in one transaction. The state kept follows each start
 * and sample stored (store_runs.h). */
static pano_store_outcome put_run_event(pano_store *s, checked *c, char *err, size_t errlen)
{
    const pano_run_event *e = c->e;
    const pano_place *place = &c->place;
    const pano_normalized *n = &c->n;
    bool own = !s->in_transaction;
    if (own && begin_transaction(s, err, errlen) < 0)
        return PANO_STORE_FAILED;
    pano_run_state r;
    pano_run_change ch = {0};
    pano_store_outcome o = PANO_STORE_FAILED;
    if (run_state(s, e, &r, err, errlen) < 0)
        goto out;
    pano_run_apply(&r, e, "store", n->body, n->len, n->body, n->len, &ch);
    /* the event as it came, or the sample with the delta made here */
    const char *body = n->body;
    size_t len = n->len;
    const pano_json *tree = n->doc;
    bool own_tree = c->own_tree;
    if (ch.doc) {
        char why[64];
        const pano_json_parse_options in_scratch = {.arena = &s->scratch};
        body = ch.doc;
        len = strlen(ch.doc);
        tree = own_tree ? pano_run_change_tree(&ch, n->doc, &s->scratch) : NULL;
        if (!tree) {
            own_tree = false;
            if (!(tree = pano_json_parse_with(body, len, &in_scratch, why, sizeof why))) {
                snprintf(err, errlen, "the sample with its delta is not JSON: %s", why);
                goto out;
            }
        }
    }
    if (own_tree) {
        /* what the checks read of the event, and the fields of the members
         * made in front of its own (a view of the tree's first ones) */
        if (tree != n->doc) {
            pano_json made = *tree;
            made.u.items.len -= n->doc->u.items.len;
            c->nfv += field_values(s, &made, c->fv + c->nfv, STORE_FIELDS - c->nfv);
        }
        o = insert(s, place, body, len, c->fv, c->nfv, &c->sp, err, errlen);
    } else {
        field_value fv[STORE_FIELDS];
        store_summary_part sp;
        store_summaries_part(tree, place, &sp);
        o = insert(s, place, body, len, fv, field_values(s, tree, fv, STORE_FIELDS), &sp, err,
                   errlen);
        store_summaries_part_clear(&sp);
    }
    if (o == PANO_STORE_STORED && e->kind != PANO_RUN_END)
        store_runs_stored(s->runs, e->key, place->ts, tree);
    if (o != PANO_STORE_FAILED && ch.closing) {
        char why[256];
        pano_store_outcome closed =
            put_one(s, NULL, ch.closing, strlen(ch.closing), why, sizeof why);
        if (closed != PANO_STORE_STORED && closed != PANO_STORE_DUPLICATE) {
            /* the end waits for its closing sample */
            snprintf(err, errlen, "its closing sample: %s", why);
            o = PANO_STORE_FAILED;
        }
    }
out:
    pano_arena_reset(&s->scratch); /* the trees read and made are done with */
    free(ch.doc);
    free(ch.closing);
    if (own && end_transaction(s, o != PANO_STORE_FAILED, err, errlen) < 0)
        o = PANO_STORE_FAILED;
    return o;
}

/* Whether JSON text s has a \u escape. */
static bool unicode_escape(const char *s, size_t len)
{
    const char *end = s + len;
    for (const char *p = s; p + 1 < end && (p = memchr(p, '\\', (size_t)(end - p - 1))); p += 2)
        if (p[1] == 'u')
            return true;
    return false;
}

/* Check a message with normalizer nz (any thread: the store's connection
 * is not used). */
static void check(const pano_store *s, pano_normalizer *nz, const char *routing_key,
                  const char *json, size_t len, checked *c)
{
    /* Not cleared whole (5 KB an event): n is set by pano_normalize, place
     * by pano_event_place, and fv and sp are read only as far as nfv and
     * sp.has say. */
    c->json = json;
    c->len = len;
    c->normalized = false;
    c->e = NULL;
    c->own_tree = false;
    c->nfv = 0;
    c->sp.has = false;
    c->refused = NULL;
    if (len > INT_MAX) {
        c->len = 0; /* not kept */
        c->refused = "message too large";
        return;
    }
    c->normalized = true;
    if (!pano_normalize(nz, routing_key ? routing_key : "", json, len, &c->n)) {
        c->refused = c->n.reason;
        return;
    }
    if (pano_event_place(c->n.doc, s->policies, pano_now(), &c->place, c->reason,
                         sizeof c->reason) != PANO_PLACE_OK) {
        c->refused = c->reason;
        return;
    }
    /* a run's start, sample or end: its state followed (a sample without
     * delta may get one, an end may make a closing sample) */
    if (strncmp(c->place.event, "kickstart.inv.", 14) == 0)
        c->e = pano_run_event_read(c->n.doc, c->place.wf_uuid, -1, -1);
    /* the tree of a sample that may be given a delta stands for the one
     * parsing its bytes again gives when it was read from the bytes that
     * came, with no escape that parsing again could read otherwise
     * (pano_run_change_tree) */
    c->own_tree = !c->e || c->e->kind != PANO_RUN_SAMPLE || c->e->own_delta ||
                  (!c->n.changed && !unicode_escape(c->n.body, c->n.len));
    if (c->own_tree) {
        c->nfv = field_values(s, c->n.doc, c->fv, STORE_FIELDS);
        store_summaries_part(c->n.doc, &c->place, &c->sp);
    }
}

static void checked_free(checked *c)
{
    pano_run_event_free(c->e);
    c->e = NULL;
    store_summaries_part_clear(&c->sp);
    if (c->normalized)
        pano_normalized_free(&c->n);
    c->normalized = false;
}

/* Write what check made: the event, or its dead letter. */
static pano_store_outcome write_checked(pano_store *s, checked *c, char *err, size_t errlen)
{
    if (c->refused)
        return dead_letter(s, c->json, c->len, c->refused, err, errlen);
    if (c->e)
        return put_run_event(s, c, err, errlen);
    /* a run's start or sample whose state cannot be followed (no run key) */
    if (strcmp(c->place.event, "kickstart.inv.start") == 0 ||
        strcmp(c->place.event, "kickstart.inv.online") == 0)
        store_runs_forget(s->runs);
    return insert(s, &c->place, c->n.body, c->n.len, c->fv, c->nfv, &c->sp, err, errlen);
}

/* The first failure of a batch, kept for its commit to tell. */
static void batch_failed(pano_store *s, size_t events, const char *why)
{
    if (!s->batch.why[0])
        snprintf(s->batch.why, sizeof s->batch.why, "%s", why);
    s->batch.lost += events;
}

/* End the writer's transaction; the events it held are stored, or lost. */
static int batch_transaction_end(pano_store *s)
{
    char why[256];
    int rc = end_transaction(s, true, why, sizeof why);
    if (rc < 0)
        batch_failed(s, s->batch.uncommitted, why);
    s->batch.uncommitted = 0;
    return rc;
}

/* An event of a batch written (put or queued): counted in the open
 * transaction, which is committed, and the next one begun, once it holds
 * PANO_STORE_BATCH_COMMIT events or began PANO_STORE_BATCH_SECONDS ago
 * (the clock read every 256 events). */
static void batch_wrote(pano_store *s, pano_store_outcome o)
{
    if (!s->in_transaction || s->batch.broken)
        return;
    if (o == PANO_STORE_STORED || o == PANO_STORE_DUPLICATE)
        s->batch.uncommitted++;
    if (s->batch.uncommitted < PANO_STORE_BATCH_COMMIT &&
        (s->batch.uncommitted % 256 != 0 ||
         pano_monotonic() - s->began < PANO_STORE_BATCH_SECONDS))
        return;
    char why[256];
    if (batch_transaction_end(s) == 0 && begin_transaction(s, why, sizeof why) < 0) {
        s->batch.broken = true; /* a queued event then counts as lost */
        batch_failed(s, 0, why);
    }
}

static pano_store_outcome put_one(pano_store *s, const char *routing_key, const char *json,
                                  size_t len, char *err, size_t errlen)
{
    checked c;
    check(s, s->nz, routing_key, json, len, &c);
    pano_store_outcome o = write_checked(s, &c, err, errlen);
    checked_free(&c);
    return o;
}

pano_store_outcome pano_store_put(pano_store *s, const char *routing_key, const char *json,
                                  size_t len, char *err, size_t errlen)
{
    drain(s);
    pano_store_outcome o = put_one(s, routing_key, json, len, err, errlen);
    batch_wrote(s, o);
    return o;
}

/* ---- the queue: checked on the caller's thread, written on the writer's ------------- */

/* A slot of the queue: a copy of the message, which its tree may point
 * into, and the slot's own normalizer, whose tree lives until the slot
 * comes round again. */
typedef struct {
    pano_normalizer *nz;
    pano_buf copy;
    checked c;
} queued;

/* The writer thread's work on one slot. */
static void write_queued(void *slot, void *user)
{
    queued *q = slot;
    pano_store *s = user;
    char why[512];
    if (s->batch.broken) { /* no transaction to write in */
        if (!q->c.refused)
            batch_failed(s, 1, "no transaction open");
    } else {
        pano_store_outcome o = write_checked(s, &q->c, why, sizeof why);
        if (o == PANO_STORE_FAILED && q->c.refused)
            pano_error("store %s: %s", s->file, why); /* the refusal was told already */
        else if (o == PANO_STORE_FAILED)
            batch_failed(s, 1, why);
        batch_wrote(s, o);
    }
    checked_free(&q->c);
}

pano_store_outcome pano_store_queue(pano_store *s, const char *routing_key, const char *json,
                                    size_t len, char *err, size_t errlen)
{
    if (!s->batch.open || len > STORE_QUEUE_MAX_EVENT)
        return pano_store_put(s, routing_key, json, len, err, errlen);
    if (!s->pipe)
        s->pipe = pano_pipe_new(STORE_QUEUE_SLOTS, sizeof(queued), STORE_QUEUE_LINGER, write_queued,
                                s);
    queued *q = pano_pipe_next(s->pipe);
    if (!q->nz)
        q->nz = pano_normalizer_new(&s->nopts);
    pano_buf_clear(&q->copy);
    pano_buf_append(&q->copy, json, len);
    check(s, q->nz, routing_key, q->copy.data, len, &q->c);
    pano_store_outcome o = PANO_STORE_STORED;
    if (q->c.refused) {
        snprintf(err, errlen, "%s", q->c.refused);
        o = PANO_STORE_REJECTED; /* its dead letter written with the rest */
    }
    pano_pipe_push(s->pipe);
    return o;
}

/* The connection's page cache set to kib KiB (only its speed depends on it). */
static void cache_size(pano_store *s, int kib)
{
    char sql[64], why[256];
    snprintf(sql, sizeof sql, "PRAGMA cache_size = -%d", kib);
    if (exec(s->db, sql, why, sizeof why) < 0)
        pano_warn("store %s: %s", s->file, why);
}

int pano_store_begin(pano_store *s, char *err, size_t errlen)
{
    drain(s);
    if (s->batch.open)
        return 0;
    if (begin_transaction(s, err, errlen) < 0)
        return -1;
    s->batch = (store_batch){.open = true};
    cache_size(s, BATCH_CACHE_KIB);
    return 0;
}

int pano_store_commit(pano_store *s, char *err, size_t errlen)
{
    drain(s);
    if (!s->batch.open)
        return 0;
    if (s->in_transaction)
        batch_transaction_end(s);
    int lost = s->batch.lost > INT_MAX ? INT_MAX : (int)s->batch.lost;
    if (lost)
        snprintf(err, errlen, "%s", s->batch.why);
    s->batch = (store_batch){0};
    cache_size(s, DEFAULT_CACHE_KIB);
    return lost;
}

void pano_store_close(pano_store *s)
{
    if (!s)
        return;
    if (s->batch.open) {
        char err[256];
        int lost = pano_store_commit(s, err, sizeof err);
        if (lost)
            pano_error("store %s: %d of the last events were not stored: %s", s->file, lost, err);
    }
    if (s->pipe) {
        for (size_t i = 0; i < pano_pipe_slots(s->pipe); i++) {
            queued *q = pano_pipe_slot(s->pipe, i);
            pano_normalizer_free(q->nz);
            pano_buf_free(&q->copy);
        }
        pano_pipe_free(s->pipe);
    }
    sqlite3_finalize(s->insert);
    sqlite3_finalize(s->dead);
    sqlite3_finalize(s->run_latest);
    sqlite3_finalize(s->data_version);
    unsigned long copies = s->checkpointer ? store_checkpointer_copies(s->checkpointer) : 0;
    if (copies)
        pano_debug("store %s: its WAL copied into it %lu times on a thread of its own", s->file,
                   copies);
    store_checkpointer_free(s->checkpointer);
    store_runs_free(s->runs);
    pano_arena_free(&s->scratch);
    store_tally_free(s->tally);
    store_summaries_free(s->sums);
    if (s->db)
        sqlite3_close(s->db);
    pano_normalizer_free(s->nz);
    pano_schema_set_free(s->schemas);
    free(s->file);
    free(s);
}

/* ---- reading ------------------------------------------------------------------------ */

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The files of path: itself, or a directory's *.pano.sqlite, sorted. */
static int list_files(const char *path, char ***files, size_t *n, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) < 0) {
        snprintf(err, errlen, "no store at %s: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        *files = pano_realloc(*files, (*n + 1) * sizeof **files);
        (*files)[(*n)++] = pano_strdup(path);
        return 0;
    }
    DIR *d = opendir(path);
    if (!d) {
        snprintf(err, errlen, "cannot read store %s: %s", path, strerror(errno));
        return -1;
    }
    size_t first = *n;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!is_store_file(e->d_name))
            continue;
        *files = pano_realloc(*files, (*n + 1) * sizeof **files);
        (*files)[(*n)++] = pano_asprintf("%s/%s", path, e->d_name);
    }
    closedir(d);
    if (*n == first) {
        snprintf(err, errlen, "no store at %s (no *%s file in it)", path, PANO_STORE_SUFFIX);
        return -1;
    }
    qsort(*files + first, *n - first, sizeof **files, by_name);
    return 0;
}

/* "file:PATH?mode=ro" with the characters a URI gives a meaning to escaped. */
static char *ro_uri(const char *path)
{
    size_t len = strlen(path);
    char *uri = pano_malloc(len * 3 + 32), *o = uri;
    o += sprintf(o, "file:");
    for (const char *p = path; *p; p++)
        if (*p == '%' || *p == '?' || *p == '#')
            o += sprintf(o, "%%%02X", (unsigned char)*p);
        else
            *o++ = *p;
    sprintf(o, "?mode=ro");
    return uri;
}

/* The union of the files' tables: each file's events but those of an
 * event_id an earlier file holds. */
static char *union_sql(const char *table, size_t n, bool by_id)
{
    pano_buf b = {0};
    pano_buf_appendf(&b, "CREATE TEMP VIEW %s AS ", table);
    for (size_t i = 0; i < n; i++) {
        pano_buf_appendf(&b, "%sSELECT %s FROM f%zu.%s", i ? " UNION ALL " : "",
                         by_id ? "rowid AS row, *" : "*", i, table);
        if (by_id && i > 0) {
            pano_buf_appendf(&b, " WHERE event_id NOT IN (");
            for (size_t j = 0; j < i; j++)
                pano_buf_appendf(&b, "%sSELECT event_id FROM f%zu.events", j ? " UNION ALL " : "", j);
            pano_buf_appendf(&b, ")");
        }
    }
    return b.data;
}

/* The view summaries: the union of the attached files' (f0 ... f<n-1>)
 * summaries, of those that keep them; a document of one run in two files
 * is in both (the reader merges them). */
static int summaries_view(sqlite3 *db, size_t n, char *err, size_t errlen)
{
    pano_buf b = {0};
    size_t with = 0;
    for (size_t i = 0; i < n; i++) {
        char schema[32];
        snprintf(schema, sizeof schema, "f%zu", i);
        if (has_table(db, schema, "summaries"))
            pano_buf_appendf(&b, "%sSELECT " STORE_SUMMARIES_COLUMNS " FROM %s.summaries",
                             with++ ? " UNION ALL " : "CREATE TEMP VIEW summaries AS ", schema);
    }
    if (!with) /* none keeps them: an empty table in their place */
        pano_buf_append_str(&b, "CREATE TEMP TABLE summaries (" STORE_SUMMARIES_COLUMNS ")");
    int rc = exec(db, b.data, err, errlen);
    pano_buf_free(&b);
    return rc;
}

/* A compressed file (an export: zstd_file.h) decompressed into a private
 * temporary file, its path in *plain: NULL when file is plain. */
static int decompressed(const char *file, char **plain, char *err, size_t errlen)
{
    *plain = NULL;
    if (!pano_zstd_file_is(file))
        return 0;
    const char *tmp = getenv("TMPDIR");
    char *path = pano_asprintf("%s/pano-export-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) {
        snprintf(err, errlen, "cannot make a file to decompress %s into: %s", file,
                 strerror(errno));
        free(path);
        return -1;
    }
    close(fd);
    if (pano_zstd_file_decompress(file, path, err, errlen) < 0) {
        free(path);
        return -1;
    }
    *plain = path;
    return 0;
}

/* Whether an attached file is one a writer is making: there, but nothing
 * in it yet (no application id, no table), its tables not committed. */
static bool being_made(sqlite3 *db, const char *schema)
{
    char sql[128];
    snprintf(sql, sizeof sql, "PRAGMA %s.application_id", schema);
    if (pragma_int(db, sql) != 0)
        return false;
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s.sqlite_master", schema);
    return pragma_int(db, sql) == 0;
}

static int attach_plain(sqlite3 *db, const char *path, const char *file, const char *schema,
                        char *err, size_t errlen)
{
    char *uri = ro_uri(path);
    char *sql = sqlite3_mprintf("ATTACH %Q AS %s", uri, schema);
    free(uri);
    int rc = exec(db, sql, err, errlen);
    sqlite3_free(sql);
    /* a writer making the file is given a moment to commit its tables */
    double give_up = pano_monotonic() + MADE_WAIT;
    while (rc == 0 && being_made(db, schema) && pano_monotonic() < give_up)
        usleep(20000);
    if (rc < 0 || check_format(db, schema, file, err, errlen) < 0)
        return -1;
    /* Scans read the file's pages where the kernel caches them, without a
     * copy (sqlite.org, "Memory-Mapped I/O"); not over a network file
     * system, where another host may change the file under the mapping. */
    char *dir = pano_strdup(path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    bool local = !network_fs(slash ? (*dir ? dir : "/") : ".");
    free(dir);
    if (!local)
        return 0;
    sql = sqlite3_mprintf("PRAGMA %s.mmap_size = %lld", schema, MMAP_BYTES);
    rc = exec(db, sql, err, errlen);
    sqlite3_free(sql);
    return rc;
}

static int attach(sqlite3 *db, const char *file, const char *schema, char *err, size_t errlen)
{
    /* a compressed file is read from its decompressed copy, whose name is
     * gone once SQLite holds it open: nothing is left behind */
    char *plain;
    if (decompressed(file, &plain, err, errlen) < 0)
        return -1;
    int rc = attach_plain(db, plain ? plain : file, file, schema, err, errlen);
    if (plain) {
        unlink(plain);
        free(plain);
    }
    return rc;
}

/* More files than SQLite attaches at once: their rows copied, one file at
 * a time, into the connection's own temporary database (on disk, deleted
 * with the connection), an event_id taken once. */
static int merge_files(sqlite3 *db, char **files, size_t n, char *err, size_t errlen)
{
    char *sql_create = create_sql();
    int created = exec(db, sql_create, err, errlen);
    free(sql_create);
    if (created < 0 ||
        exec(db, "CREATE TABLE main.summaries (" STORE_SUMMARIES_COLUMNS ")", err, errlen) < 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (attach(db, files[i], "src", err, errlen) < 0 || exec(db, "BEGIN", err, errlen) < 0)
            return -1;
        int rc = exec(db,
                      "INSERT INTO main.events SELECT * FROM src.events WHERE true "
                      "ON CONFLICT (event_id) DO NOTHING;"
                      "INSERT INTO main.dead_letters SELECT * FROM src.dead_letters;",
                      err, errlen);
        if (rc == 0 && has_table(db, "src", "summaries"))
            rc = exec(db,
                      "INSERT INTO main.summaries SELECT " STORE_SUMMARIES_COLUMNS
                      " FROM src.summaries",
                      err, errlen);
        if (finish(db, rc, err, errlen) < 0 || exec(db, "DETACH src", err, errlen) < 0)
            return -1;
    }
    if (exec(db, "BEGIN", err, errlen) < 0 ||
        finish(db, keep_figures(db, "main", err, errlen), err, errlen) < 0)
        return -1;
    return exec(db,
                "CREATE TEMP VIEW events AS SELECT rowid AS row, * FROM main.events;"
                "CREATE TEMP VIEW dead_letters AS SELECT * FROM main.dead_letters;"
                "CREATE TEMP VIEW summaries AS SELECT * FROM main.summaries;"
                "CREATE TEMP VIEW figures AS SELECT * FROM main.figures;"
                "CREATE TEMP VIEW seconds AS SELECT * FROM main.seconds;",
                err, errlen);
}

/* The reader's temporary table chosen_wfs: the workflows wfs[0..n) and
 * their sub-workflows (whose events name one of them as root_xwf_id). */
static int choose_workflows(sqlite3 *reader, const char *const *wfs, size_t n, char *err,
                            size_t errlen)
{
    int rc = exec(reader,
                  "DROP TABLE IF EXISTS temp.chosen_wfs;"
                  "CREATE TEMP TABLE chosen_wfs (wf TEXT PRIMARY KEY)",
                  err, errlen);
    sqlite3_stmt *add = NULL;
    if (rc == 0 && sqlite3_prepare_v2(reader, "INSERT OR IGNORE INTO chosen_wfs VALUES (?1)", -1,
                                      &add, NULL) != SQLITE_OK)
        rc = sql_fail(reader, "choosing the workflows", err, errlen);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        sqlite3_bind_text(add, 1, wfs[i], -1, SQLITE_STATIC);
        if (sqlite3_step(add) != SQLITE_DONE)
            rc = sql_fail(reader, "choosing the workflows", err, errlen);
        sqlite3_reset(add);
    }
    sqlite3_finalize(add);
    if (rc == 0)
        rc = exec(reader,
                  "INSERT OR IGNORE INTO chosen_wfs SELECT DISTINCT wf_uuid FROM events"
                  " WHERE \"root_xwf_id\" IN (SELECT wf FROM chosen_wfs)",
                  err, errlen);
    return rc;
}

int pano_store_export(sqlite3 *reader, const char *const *wfs, size_t n, const char *file,
                      const char *source, char *err, size_t errlen)
{
    struct stat st;
    if (stat(file, &st) == 0) {
        snprintf(err, errlen, "%s exists: name another file, or remove it first", file);
        return -1;
    }
    char *tmp = pano_asprintf("%s.part", file);
    unlink(tmp);
    sqlite3 *out = NULL;
    char why[512];
    sqlite_setup();
    int rc = sqlite3_open_v2(tmp, &out, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "cannot create %s: %s", tmp, out ? sqlite3_errmsg(out) : "no memory");
        sqlite3_close(out);
        free(tmp);
        return -1;
    }
    rc = exec(out, "PRAGMA journal_mode = DELETE", why, sizeof why) < 0 ||
                 create_tables(out, tmp, why, sizeof why) < 0
             ? -1
             : 0;
    sqlite3_close(out);
    char *sql = NULL;
    if (rc == 0) {
        sql = sqlite3_mprintf("ATTACH %Q AS export", tmp);
        rc = exec(reader, sql, why, sizeof why);
        sqlite3_free(sql);
    }
    if (rc < 0) {
        snprintf(err, errlen, "%s: %s", tmp, why);
        unlink(tmp);
        free(tmp);
        return -1;
    }
    /* the workflows asked for, and their sub-workflows */
    rc = choose_workflows(reader, wfs, n, why, sizeof why);
    if (rc == 0)
        rc = exec(reader, "BEGIN", why, sizeof why);
    char *cols = event_columns();
    if (rc == 0) {
        sql = sqlite3_mprintf(
            "INSERT INTO export.events (%s) SELECT %s FROM events"
            " WHERE wf_uuid IN (SELECT wf FROM chosen_wfs) ORDER BY ts, row;"
            "INSERT INTO export.dead_letters SELECT * FROM dead_letters"
            " WHERE wf_uuid IN (SELECT wf FROM chosen_wfs) ORDER BY received;"
            /* a run's rows of two files keep the first: its counts then
             * tell a reader to read the events instead */
            "INSERT OR IGNORE INTO export.summaries SELECT " STORE_SUMMARIES_COLUMNS
            " FROM summaries WHERE wf_uuid IN (SELECT wf FROM chosen_wfs);"
            "INSERT INTO export.meta VALUES ('exported_at', %.3f), ('pano_version', %Q),"
            " ('source', %Q), ('counts', (SELECT json_object("
            "  'events', (SELECT count(*) FROM export.events),"
            "  'dead_letters', (SELECT count(*) FROM export.dead_letters),"
            "  'workflows', (SELECT json_group_object(wf_uuid, json(streams)) FROM"
            "   (SELECT wf_uuid, json_group_object(stream, n) AS streams FROM"
            "    (SELECT wf_uuid, stream, count(*) AS n FROM export.events GROUP BY 1, 2)"
            "    GROUP BY 1)))))",
            cols, cols, pano_now(), PANO_VERSION, source ? source : "");
        rc = exec(reader, sql, why, sizeof why);
        sqlite3_free(sql);
    }
    free(cols);
    if (rc == 0) {
        rc = store_figures_count(reader, "export", "true", why, sizeof why);
    }
    if (rc == 0 && pragma_int(reader, "SELECT count(*) FROM export.events") == 0) {
        snprintf(why, sizeof why, "the store holds no event of %s%s", n ? wfs[0] : "",
                 n > 1 ? " or the other workflows" : "");
        rc = -1;
    }
    rc = finish(reader, rc, why, sizeof why);
    char ignored[128];
    exec(reader, "DROP TABLE IF EXISTS temp.chosen_wfs", ignored, sizeof ignored);
    if (exec(reader, "DETACH export", ignored, sizeof ignored) < 0 && rc == 0) {
        snprintf(why, sizeof why, "%s", ignored);
        rc = -1;
    }
    /* compressed as a whole: a sample's JSON repeats its job's */
    char *packed = pano_asprintf("%s.zst-part", file);
    if (rc == 0 && pano_zstd_file_compress(tmp, packed, EXPORT_ZSTD_LEVEL, why, sizeof why) < 0)
        rc = -1;
    if (rc == 0 && rename(packed, file) < 0) {
        snprintf(why, sizeof why, "cannot rename to %s: %s", file, strerror(errno));
        rc = -1;
    }
    if (rc < 0) {
        snprintf(err, errlen, "export to %s: %s", file, why);
        unlink(packed);
    }
    unlink(tmp);
    free(tmp);
    free(packed);
    return rc;
}

int pano_store_each_event(sqlite3 *reader, const char *const *wfs, size_t n,
                          int (*each)(const char *event, const char *event_id, const char *doc,
                                      size_t len, void *user),
                          void *user, char *err, size_t errlen)
{
    if (wfs && choose_workflows(reader, wfs, n, err, errlen) < 0)
        return -1;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(reader,
                           wfs ? "SELECT event, event_id, doc FROM events WHERE wf_uuid IN "
                                 "(SELECT wf FROM chosen_wfs) ORDER BY ts, row"
                               : "SELECT event, event_id, doc FROM events ORDER BY ts, row",
                           -1, &st, NULL) != SQLITE_OK)
        return sql_fail(reader, "reading the store", err, errlen);
    int rc, stop = 0;
    while (!stop && (rc = sqlite3_step(st)) == SQLITE_ROW)
        stop = each((const char *)sqlite3_column_text(st, 0),
                    (const char *)sqlite3_column_text(st, 1),
                    (const char *)sqlite3_column_text(st, 2), (size_t)sqlite3_column_bytes(st, 2),
                    user);
    if (!stop && rc != SQLITE_DONE)
        stop = sql_fail(reader, "reading the store", err, errlen);
    sqlite3_finalize(st);
    return stop;
}

sqlite3 *pano_store_open_reader(const char *const *paths, size_t n, char *err, size_t errlen)
{
    char **files = NULL;
    size_t nfiles = 0;
    sqlite3 *db = NULL;
    for (size_t i = 0; i < n; i++)
        if (list_files(paths[i], &files, &nfiles, err, errlen) < 0)
            goto fail;
    if (nfiles == 0) {
        snprintf(err, errlen, "no store given");
        goto fail;
    }
    /* "": a private temporary database, on disk, gone with the connection */
    sqlite_setup();
    if (sqlite3_open_v2("", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_URI, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "cannot open SQLite: %s", db ? sqlite3_errmsg(db) : "no memory");
        goto fail;
    }
    sqlite3_busy_timeout(db, 10000);
    int rc = store_figures_functions(db, err, errlen);
    if (rc == 0 && nfiles > (size_t)sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, -1))
        rc = merge_files(db, files, nfiles, err, errlen);
    else {
        for (size_t i = 0; i < nfiles && rc == 0; i++) {
            char schema[32];
            snprintf(schema, sizeof schema, "f%zu", i);
            rc = attach(db, files[i], schema, err, errlen);
        }
        char *events = union_sql("events", nfiles, true);
        char *dead = union_sql("dead_letters", nfiles, false);
        if (rc == 0 && (exec(db, events, err, errlen) < 0 || exec(db, dead, err, errlen) < 0 ||
                        summaries_view(db, nfiles, err, errlen) < 0))
            rc = -1;
        /* one file's figures count its events; two files may hold an event
         * twice, which the events view counts once and figures would not */
        if (rc == 0 && nfiles == 1 && has_table(db, "f0", "figures") &&
            has_table(db, "f0", "seconds"))
            rc = exec(db,
                      "CREATE TEMP VIEW figures AS SELECT * FROM f0.figures;"
                      "CREATE TEMP VIEW seconds AS SELECT * FROM f0.seconds",
                      err, errlen);
        free(events);
        free(dead);
    }
    if (rc < 0)
        goto fail;
    for (size_t i = 0; i < nfiles; i++)
        free(files[i]);
    free(files);
    return db;

fail:
    for (size_t i = 0; i < nfiles; i++)
        free(files[i]);
    free(files);
    if (db)
        sqlite3_close(db);
    return NULL;
}
