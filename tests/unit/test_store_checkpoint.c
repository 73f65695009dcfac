/* The embedded store writer's WAL copied on a thread of its own
 * (lib/store_checkpoint.c): the thread copies, the WAL starts again from
 * its beginning and stays bounded, every row is in the file after; a
 * reader holding an old snapshot lets the WAL grow (as SQLite's own
 * checkpoints would), and it starts again once the reader is done. */
#include "store_checkpoint.h"
#include "testutil.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define PAGES 64      /* the WAL's pages that start a copy: 256 KiB */
#define ROWS 16       /* a commit's rows of 4 KiB: about 20 pages */
#define COMMITS 400   /* about 26 MB in all */

static char dir[64];
static char file[80], wal[96];

static sqlite3 *open_file(void)
{
    sqlite3 *db = NULL;
    ck_assert_int_eq(sqlite3_open_v2(file, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL),
                     SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;"
                                      "CREATE TABLE IF NOT EXISTS t (x BLOB)",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    return db;
}

static long long size_of(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : 0;
}

static long long count_rows(sqlite3 *db)
{
    sqlite3_stmt *st;
    ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT count(*) FROM t", -1, &st, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    long long n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

/* COMMITS commits of ROWS rows of 4 KiB; the WAL file's largest size. */
static long long write_commits(sqlite3 *db, int commits)
{
    sqlite3_stmt *ins;
    ck_assert_int_eq(sqlite3_prepare_v2(db, "INSERT INTO t VALUES (randomblob(4096))", -1, &ins, NULL),
                     SQLITE_OK);
    long long largest = 0;
    for (int c = 0; c < commits; c++) {
        ck_assert_int_eq(sqlite3_exec(db, "BEGIN", NULL, NULL, NULL), SQLITE_OK);
        for (int r = 0; r < ROWS; r++) {
            ck_assert_int_eq(sqlite3_step(ins), SQLITE_DONE);
            sqlite3_reset(ins);
        }
        ck_assert_int_eq(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
        long long now = size_of(wal);
        if (now > largest)
            largest = now;
    }
    sqlite3_finalize(ins);
    return largest;
}

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/pano-ckpt-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(file, sizeof file, "%s/t.sqlite", dir);
    snprintf(wal, sizeof wal, "%s-wal", file);
}

static void teardown(void)
{
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}

START_TEST(the_thread_copies_and_the_wal_starts_again)
{
    sqlite3 *db = open_file();
    char err[256] = "";
    store_checkpointer *c = store_checkpointer_new(db, file, PAGES, err, sizeof err);
    ck_assert_msg(c != NULL, "%s", err);
    long long largest = write_commits(db, COMMITS);
    unsigned long copies = store_checkpointer_copies(c);
    /* every cycle copies at least PAGES pages on the thread */
    ck_assert_msg(copies >= 20, "the thread copied %lu times", copies);
    /* four times PAGES while the thread copies, and a commit more */
    long long bound = (4 * PAGES + 2 * ROWS + 8) * (4096 + 24) + 32;
    ck_assert_msg(largest <= bound, "the WAL reached %lld bytes (bound %lld)", largest, bound);
    ck_assert_msg(size_of(file) > 20 * 1024 * 1024, "the file holds %lld bytes", size_of(file));
    store_checkpointer_free(c);
    ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
    db = open_file();
    ck_assert_int_eq(count_rows(db), (long long)COMMITS * ROWS);
    sqlite3_close(db);
}
END_TEST

START_TEST(a_reader_holding_a_snapshot_lets_the_wal_grow_until_it_is_done)
{
    sqlite3 *db = open_file(), *reader = open_file();
    char err[256] = "";
    store_checkpointer *c = store_checkpointer_new(db, file, PAGES, err, sizeof err);
    ck_assert_msg(c != NULL, "%s", err);
    write_commits(db, 20);
    /* a read transaction keeps its snapshot: nothing after it is copied */
    ck_assert_int_eq(sqlite3_exec(reader, "BEGIN", NULL, NULL, NULL), SQLITE_OK);
    ck_assert_int_eq(count_rows(reader), 20 * ROWS);
    long long held = write_commits(db, 100);
    ck_assert_msg(held > 100LL * ROWS * 4096, "the WAL reached only %lld bytes", held);
    ck_assert_int_eq(sqlite3_exec(reader, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    /* copied whole once the reader is done, then written from its
     * beginning again: the file keeps its size, grown at most by the
     * commit that found it copied */
    unsigned long before = store_checkpointer_copies(c);
    write_commits(db, 20);
    ck_assert_msg(store_checkpointer_copies(c) > before, "no copy once the reader was done");
    long long after = size_of(wal);
    ck_assert_msg(after <= held + (2 * ROWS + 8) * (4096 + 24), "the WAL grew to %lld bytes", after);
    write_commits(db, 40);
    ck_assert_int_eq(size_of(wal), after);
    ck_assert_int_eq(count_rows(reader), 180 * ROWS);
    store_checkpointer_free(c);
    sqlite3_close(reader);
    sqlite3_close(db);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("store_checkpoint");
    TCase *tc = tcase_create("store_checkpoint");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, the_thread_copies_and_the_wal_starts_again);
    tcase_add_test(tc, a_reader_holding_a_snapshot_lets_the_wal_grow_until_it_is_done);
    suite_add_tcase(s, tc);
    return pano_test_run(s);
}
