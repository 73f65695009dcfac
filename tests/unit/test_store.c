/* The embedded store (lib/store.c): events stored once by event_id, checked
 * as the bridge checks them, refused ones kept with their reason; a file per
 * host, read as one store; formats it must refuse. */
#include "config.h"
#include "json.h"
#include "mem.h"
#include "store.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define WF "0b5c8a6e-1111-2222-3333-444455556666"

static char dir[64];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/pano-store-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static pano_config *config(const char *host, const char *retention)
{
    pano_config *cfg = pano_config_new();
    char err[256];
    ck_assert(pano_config_set(cfg, "pano.hostname", host, PANO_CFG_CLI, err, sizeof err) == 0);
    if (retention)
        ck_assert(pano_config_set(cfg, "pano.indexer.retention", retention, PANO_CFG_CLI, err,
                                  sizeof err) == 0);
    return cfg;
}

static pano_store *writer(const char *host, const char *retention)
{
    pano_config *cfg = config(host, retention);
    char err[512];
    pano_store *s = pano_store_open_writer(cfg, dir, err, sizeof err);
    ck_assert_msg(s != NULL, "%s", err);
    pano_config_free(cfg);
    return s;
}

static pano_store_outcome put(pano_store *s, const char *json, char *err, size_t errlen)
{
    return pano_store_put(s, NULL, json, strlen(json), err, errlen);
}

/* Put json, which must be stored. */
static void stored(pano_store *s, const char *json)
{
    char err[256];
    pano_store_outcome o = put(s, json, err, sizeof err);
    ck_assert_msg(o == PANO_STORE_STORED, "%s: %s", json,
                  o == PANO_STORE_DUPLICATE ? "a copy" : err);
}

static char *event(const char *id, double ts)
{
    static char buf[256];
    snprintf(buf, sizeof buf,
             "{\"event\":\"stampede.xwf.start\",\"ts\":%.3f,\"event_id\":\"%s\",\"wf_uuid\":\"" WF
             "\"}",
             ts, id);
    return buf;
}

/* SELECT's one integer on db, which it closes. */
static long long one_integer(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK, "%s", sqlite3_errmsg(db));
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    long long v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

/* SELECT's one integer over the store's files read as one. */
static long long ask(const char *sql)
{
    const char *paths[] = {dir};
    char err[512];
    sqlite3 *db = pano_store_open_reader(paths, 1, err, sizeof err);
    ck_assert_msg(db != NULL, "%s", err);
    return one_integer(db, sql);
}

START_TEST(stored_once_by_event_id)
{
    pano_store *s = writer("node1", NULL);
    char err[256];
    stored(s, event("a", 1764000000.25));
    stored(s, event("b", 1764000001));
    ck_assert_int_eq(put(s, event("a", 1764000000.25), err, sizeof err), PANO_STORE_DUPLICATE);
    char expect[256];
    snprintf(expect, sizeof expect, "%s/node1" PANO_STORE_SUFFIX, dir);
    ck_assert_str_eq(pano_store_file(s), expect);
    pano_store_close(s);
    ck_assert_int_eq(ask("SELECT count(*) FROM events"), 2);
    ck_assert_int_eq(ask("SELECT count(*) FROM events WHERE wf_uuid = '" WF
                         "' AND stream = 'stampede' AND event = 'stampede.xwf.start' "
                         "AND ts = 1764000000.25 AND json_extract(doc, '$.event_id') = 'a'"),
                     1);
    ck_assert_int_eq(ask("SELECT count(*) FROM dead_letters"), 0);
}
END_TEST

START_TEST(refused_events_are_kept_with_their_reason)
{
    pano_store *s = writer("node1", NULL);
    char err[256];
    ck_assert_int_eq(put(s, "{\"event\": \"x\", oops", err, sizeof err), PANO_STORE_REJECTED);
    ck_assert_msg(strstr(err, "invalid JSON"), "%s", err);
    ck_assert_int_eq(put(s, "{\"event\":\"stampede.xwf.start\",\"ts\":5,\"event_id\":\"n\"}", err,
                         sizeof err),
                     PANO_STORE_REJECTED);
    ck_assert_msg(strstr(err, "wf_uuid"), "%s", err);
    ck_assert_int_eq(put(s, "{\"event\":\"no such/name\",\"ts\":5,\"event_id\":\"t\","
                            "\"wf_uuid\":\"" WF "\"}",
                         err, sizeof err),
                     PANO_STORE_REJECTED);
    /* as the bridge does: a ts that cannot be the event's is the time received */
    stored(s, event("early", -3));
    pano_store_close(s);
    ck_assert_int_eq(ask("SELECT count(*) FROM events WHERE event_id = 'early' AND "
                         "json_extract(doc, '$.ts_source') = 'received' AND ts > 1764000000"),
                     1);
    ck_assert_int_eq(ask("SELECT count(*) FROM dead_letters"), 3);
    ck_assert_int_eq(ask("SELECT count(*) FROM dead_letters WHERE reason LIKE '%wf_uuid%' AND "
                         "event_id = 'n' AND CAST(body AS TEXT) LIKE '%\"ts\":5%'"),
                     1);
    ck_assert_int_eq(ask("SELECT count(*) FROM dead_letters WHERE reason LIKE 'invalid JSON%' "
                         "AND CAST(body AS TEXT) = '{\"event\": \"x\", oops'"),
                     1);
}
END_TEST

START_TEST(retention_refuses_and_purges)
{
    double now = (double)time(NULL);
    /* Stored while nothing expires, then opened with a 30-day retention. */
    pano_store *s = writer("node1", NULL);
    char err[256];
    stored(s, event("old", now - 400 * 86400.0));
    stored(s, event("new", now - 60));
    for (int i = 0; i < 2; i++) { /* a job instance of each time, with its summary */
        char inst[512];
        snprintf(inst, sizeof inst,
                 "{\"event\":\"stampede.job_inst.main.start\",\"ts\":%.3f,\"event_id\":\"i%d\","
                 "\"wf_uuid\":\"" WF "\",\"job_id\":\"j\",\"job_inst_id\":%d}",
                 i ? now - 60 : now - 400 * 86400.0, i, i);
        stored(s, inst);
    }
    ck_assert_int_eq(ask("SELECT count(*) FROM summaries"), 2);
    pano_store_close(s);
    s = writer("node1", "30d");
    ck_assert_int_eq(ask("SELECT count(*) FROM events WHERE event_id IN ('i0', 'i1')"), 1);
    ck_assert_int_eq(ask("SELECT json_extract(doc, '$.set.inst') FROM summaries"), 1);
    ck_assert_int_eq(ask("SELECT count(*) FROM events WHERE event NOT LIKE 'stampede.job_inst.%'"), 1);
    ck_assert_int_eq(ask("SELECT count(*) FROM events WHERE event_id = 'new'"), 1);
    ck_assert_int_eq(put(s, event("old2", now - 400 * 86400.0), err, sizeof err),
                     PANO_STORE_REJECTED);
    ck_assert_msg(strstr(err, "older than the retention"), "%s", err);
    pano_store_close(s);
}
END_TEST

START_TEST(hosts_write_their_own_files_read_as_one)
{
    pano_store *a = writer("node-a", NULL), *b = writer("node-b.cluster", NULL);
    char err[256];
    stored(a, event("1", 1764000000));
    stored(b, event("2", 1764000001));
    /* the same event in both files (a copy merged in) counts once */
    stored(b, event("1", 1764000000));
    pano_store_close(a);
    pano_store_close(b);
    char path[128];
    snprintf(path, sizeof path, "%s/node-a" PANO_STORE_SUFFIX, dir);
    ck_assert_int_eq(access(path, R_OK), 0);
    snprintf(path, sizeof path, "%s/node-b.cluster" PANO_STORE_SUFFIX, dir);
    ck_assert_int_eq(access(path, R_OK), 0);
    ck_assert_int_eq(ask("SELECT count(*) FROM events"), 2);
    ck_assert_int_eq(ask("SELECT count(DISTINCT event_id) FROM events"), 2);

    /* one file of the directory, named alone */
    const char *one[] = {path};
    sqlite3 *db = pano_store_open_reader(one, 1, err, sizeof err);
    ck_assert_msg(db != NULL, "%s", err);
    sqlite3_stmt *st;
    ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT group_concat(event_id) FROM (SELECT event_id FROM events ORDER BY row)", -1, &st,
                                        NULL),
                     SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    ck_assert_str_eq((const char *)sqlite3_column_text(st, 0), "2,1");
    sqlite3_finalize(st);
    sqlite3_close(db);
}
END_TEST

/* More hosts than SQLite attaches at once (10): read as one all the same. */
START_TEST(more_hosts_than_sqlite_attaches)
{
    char err[256];
    for (int h = 0; h < 14; h++) {
        char host[16], id[16];
        snprintf(host, sizeof host, "node%02d", h);
        pano_store *s = writer(host, NULL);
        snprintf(id, sizeof id, "h%d", h);
        stored(s, event(id, 1764000000 + h));
        stored(s, event("everywhere", 1764000000));
        ck_assert_int_eq(put(s, "not json", err, sizeof err), PANO_STORE_REJECTED);
        pano_store_close(s);
    }
    ck_assert_int_eq(ask("SELECT count(*) FROM events"), 15);
    ck_assert_int_eq(ask("SELECT count(DISTINCT event_id) FROM events"), 15);
    ck_assert_int_eq(ask("SELECT count(*) FROM dead_letters"), 14);
    ck_assert_int_eq(ask("SELECT max(ts) FROM events WHERE event_id = 'h13'"), 1764000013);
}
END_TEST

START_TEST(a_host_name_never_leaves_the_directory)
{
    pano_store *s = writer("../../etc/x y", NULL);
    char expect[256];
    snprintf(expect, sizeof expect, "%s/_._.._etc_x_y" PANO_STORE_SUFFIX, dir);
    ck_assert_str_eq(pano_store_file(s), expect);
    pano_store_close(s);
}
END_TEST

static void make_file(const char *name, const char *sql)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

START_TEST(foreign_and_newer_files_are_refused)
{
    char err[512];
    const char *paths[] = {dir};
    ck_assert_ptr_null(pano_store_open_reader(paths, 1, err, sizeof err));
    ck_assert_msg(strstr(err, "no store at"), "%s", err);

    make_file("other" PANO_STORE_SUFFIX, "CREATE TABLE t (x)");
    ck_assert_ptr_null(pano_store_open_reader(paths, 1, err, sizeof err));
    ck_assert_msg(strstr(err, "is not a pano store"), "%s", err);
    pano_config *cfg = config("other", NULL);
    ck_assert_ptr_null(pano_store_open_writer(cfg, dir, err, sizeof err));
    ck_assert_msg(strstr(err, "is not a pano store"), "%s", err);
    pano_config_free(cfg);

    char unlink_path[128];
    snprintf(unlink_path, sizeof unlink_path, "%s/other" PANO_STORE_SUFFIX, dir);
    unlink(unlink_path);
    make_file("future" PANO_STORE_SUFFIX,
              "PRAGMA application_id = 1885433455; PRAGMA user_version = 99; CREATE TABLE t (x)");
    ck_assert_ptr_null(pano_store_open_reader(paths, 1, err, sizeof err));
    ck_assert_msg(strstr(err, "format 99, newer than this pano reads"), "%s", err);

    snprintf(unlink_path, sizeof unlink_path, "%s/future" PANO_STORE_SUFFIX, dir);
    unlink(unlink_path);
    make_file("older" PANO_STORE_SUFFIX,
              "PRAGMA application_id = 1885433455; PRAGMA user_version = 1; CREATE TABLE t (x)");
    ck_assert_ptr_null(pano_store_open_reader(paths, 1, err, sizeof err));
    ck_assert_msg(strstr(err, "format 1, from a development version"), "%s", err);
}
END_TEST

static long long ask_file(const char *host, const char *sql);

/* How many rows' column of field f holds what json_extract(doc, f) gives
 * (a keyword's column: its text; "delta": 1 for the object), of its type
 * too when typed (a whole number of a NUMERIC column is an integer, 1.000
 * too), in host's file (NULL: the store read as one). */
static long long rows_whose_column_is_their_doc(const char *host, const char *f, bool typed)
{
    char sql[512], path[96] = "$";
    for (const char *p = f; *p;) {
        size_t k = strcspn(p, ".");
        snprintf(path + strlen(path), sizeof path - strlen(path), ".\"%.*s\"", (int)k, p);
        p += k + (p[k] == '.');
    }
    if (strcmp(f, "delta") == 0)
        snprintf(sql, sizeof sql,
                 "SELECT count(*) FROM events WHERE \"%s\" IS"
                 " iif(json_type(doc, '%s') = 'object', 1, NULL)",
                 f, path);
    else if (pano_store_is_keyword(f))
        snprintf(sql, sizeof sql,
                 "SELECT count(*) FROM events WHERE \"%s\" IS CAST(json_extract(doc, '%s') AS TEXT)"
                 " AND typeof(\"%s\") IN ('text', 'null')",
                 f, path, f);
    else
        snprintf(sql, sizeof sql,
                 "SELECT count(*) FROM events WHERE \"%s\" IS json_extract(doc, '%s')"
                 " AND (%d = 0 OR typeof(\"%s\") = typeof(json_extract(doc, '%s')))",
                 f, path, typed, f, path);
    return host ? ask_file(host, sql) : ask(sql);
}

/* Every field with a column of its own: the column holds what
 * json_extract(doc, field) gives (strings, integers, reals, booleans as
 * 1/0, a JSON null as NULL), an object 1; a field the event lacks is NULL. */
START_TEST(fields_columns_equal_json_extract)
{
    pano_json *ev = pano_json_object();
    pano_json_set_str(ev, "event", "test.fields");
    pano_json_set_double(ev, "ts", (double)time(NULL), 3);
    pano_json_set_str(ev, "event_id", "fields-1");
    pano_json_set_str(ev, "wf_uuid", WF);
    pano_json *delta = pano_json_set_object(ev, "delta");
    pano_json *final = pano_json_set_object(ev, "final");
    size_t n = 0;
    for (; pano_store_fields[n]; n++) {
        const char *f = pano_store_fields[n];
        if (strcmp(f, "delta") == 0 || strcmp(f, "job_id") == 0) /* the object; one left out */
            continue;
        const char *dot = strchr(f, '.');
        pano_json *parent = !dot ? ev : strncmp(f, "delta.", 6) == 0 ? delta : final;
        const char *key = dot ? dot + 1 : f;
        /* the envelope's strings as strings; any type elsewhere */
        static const char *const strings[] = {"hostname", "wf_label", "dag_job_id",
                                              "xformation", "site", NULL};
        bool string = false;
        for (size_t k = 0; strings[k]; k++)
            string |= strcmp(f, strings[k]) == 0;
        switch (string ? 0 : n % 5) {
        case 0: {
            char v[32];
            snprintf(v, sizeof v, "v%zu", n);
            pano_json_set_str(parent, key, v);
            break;
        }
        case 1: pano_json_set_int(parent, key, (int64_t)n * 1000); break;
        case 2: pano_json_set_double(parent, key, (double)n + 0.25, 2); break;
        case 3: pano_json_set_bool(parent, key, n % 2); break;
        default: pano_json_set(parent, key, pano_json_null()); break;
        }
    }
    size_t len;
    char *json = pano_json_serialize(ev, &len);
    pano_json_free(ev);
    pano_store *s = writer("h1", NULL);
    char err[512];
    ck_assert_msg(put(s, json, err, sizeof err) == PANO_STORE_STORED, "%s", err);
    pano_store_close(s);
    free(json);

    for (size_t i = 0; i < n; i++)
        ck_assert_msg(rows_whose_column_is_their_doc(NULL, pano_store_fields[i], true) == 1,
                      "%s: the column differs from the doc", pano_store_fields[i]);
    ck_assert_int_eq(ask("SELECT count(*) FROM events WHERE \"job_id\" IS NULL"), 1);
}
END_TEST

/* A name keeps the form it came in, as a keyword does: job "0042" is not
 * job "42", and label "2024" is text; a number sent as a string is a number. */
START_TEST(names_keep_their_form_numbers_are_coerced)
{
    pano_store *s = writer("h1", NULL);
    char json[512];
    double now = (double)time(NULL);
    snprintf(json, sizeof json,
             "{\"event\":\"test.names\",\"ts\":%.3f,\"event_id\":\"names-1\",\"wf_uuid\":\"%s\","
             "\"dag_job_id\":\"0042\",\"wf_label\":\"2024\",\"pid\":\"17\","
             "\"exitcode\":\"0\"}",
             now, WF);
    stored(s, json);
    snprintf(json, sizeof json,
             "{\"event\":\"test.names\",\"ts\":%.3f,\"event_id\":\"names-2\",\"wf_uuid\":\"%s\","
             "\"dag_job_id\":\"42\"}",
             now, WF);
    stored(s, json);
    pano_store_close(s);
    ck_assert_int_eq(ask("SELECT count(*) FROM events WHERE \"dag_job_id\" = '0042'"
                         " AND typeof(\"dag_job_id\") = 'text'"),
                     1);
    ck_assert_int_eq(ask("SELECT count(*) FROM events WHERE \"dag_job_id\" IN ('42', 42)"), 1);
    ck_assert_int_eq(ask("SELECT count(*) FROM events WHERE \"wf_label\" = '2024'"
                         " AND typeof(\"wf_label\") = 'text'"),
                     1);
    ck_assert_int_eq(ask("SELECT count(*) FROM events WHERE \"pid\" = 17"
                         " AND typeof(\"pid\") = 'integer' AND \"exitcode\" = 0"),
                     1);
    ck_assert_int_eq(ask("SELECT count(*) FROM figures WHERE \"wf_label\" = '2024'"
                         " AND typeof(\"wf_label\") = 'text'"),
                     1);
}
END_TEST

/* A run event of job JOB (pid 42 on node-1): KIND "start", "online" or
 * "end", with EXTRA fields. */
static double base; /* the runs' time: now, within retention */

static char *run_event(const char *kind, const char *job, double ts, const char *id,
                       const char *extra)
{
    static char buf[512];
    ts += base;
    snprintf(buf, sizeof buf,
             "{\"event\":\"kickstart.inv.%s\",\"ts\":%.3f,\"event_id\":\"%s\",\"wf_uuid\":\"" WF
             "\",\"dag_job_id\":\"%s\",\"hostname\":\"node-1\",\"pid\":42%s%s}",
             kind, ts, id, job, *extra ? "," : "", extra);
    return buf;
}

/* One number of the store's row of an event_id, by a json_extract path. */
static double field_of(const char *id, const char *path)
{
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT CAST(json_extract(doc, '%s') * 1000 AS INTEGER) FROM events"
             " WHERE event_id = '%s'",
             path, id);
    return (double)ask(sql) / 1000;
}

START_TEST(samples_without_delta_get_the_indexers_deltas)
{
    base = (double)(time(NULL) / 1000 * 1000) - 10000;
    pano_store *s = writer("node1", NULL);
    char err[256];
#define VALUES(utime, rss, rchar)                                                          \
    "\"utime\":" #utime ",\"stime\":0.5,\"iowait\":0,\"vm\":" #rss "0,\"rss\":" #rss            \
    ",\"procs\":1,\"threads\":2,\"bread\":0,\"bwrite\":0,\"rchar\":" #rchar                    \
    ",\"wchar\":10,\"syscr\":3,\"syscw\":4"
    const char *f1 = VALUES(1.5, 100, 10), *f2 = VALUES(2.25, 300, 30);
    const char *start = "\"argv\":[\"x\"]";
    const char *end = "\"exitcode\":0,\"signal\":0,\"duration\":2.5,\"final\":{}";
    ck_assert_msg(put(s, run_event("start", "j1", 100, "s0", start), err, sizeof err) ==
                      PANO_STORE_STORED,
                  "%s", err);
    stored(s, run_event("online", "j1", 101, "s1", f1));
    stored(s, run_event("online", "j1", 102, "s2", f2));
    /* older than the latest: delta 0 */
    stored(s, run_event("online", "j1", 101.5, "s-late", f2));
    stored(s, run_event("end", "j1", 102.5, "e1", end));
    /* a copy of the end closes nothing more; a sample after it counts nothing */
    ck_assert_int_eq(put(s, run_event("end", "j1", 102.5, "e1", end), err,
                         sizeof err),
                     PANO_STORE_DUPLICATE);
    stored(s, run_event("online", "j1", 103, "s3", f2));
    /* no start before its first sample: as it came; a publisher's delta: left alone */
    stored(s, run_event("online", "raw", 101, "r1", f1));
    stored(s, run_event("end", "raw", 102, "r2", end));
    stored(s, run_event("start", "own", 100, "o0", start));
    stored(s, run_event("online", "own", 101, "o1", VALUES(1, 5, 1) ",\"delta\":{\"rss\":5}"));
    stored(s, run_event("end", "own", 102, "o2", end));
    pano_store_close(s);

    /* the first sample: its values; the next: the change */
    ck_assert_double_eq(field_of("s1", "$.delta.utime"), 1.5);
    ck_assert_double_eq(field_of("s1", "$.delta.rss"), 100);
    ck_assert_double_eq(field_of("s2", "$.delta.utime"), 0.75);
    ck_assert_double_eq(field_of("s2", "$.delta.rss"), 200);
    ck_assert_double_eq(field_of("s2", "$.delta.rchar"), 20);
    ck_assert_double_eq(field_of("s-late", "$.delta.rss"), 0);
    ck_assert_int_eq(ask("SELECT count(*) FROM events WHERE json_extract(doc, '$.delta_source')"
                         " = 'store' AND json_extract(doc, '$.delta_offset') IS NULL"),
                     5);
    /* the column a series sums holds it too */
    ck_assert_int_eq(ask("SELECT \"delta.rss\" FROM events WHERE event_id = 's2'"), 200);
    /* the closing sample: at the end, gauges to zero, counters as last */
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM events WHERE event_id = 'e1-closing' AND"
             " event = 'kickstart.inv.online' AND ts = %.1f AND"
             " json_extract(doc, '$.sample') = 'closing'",
             base + 102.5);
    ck_assert_int_eq(ask(sql), 1);
    ck_assert_double_eq(field_of("e1-closing", "$.rss"), 0);
    ck_assert_double_eq(field_of("e1-closing", "$.delta.rss"), -300);
    ck_assert_double_eq(field_of("e1-closing", "$.delta.vm"), -3000);
    ck_assert_double_eq(field_of("e1-closing", "$.rchar"), 30);
    ck_assert_double_eq(field_of("e1-closing", "$.delta.rchar"), 0);
    /* the run's gauge deltas add up to zero, its counters' to the last values */
    ck_assert_int_eq(ask("SELECT sum(\"delta.rss\") FROM events WHERE dag_job_id = 'j1'"), 0);
    ck_assert_int_eq(ask("SELECT sum(\"delta.rchar\") FROM events WHERE dag_job_id = 'j1'"), 30);
    ck_assert_double_eq(field_of("s3", "$.delta.rss"), 0);
    ck_assert_int_eq(ask("SELECT json_extract(doc, '$.delta_after_end') FROM events"
                         " WHERE event_id = 's3'"),
                     1);
    ck_assert_int_eq(ask("SELECT count(*) FROM events WHERE dag_job_id IN ('raw', 'own') AND"
                         " (json_extract(doc, '$.delta_source') IS NOT NULL OR"
                         " json_extract(doc, '$.sample') = 'closing')"),
                     0);
    ck_assert_int_eq(ask("SELECT count(*) FROM events WHERE dag_job_id = 'raw' AND"
                         " json_extract(doc, '$.delta') IS NOT NULL"),
                     0);
}
END_TEST

/* A sample given its delta here has the columns of the document stored,
 * its own fields' and the delta's, whether its tree was the checks' (as
 * it came) or the document parsed again (changed by the checks: no
 * event_id; an escape in a string), queued or put. */
START_TEST(a_samples_columns_are_those_of_its_document)
{
    base = (double)(time(NULL) / 1000 * 1000) - 10000;
    char err[256];
    for (int queued = 0; queued < 2; queued++) {
        pano_store *s = writer(queued ? "queued" : "put", NULL);
        ck_assert_int_eq(pano_store_begin(s, err, sizeof err), 0);
        char *sent[] = {
            pano_strdup(run_event("start", "j1", 100, "s0", "\"argv\":[\"x\"],\"site\":\"a\"")),
            pano_strdup(run_event("online", "j1", 101, "s1", VALUES(1.5, 100, 10) ",\"site\":\"a\"")),
            pano_strdup(run_event("online", "j1", 102, "s2",
                                  VALUES(2.5, 300, 30) ",\"site\":\"\\u00e9\\n\"")),
            pano_asprintf("{\"event\":\"kickstart.inv.online\",\"ts\":%.3f,\"wf_uuid\":\"" WF "\","
                          "\"dag_job_id\":\"j1\",\"hostname\":\"node-1\",\"pid\":42,"
                          VALUES(3.5, 200, 60) "}",
                          base + 103),
        };
        for (size_t i = 0; i < sizeof sent / sizeof *sent; i++) {
            const char *msg = sent[i];
            pano_store_outcome o = queued ? pano_store_queue(s, NULL, msg, strlen(msg), err, sizeof err)
                                          : pano_store_put(s, NULL, msg, strlen(msg), err, sizeof err);
            ck_assert_msg(o == PANO_STORE_STORED, "%s: %s", msg, err);
            free(sent[i]);
        }
        ck_assert_int_eq(pano_store_commit(s, err, sizeof err), 0);
        pano_store_close(s);
    }
    for (int queued = 0; queued < 2; queued++) {
        const char *host = queued ? "queued" : "put";
        ck_assert_int_eq(ask_file(host, "SELECT count(*) FROM events"), 4);
        ck_assert_int_eq(ask_file(host, "SELECT count(*) FROM events WHERE \"site\" = 'é\n'"), 1);
        for (size_t i = 0; pano_store_fields[i]; i++)
            ck_assert_msg(rows_whose_column_is_their_doc(host, pano_store_fields[i], false) == 4,
                          "%s: a column differs from its doc", pano_store_fields[i]);
        ck_assert_int_eq(ask_file(host, "SELECT count(*) FROM events WHERE \"delta.rss\" IS NOT NULL"), 3);
        ck_assert_int_eq(ask_file(host, "SELECT sum(\"delta.rss\") FROM events"), 200);
        ck_assert_int_eq(ask_file(host, "SELECT sum(\"delta.rchar\") FROM events"), 60);
    }
}
END_TEST

/* A writer keeps its runs' states (store_runs.h) only while they are the
 * file's: a sample another writer stored, or one that carried its own
 * delta, is what the next sample's delta follows. */
START_TEST(a_writer_knows_its_runs_only_while_the_file_is_its_own)
{
    base = (double)(time(NULL) / 1000 * 1000) - 10000;
    pano_store *a = writer("node1", NULL), *b = writer("node1", NULL);
    char err[256];
    stored(a, run_event("start", "j1", 100, "s0", "\"argv\":[\"x\"]"));
    stored(a, run_event("online", "j1", 101, "s1", VALUES(1, 100, 10)));
    stored(b, run_event("online", "j1", 102, "s2", VALUES(2, 300, 20)));
    stored(a, run_event("online", "j1", 103, "s3", VALUES(3, 350, 30)));
    /* a batch of one writer: the same within it */
    ck_assert_int_eq(pano_store_begin(a, err, sizeof err), 0);
    stored(a, run_event("online", "j1", 104, "s4", VALUES(4, 360, 40)));
    stored(a, run_event("online", "j1", 105, "s5", VALUES(5, 390, 50)));
    ck_assert_int_eq(pano_store_commit(a, err, sizeof err), 0);
    /* a sample with its publisher's delta: the run's samples are left alone from then on */
    stored(a, run_event("online", "j1", 106, "p6", VALUES(6, 400, 60) ",\"delta\":{\"rss\":10}"));
    stored(a, run_event("online", "j1", 107, "s7", VALUES(7, 500, 70)));
    pano_store_close(a);
    pano_store_close(b);
    /* each sample's change, from the file's latest sample before it */
    static const struct {
        const char *id;
        double rss;
    } changes[] = {{"s2", 200}, {"s3", 50}, {"s4", 10}, {"s5", 30}};
    for (size_t i = 0; i < sizeof changes / sizeof *changes; i++)
        ck_assert_msg(field_of(changes[i].id, "$.delta.rss") == changes[i].rss, "%s: %g",
                      changes[i].id, field_of(changes[i].id, "$.delta.rss"));
    ck_assert_int_eq(ask("SELECT count(*) FROM events WHERE event_id = 's7'"
                         " AND json_extract(doc, '$.delta') IS NULL"),
                     1);
}
END_TEST

/* The state a writer keeps of a run follows its starts and samples as it
 * stores them: a run started again after its end (the same job, host and
 * pid: a retry) gets its first change from its new start, not from its
 * closing sample; a start older than the run's latest sample changes
 * nothing; a run whose samples carry their own delta is left alone to its
 * end, which closes nothing. */
START_TEST(a_writers_runs_follow_their_starts_and_samples)
{
    base = (double)(time(NULL) / 1000 * 1000) - 10000;
    pano_store *s = writer("node1", NULL);
    char err[256];
    const char *start = "\"argv\":[\"x\"]";
    const char *end = "\"exitcode\":0,\"signal\":0,\"duration\":2,\"final\":{}";
    ck_assert_int_eq(pano_store_begin(s, err, sizeof err), 0);
    stored(s, run_event("start", "j1", 100, "a0", start));
    stored(s, run_event("online", "j1", 101, "a1", VALUES(1, 100, 10)));
    stored(s, run_event("end", "j1", 102, "a2", end));
    stored(s, run_event("start", "j1", 200, "b0", start));
    stored(s, run_event("online", "j1", 201, "b1", VALUES(1, 120, 10)));
    stored(s, run_event("start", "j1", 150, "late", start));
    stored(s, run_event("online", "j1", 202, "b2", VALUES(2, 150, 20)));
    stored(s, run_event("start", "own", 100, "o0", start));
    stored(s, run_event("online", "own", 101, "o1", VALUES(1, 5, 1) ",\"delta\":{\"rss\":5}"));
    stored(s, run_event("online", "own", 102, "o2", VALUES(1, 9, 1) ",\"delta\":{\"rss\":4}"));
    stored(s, run_event("end", "own", 103, "o3", end));
    ck_assert_int_eq(pano_store_commit(s, err, sizeof err), 0);
    pano_store_close(s);
    static const struct {
        const char *id, *path;
        double value;
    } deltas[] = {{"a2-closing", "$.delta.rss", -100}, /* the first run's end */
                  {"b1", "$.delta.rss", 120},           /* from the new start */
                  {"b1", "$.delta.rchar", 10},
                  {"b2", "$.delta.rss", 30},            /* the late start changed nothing */
                  {"o2", "$.delta.rss", 4}};            /* its own */
    for (size_t i = 0; i < sizeof deltas / sizeof *deltas; i++)
        ck_assert_msg(field_of(deltas[i].id, deltas[i].path) == deltas[i].value, "%s %s: %g",
                      deltas[i].id, deltas[i].path, field_of(deltas[i].id, deltas[i].path));
    ck_assert_int_eq(ask("SELECT count(*) FROM events WHERE event_id IN ('b1', 'b2')"
                         " AND json_extract(doc, '$.delta_after_end') IS NOT NULL"),
                     0);
    ck_assert_int_eq(ask("SELECT count(*) FROM events WHERE dag_job_id = 'own' AND"
                         " (json_extract(doc, '$.delta_source') IS NOT NULL OR"
                         " json_extract(doc, '$.sample') = 'closing')"),
                     0);
}
END_TEST

/* SELECT's one integer over one host's file. */
static long long ask_file(const char *host, const char *sql)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s" PANO_STORE_SUFFIX, dir, host);
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    return one_integer(db, sql);
}

/* A job instance's event. */
static char *inst_event(const char *name, double ts, const char *id, const char *extra)
{
    static char buf[512];
    snprintf(buf, sizeof buf,
             "{\"event\":\"stampede.job_inst.%s\",\"ts\":%.3f,\"event_id\":\"%s\",\"wf_uuid\":\"" WF
             "\",\"job_id\":\"j1\",\"job_inst_id\":1%s}",
             name, base + ts, id, extra);
    return buf;
}

/* A run (start, samples without delta, its end twice, a sample after it),
 * a job instance (with a copy of its end) and a transfer, into host's
 * file, one event a transaction or all in one. */
static void write_mixed(const char *host, bool batched)
{
    pano_store *s = writer(host, NULL);
    char err[256];
    const char *values = VALUES(1, 100, 5); /* as the deltas' test writes them */
    const char *end = "\"exitcode\":0,\"signal\":0,\"duration\":3,\"final\":{}";
    char transfer[512];
    snprintf(transfer, sizeof transfer,
             "{\"event\":\"transfer.end\",\"ts\":%.3f,\"event_id\":\"t1\",\"wf_uuid\":\"" WF
             "\",\"dag_job_id\":\"j1\",\"hostname\":\"node-1\"}",
             base + 104);
    if (batched)
        ck_assert_int_eq(pano_store_begin(s, err, sizeof err), 0);
    /* (the makers' buffers are reused: each put at once) */
    stored(s, run_event("start", "j1", 100, "s0", "\"argv\":[\"x\"]"));
    stored(s, run_event("online", "j1", 101, "s1", values));
    stored(s, run_event("online", "j1", 102, "s2", values));
    for (int copy = 0; copy < 2; copy++) {
        ck_assert_int_eq(put(s, run_event("end", "j1", 103, "e1", end), err, sizeof err),
                         copy ? PANO_STORE_DUPLICATE : PANO_STORE_STORED);
        ck_assert_int_eq(put(s, inst_event("main.end", 103, "i2", ",\"exitcode\":0"), err, sizeof err),
                         copy ? PANO_STORE_DUPLICATE : PANO_STORE_STORED);
    }
    stored(s, run_event("online", "j1", 104, "s3", values));
    stored(s, inst_event("main.start", 100, "i1", ""));
    stored(s, transfer);
    if (batched)
        ck_assert_int_eq(pano_store_commit(s, err, sizeof err), 0);
    pano_store_close(s);
}

START_TEST(summaries_count_exactly_the_events_written)
{
    base = (double)(time(NULL) / 1000 * 1000) - 10000;
    write_mixed("one", false);
    write_mixed("batch", true);
    for (int i = 0; i < 2; i++) {
        const char *host = i ? "batch" : "one";
        /* the run: start, 3 samples, end (its copy not counted); its closing sample apart */
        ck_assert_int_eq(ask_file(host, "SELECT n FROM summaries WHERE kind = 'run'"), 5);
        ck_assert_int_eq(ask_file(host, "SELECT closing FROM summaries WHERE kind = 'run'"), 1);
        ck_assert_int_eq(ask_file(host, "SELECT count(*) FROM events WHERE event LIKE 'kickstart.inv.%'"),
                         6);
        ck_assert_int_eq(ask_file(host, "SELECT json_extract(doc, '$.add.sn') FROM summaries"
                                        " WHERE kind = 'run'"),
                         3);
        ck_assert_int_eq(ask_file(host, "SELECT open FROM summaries WHERE kind = 'run'"), 0);
        ck_assert_int_eq(ask_file(host, "SELECT json_extract(doc, '$.max.end') FROM summaries"
                                        " WHERE kind = 'run'"),
                         1);
        /* the instance (its end once) and the transfer */
        ck_assert_int_eq(ask_file(host, "SELECT n FROM summaries WHERE kind = 'inst'"), 2);
        ck_assert_int_eq(ask_file(host, "SELECT open FROM summaries WHERE kind = 'inst'"), 0);
        ck_assert_int_eq(ask_file(host, "SELECT n FROM summaries WHERE kind = 'side'"), 1);
        ck_assert_int_eq(ask_file(host, "SELECT count(*) FROM summaries WHERE wf_uuid = '" WF "'"), 3);
    }
    /* one transaction or ten: the same documents */
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM summaries a JOIN b.summaries b USING (id)"
             " WHERE a.doc = b.doc AND a.n = b.n AND a.closing = b.closing");
    char path[256];
    snprintf(path, sizeof path, "%s/one" PANO_STORE_SUFFIX, dir);
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    char attach[320];
    snprintf(attach, sizeof attach, "ATTACH '%s/batch" PANO_STORE_SUFFIX "' AS b", dir);
    ck_assert_int_eq(sqlite3_exec(db, attach, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    ck_assert_int_eq(sqlite3_column_int(st, 0), 3);
    sqlite3_finalize(st);
    sqlite3_close(db);
    /* the readers' view holds both files' */
    ck_assert_int_eq(ask("SELECT count(*) FROM summaries"), 6);

    /* a file written before summaries (the table gone): those written from
     * then on counted, so that they count fewer than its events */
    snprintf(path, sizeof path, "%s/one" PANO_STORE_SUFFIX, dir);
    ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(db, "DROP TABLE summaries", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    pano_store *s = writer("one", NULL);
    stored(s, run_event("online", "j1", 105, "s4", VALUES(2, 1, 6)));
    pano_store_close(s);
    ck_assert_int_eq(ask_file("one", "SELECT sum(n + closing) FROM summaries"), 1);
    ck_assert_int_eq(ask_file("one", "SELECT count(*) FROM events WHERE event LIKE 'kickstart.inv.%'"),
                     7);
}
END_TEST

/* The figures' rows that the file's events, counted again, do not give,
 * and the other way round. */
#define FIGURES_OF_EVENTS                                                                    \
    "SELECT wf_uuid, stream, event, \"wf_label\", \"dax_label\", \"delta\", count(*), min(ts)," \
    " max(ts) FROM events GROUP BY wf_uuid, stream, event,"                                  \
    " json_array(\"wf_label\", \"dax_label\", \"delta\")"
#define FIGURES                                                                                \
    "SELECT wf_uuid, stream, event, \"wf_label\", \"dax_label\", \"delta\", n, first, last" \
    " FROM figures"
/* per second (the events' times are whole milliseconds) */
#define MS "CAST(round(ts * 1000) AS INTEGER)"
#define SECONDS_OF_EVENTS                                                                     \
    "SELECT wf_uuid, stream, event, \"wf_label\", \"dax_label\", \"delta\", " MS " / 1000,"  \
    " count(*), sum(" MS "), min(" MS "), max(" MS "), total(\"delta.rss\"),"                 \
    " total(\"delta.rss\" * " MS "), total(\"delta.utime\") FROM events GROUP BY wf_uuid,"     \
    " stream, event, json_array(\"wf_label\", \"dax_label\", \"delta\"), " MS " / 1000"
#define SECONDS                                                                              \
    "SELECT wf_uuid, stream, event, \"wf_label\", \"dax_label\", \"delta\", second, n, ms,"   \
    " first, last, \"delta.rss\", \"delta.rss@ms\", \"delta.utime\" FROM seconds"
#define FIGURES_ASTRAY                                                                       \
    "SELECT (SELECT count(*) FROM (" FIGURES " EXCEPT " FIGURES_OF_EVENTS "))"              \
    " + (SELECT count(*) FROM (" FIGURES_OF_EVENTS " EXCEPT " FIGURES "))"                  \
    " + (SELECT count(*) FROM (" SECONDS " EXCEPT " SECONDS_OF_EVENTS "))"                  \
    " + (SELECT count(*) FROM (" SECONDS_OF_EVENTS " EXCEPT " SECONDS "))"

static char *labelled(const char *id, double ts, const char *label)
{
    static char buf[256];
    snprintf(buf, sizeof buf,
             "{\"event\":\"stampede.xwf.start\",\"ts\":%.3f,\"event_id\":\"%s\","
             "\"wf_uuid\":\"" WF "\"%s%s%s}",
             ts, id, label ? ",\"wf_label\":\"" : "", label ? label : "", label ? "\"" : "");
    return buf;
}

START_TEST(figures_count_exactly_the_events)
{
    base = (double)(time(NULL) / 1000 * 1000) - 10000;
    double now = (double)time(NULL);
    pano_store *s = writer("node1", NULL);
    char err[256];
    stored(s, labelled("a", now - 400 * 86400.0, "x"));
    stored(s, labelled("b", now - 50, "x"));
    stored(s, labelled("c", now - 40, "y"));
    stored(s, labelled("d", now - 30, NULL));
    /* changes of other types than samples': a text, as SQLite's total()
     * makes it a number; a product by the milliseconds past 64 bits */
    char odd[512];
    snprintf(odd, sizeof odd,
             "{\"event\":\"stampede.xwf.end\",\"ts\":%.3f,\"event_id\":\"t\","
             "\"wf_uuid\":\"" WF "\",\"delta\":{\"rss\":\"12.5\",\"utime\":\"x\","
             "\"vm\":9000000000000000000,\"procs\":-3}}",
             now - 25);
    stored(s, odd);
    /* a copy and a refused event count nothing */
    ck_assert_int_eq(put(s, labelled("b", now - 50, "x"), err, sizeof err),
                     PANO_STORE_DUPLICATE);
    ck_assert_int_eq(put(s, "{\"event\":\"x\", oops", err, sizeof err), PANO_STORE_REJECTED);
    /* a run's samples, with the changes the store adds, in one transaction */
    ck_assert_int_eq(pano_store_begin(s, err, sizeof err), 0);
    stored(s, run_event("start", "j1", 100, "s0", "\"argv\":[\"x\"]"));
    stored(s, run_event("online", "j1", 101, "s1", VALUES(1, 5, 3)));
    stored(s, run_event("online", "j1", 102, "s2", VALUES(2, 6, 4)));
    ck_assert_int_eq(pano_store_commit(s, err, sizeof err), 0);
    pano_store_close(s);
    ck_assert_int_eq(ask_file("node1", FIGURES_ASTRAY), 0);
    ck_assert_int_eq(ask_file("node1", "SELECT sum(n) FROM figures"), 8);
    ck_assert_int_eq(ask_file("node1", "SELECT n FROM figures WHERE \"wf_label\" = 'x'"), 2);
    ck_assert_int_eq(ask_file("node1", "SELECT sum(n) FROM figures WHERE \"delta\" = 1"), 3);
    ck_assert_int_eq(ask_file("node1", "SELECT \"delta.rss\" * 2 FROM seconds"
                                       " WHERE event = 'stampede.xwf.end'"),
                     25);
    ck_assert_int_eq(ask_file("node1", "SELECT \"delta.vm@ms\" > 9e18 * 1e12 FROM seconds"
                                       " WHERE event = 'stampede.xwf.end'"),
                     1);
    /* two samples, a second apart: 5 - 0 and 6 - 5 kB of rss, 1 and 1 s of utime */
#define SAMPLES " FROM seconds WHERE event = 'kickstart.inv.online'"
    ck_assert_int_eq(ask_file("node1", "SELECT count(*)" SAMPLES " AND \"delta\" = 1"), 2);
    ck_assert_int_eq(ask_file("node1", "SELECT sum(\"delta.rss\")" SAMPLES), 6);
    ck_assert_int_eq(ask_file("node1", "SELECT sum(\"delta.utime\")" SAMPLES), 2);
    /* a reader of one file reads them; of two, which may share an event, not */
    ck_assert_int_eq(ask("SELECT count(*) FROM temp.sqlite_master WHERE name = 'figures'"), 1);

    /* retention: what is deleted is no longer counted */
    s = writer("node1", "30d");
    pano_store_close(s);
    ck_assert_int_eq(ask_file("node1", FIGURES_ASTRAY), 0);
    ck_assert_int_eq(ask_file("node1", "SELECT n FROM figures WHERE \"wf_label\" = 'x'"), 1);
    ck_assert_int_eq(ask_file("node1", "SELECT sum(n) FROM seconds WHERE \"wf_label\" = 'x'"), 1);

    /* a file written before figures, with the shorter indexes of those
     * days: counted whole, its indexes made again, when a writer opens it */
    char path[256];
    snprintf(path, sizeof path, "%s/node1" PANO_STORE_SUFFIX, dir);
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(db,
                                  "DROP TABLE figures; DROP TABLE seconds;"
                                  " DROP INDEX events_by_workflow;"
                                  " CREATE INDEX events_by_workflow ON events (wf_uuid, stream,"
                                  " event, ts, \"wf_label\", \"dax_label\", \"delta\");"
                                  " DROP INDEX events_by_root;"
                                  " CREATE INDEX events_by_root ON events (\"root_xwf_id\");"
                                  /* the summaries' rows in the order written */
                                  " ALTER TABLE summaries RENAME TO s;"
                                  " DROP INDEX summaries_by_workflow;"
                                  " CREATE TABLE summaries (id TEXT NOT NULL UNIQUE,"
                                  " wf_uuid TEXT NOT NULL, kind TEXT NOT NULL,"
                                  " stream TEXT NOT NULL, job TEXT, open INTEGER NOT NULL,"
                                  " failed INTEGER NOT NULL, t0 REAL, last REAL,"
                                  " n INTEGER NOT NULL, closing INTEGER NOT NULL,"
                                  " doc TEXT NOT NULL);"
                                  " INSERT INTO summaries SELECT * FROM s; DROP TABLE s;"
                                  " CREATE INDEX summaries_by_workflow ON summaries (wf_uuid, kind)",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    int64_t summaries = ask_file("node1", "SELECT count(*) FROM summaries");
    ck_assert_int_ge(summaries, 1);
    int64_t counted = ask_file("node1", "SELECT sum(n + closing) FROM summaries");
    ck_assert_int_eq(ask("SELECT count(*) FROM temp.sqlite_master WHERE name = 'figures'"), 0);
    s = writer("node1", NULL);
    stored(s, labelled("e", now - 20, "x"));
    pano_store_close(s);
    ck_assert_int_eq(ask_file("node1", FIGURES_ASTRAY), 0);
    ck_assert_int_eq(ask_file("node1", "SELECT sum(n) FROM figures"), 8);
    ck_assert_int_eq(ask_file("node1", "SELECT count(*) FROM pragma_index_info('events_by_workflow')"),
                     22);
    /* the summaries kept, in the order of their workflows */
    ck_assert_int_eq(ask_file("node1", "SELECT count(*) FROM summaries"), summaries);
    ck_assert_int_eq(ask_file("node1", "SELECT sum(n + closing) FROM summaries"), counted);
    ck_assert_int_eq(ask_file("node1", "SELECT count(*) FROM pragma_index_list('summaries')"
                                       " WHERE origin = 'pk'"),
                     1);
    ck_assert_int_eq(
        ask_file("node1", "SELECT count(*) FROM pragma_index_info('summaries_by_workflow')"), 7);
    ck_assert_int_eq(ask_file("node1", "SELECT count(*) FROM pragma_index_info('events_by_root')"),
                     3);

    s = writer("node2", NULL);
    stored(s, labelled("b", now - 50, "x"));
    pano_store_close(s);
    ck_assert_int_eq(ask("SELECT count(*) FROM temp.sqlite_master WHERE name = 'figures'"), 0);
}
END_TEST

/* A child making the file of host node1 as another writer would: it opens
 * it and runs first_sql, tells the parent (which returns meanwhile), waits
 * 0.3 s, then finishes: with finish_sql, or else as a pano writer. The
 * parent's child_made checks that it did. */
static pid_t making_file(const char *first_sql, const char *finish_sql)
{
    char path[256];
    snprintf(path, sizeof path, "%s/node1" PANO_STORE_SUFFIX, dir);
    int ready[2];
    ck_assert_int_eq(pipe(ready), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        sqlite3 *db;
        if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
                SQLITE_OK ||
            sqlite3_exec(db, first_sql, NULL, NULL, NULL) != SQLITE_OK ||
            write(ready[1], "x", 1) != 1)
            _exit(1);
        usleep(300000);
        if (finish_sql)
            _exit(sqlite3_exec(db, finish_sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : 1);
        sqlite3_close(db);
        pano_store_close(writer("node1", NULL));
        _exit(0);
    }
    char c;
    ck_assert_int_eq(read(ready[0], &c, 1), 1);
    close(ready[0]);
    close(ready[1]);
    return pid;
}

static void child_made(pid_t pid)
{
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* A writer opening a file another holds locked as it makes it (before it
 * is a WAL file) is told at once that it is locked: it waits, and opens. */
START_TEST(a_writer_waits_for_a_file_being_made)
{
    pid_t pid = making_file("BEGIN IMMEDIATE", "COMMIT");
    pano_store *s = writer("node1", NULL);
    stored(s, event("a", 1764000000));
    pano_store_close(s);
    child_made(pid);
    ck_assert_int_eq(ask("SELECT count(*) FROM events"), 1);
}
END_TEST

/* A reader opening a file a writer has just made, its tables not yet
 * committed, waits for them rather than calling it foreign. */
START_TEST(a_reader_waits_for_a_file_being_made)
{
    pid_t pid = making_file("PRAGMA journal_mode = WAL", NULL);
    char err[512];
    const char *paths[] = {dir};
    sqlite3 *r = pano_store_open_reader(paths, 1, err, sizeof err);
    ck_assert_msg(r, "%s", err);
    ck_assert_int_eq(one_integer(r, "SELECT count(*) FROM events"), 0);
    sqlite3_close(r);
    child_made(pid);
}
END_TEST

/* One integer of sql over the file of host "put", with that of host
 * "queued" attached as q. */
static long long ask_both(const char *sql)
{
    char path[256], attach[320];
    snprintf(path, sizeof path, "%s/put" PANO_STORE_SUFFIX, dir);
    snprintf(attach, sizeof attach, "ATTACH '%s/queued" PANO_STORE_SUFFIX "' AS q", dir);
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(db, attach, NULL, NULL, NULL), SQLITE_OK);
    return one_integer(db, sql);
}

/* Event i of a stream of jobs, one after the other: per job a run (start,
 * 8 samples without delta, end) and its instance (start, end); a copy of
 * every 7th job's end, an unreadable message after every 50th job. NULL
 * past the last. */
#define STREAM_JOBS 1100
#define JOB_EVENTS 15
static const char *stream_event(int i, char *buf, size_t size)
{
    int job = i / JOB_EVENTS, k = i % JOB_EVENTS;
    if (job >= STREAM_JOBS)
        return NULL;
    int as = k == 13 ? 9 : k; /* a copy of the end is the end */
    char name[16], id[32];
    snprintf(name, sizeof name, "j%d", job);
    snprintf(id, sizeof id, "%d-%d", job, as);
    double t = 100 + job * 2 + as * 0.1;
    const char *end = "\"exitcode\":0,\"signal\":0,\"duration\":1,\"final\":{}";
    const char *e;
    char values[256];
    snprintf(values, sizeof values, VALUES(%d, %d, %d), k, 100 * k, 100 * k, 10 * k); /* rss twice */
    if (k == 0)
        e = run_event("start", name, t, id, "\"argv\":[\"x\"]");
    else if (k <= 8)
        e = run_event("online", name, t, id, values);
    else if (k == 9 || (k == 13 && job % 7 == 0))
        e = run_event("end", name, t, id, end);
    else if (k == 10 || k == 11) {
        snprintf(buf, size,
                 "{\"event\":\"stampede.job_inst.main.%s\",\"ts\":%.3f,\"event_id\":\"%s\","
                 "\"wf_uuid\":\"" WF "\",\"job_id\":\"%s\",\"job_inst_id\":1%s}",
                 k == 10 ? "start" : "end", base + t, id, name, k == 11 ? ",\"exitcode\":0" : "");
        return buf;
    } else if (k == 12 && job % 50 == 0)
        e = "{\"event\":\"x\", oops";
    else
        return "";
    snprintf(buf, size, "%s", e);
    return buf;
}

/* Events queued in a batch are written as pano_store_put writes them, the
 * transactions committed on the way (readers see them before the batch
 * ends); a refusal is told at once. */
START_TEST(queued_events_are_written_as_put_writes_them)
{
    base = (double)(time(NULL) / 1000 * 1000) - 10000;
    char buf[1024], err[512];
    int refused = 0;
    for (int queued = 0; queued < 2; queued++) {
        pano_store *s = writer(queued ? "queued" : "put", NULL);
        ck_assert_int_eq(pano_store_begin(s, err, sizeof err), 0);
        const char *e;
        for (int i = 0; (e = stream_event(i, buf, sizeof buf)); i++) {
            if (queued && i == STREAM_JOBS / 2 * JOB_EVENTS) /* the transaction grows old */
                usleep((useconds_t)(PANO_STORE_BATCH_SECONDS * 1.5e6));
            if (!*e)
                continue;
            if (i == 5000) /* another store's dead letter, amid the queued events */
                ck_assert_int_eq(pano_store_keep_refused(s, 1764000000, "elsewhere", "x", "x1", WF,
                                                         "{}", 2, err, sizeof err),
                                 PANO_STORE_REJECTED);
            if (i == 7000) { /* an event too big for the queue: written in its turn */
                char *big = pano_asprintf("{\"event\":\"stampede.xwf.start\",\"ts\":%.3f,"
                                          "\"event_id\":\"big\",\"wf_uuid\":\"" WF "\","
                                          "\"pad\":\"%0100000d\"}",
                                          base + 100, 0);
                pano_store_outcome o =
                    queued ? pano_store_queue(s, NULL, big, strlen(big), err, sizeof err)
                           : pano_store_put(s, NULL, big, strlen(big), err, sizeof err);
                ck_assert_msg(o == PANO_STORE_STORED, "%s", err);
                free(big);
            }
            const char *msg = e;
            pano_store_outcome o = queued ? pano_store_queue(s, NULL, msg, strlen(msg), err, sizeof err)
                                          : pano_store_put(s, NULL, msg, strlen(msg), err, sizeof err);
            if (strstr(msg, "oops")) {
                ck_assert_int_eq(o, PANO_STORE_REJECTED);
                ck_assert_msg(strstr(err, "invalid JSON"), "%s", err);
                refused += queued;
            } else
                ck_assert_msg(o == PANO_STORE_STORED || o == PANO_STORE_DUPLICATE, "%s: %s", msg, err);
        }
        if (queued) {
            /* the writer commits on its own once its transaction is
             * PANO_STORE_BATCH_SECONDS old: the jobs before the pause, 13
             * rows each, are seen before the batch's commit */
            long long seen = 0, before = STREAM_JOBS / 2 * 13;
            for (int wait = 0; wait < 200 && seen < before; wait++) {
                usleep(50000);
                seen = ask_file("queued", "SELECT count(*) FROM events");
            }
            ck_assert_int_ge(seen, before);
        }
        ck_assert_int_eq(pano_store_commit(s, err, sizeof err), 0);
        pano_store_close(s);
    }
    ck_assert_int_eq(refused, STREAM_JOBS / 50);
    /* the same rows: events (with the deltas and closing samples the store
     * makes), summaries, dead letters */
    long long n = ask_both("SELECT count(*) FROM events");
    ck_assert_int_eq(n, ask_both("SELECT count(*) FROM q.events"));
    ck_assert_int_eq(n, ask_both("SELECT count(*) FROM events a JOIN q.events b USING (event_id)"
                                 " WHERE a.doc = b.doc AND a.ts = b.ts AND a.\"delta.rss\" IS b.\"delta.rss\""));
    /* per job: 10 of the run, its closing sample, 2 of the instance; the big one */
    ck_assert_int_eq(n, STREAM_JOBS * 13 + 1);
    ck_assert_int_eq(ask_both("SELECT count(*) FROM events WHERE json_extract(doc, '$.delta_source') = 'store'"),
                     STREAM_JOBS * 9); /* the 8 samples' and the closing one's */
    long long sums = ask_both("SELECT count(*) FROM summaries");
    ck_assert_int_eq(sums, STREAM_JOBS * 2);
    ck_assert_int_eq(sums, ask_both("SELECT count(*) FROM summaries a JOIN q.summaries b USING (id)"
                                    " WHERE a.doc = b.doc AND a.n = b.n AND a.closing = b.closing"));
    ck_assert_int_eq(ask_both("SELECT count(*) FROM dead_letters"), STREAM_JOBS / 50 + 1);
    ck_assert_int_eq(ask_both("SELECT count(*) FROM q.dead_letters"), STREAM_JOBS / 50 + 1);
    ck_assert_int_eq(ask_both("SELECT count(*) FROM (SELECT reason, body FROM dead_letters"
                              " EXCEPT SELECT reason, body FROM q.dead_letters)"),
                     0);
    ck_assert_int_eq(ask_file("queued", FIGURES_ASTRAY), 0);
}
END_TEST

/* A disk that fills while events are queued: the batch's commit says how
 * many were not stored (the others are), and the file stays readable. In
 * a child, whose files may not grow past 8 MiB: the first transaction's
 * 10,000 events fit, not the rest. */
START_TEST(a_full_disk_under_the_queue_is_told_at_commit)
{
    int told[2];
    ck_assert_int_eq(pipe(told), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        struct rlimit small = {8 << 20, 8 << 20};
        signal(SIGXFSZ, SIG_IGN); /* a write past it fails instead */
        if (setrlimit(RLIMIT_FSIZE, &small) < 0)
            _exit(2);
        pano_store *s = writer("node1", NULL);
        char err[512], id[32];
        if (pano_store_begin(s, err, sizeof err) < 0)
            _exit(3);
        for (int i = 0; i < 30000; i++) {
            if (i == 10000) /* its transaction grows old: committed at the next events */
                usleep((useconds_t)(PANO_STORE_BATCH_SECONDS * 1.5e6));
            snprintf(id, sizeof id, "full-%d", i);
            const char *e = event(id, 1764000000 + i * 0.001);
            if (pano_store_queue(s, NULL, e, strlen(e), err, sizeof err) != PANO_STORE_STORED)
                _exit(4);
        }
        int lost = pano_store_commit(s, err, sizeof err);
        pano_store_close(s);
        _exit(lost > 0 && strstr(err, "I/O error") && write(told[1], &lost, sizeof lost) ==
                                                          (ssize_t)sizeof lost
                  ? 0
                  : 5);
    }
    int status, lost = -1;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d", status);
    ck_assert_int_eq(read(told[0], &lost, sizeof lost), (ssize_t)sizeof lost);
    close(told[0]);
    close(told[1]);
    long long stored = ask("SELECT count(*) FROM events");
    ck_assert_int_ge(stored, 10000);
    ck_assert_int_eq(stored + lost, 30000);
}
END_TEST

START_TEST(default_path)
{
    pano_config *cfg = pano_config_new();
    char path[512], err[256];
    setenv("XDG_DATA_HOME", "/data/x", 1);
    ck_assert_int_eq(pano_store_path(cfg, path, sizeof path, err, sizeof err), 0);
    ck_assert_str_eq(path, "/data/x/pano/store");
    unsetenv("XDG_DATA_HOME");
    setenv("HOME", "/home/u", 1);
    ck_assert_int_eq(pano_store_path(cfg, path, sizeof path, err, sizeof err), 0);
    ck_assert_str_eq(path, "/home/u/.local/share/pano/store");
    ck_assert(pano_config_set(cfg, "pano.store", "/s", PANO_CFG_CLI, err, sizeof err) == 0);
    ck_assert_int_eq(pano_store_path(cfg, path, sizeof path, err, sizeof err), 0);
    ck_assert_str_eq(path, "/s");
    pano_config_free(cfg);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("store");
    TCase *tc = tcase_create("store");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, stored_once_by_event_id);
    tcase_add_test(tc, refused_events_are_kept_with_their_reason);
    tcase_add_test(tc, retention_refuses_and_purges);
    tcase_add_test(tc, hosts_write_their_own_files_read_as_one);
    tcase_add_test(tc, more_hosts_than_sqlite_attaches);
    tcase_add_test(tc, a_host_name_never_leaves_the_directory);
    tcase_add_test(tc, foreign_and_newer_files_are_refused);
    tcase_add_test(tc, default_path);
    tcase_add_test(tc, fields_columns_equal_json_extract);
    tcase_add_test(tc, names_keep_their_form_numbers_are_coerced);
    tcase_add_test(tc, samples_without_delta_get_the_indexers_deltas);
    tcase_add_test(tc, a_samples_columns_are_those_of_its_document);
    tcase_add_test(tc, a_writer_knows_its_runs_only_while_the_file_is_its_own);
    tcase_add_test(tc, a_writers_runs_follow_their_starts_and_samples);
    tcase_add_test(tc, summaries_count_exactly_the_events_written);
    tcase_add_test(tc, figures_count_exactly_the_events);
    tcase_add_test(tc, a_writer_waits_for_a_file_being_made);
    tcase_add_test(tc, a_reader_waits_for_a_file_being_made);
    tcase_add_test(tc, queued_events_are_written_as_put_writes_them);
    tcase_add_test(tc, a_full_disk_under_the_queue_is_told_at_commit);
    suite_add_tcase(s, tc);
    return pano_test_run(s);
}
