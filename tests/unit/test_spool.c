/* The on-disk spool: order, crash safety, the size bound, the lock. */
#include "spool.h"
#include "testutil.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[] = "/tmp/pano-test-spool-XXXXXX";

static void setup(void) { ck_assert_ptr_nonnull(mkdtemp(root)); }

static void teardown(void)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    ck_assert_int_eq(system(cmd), 0);
    strcpy(root, "/tmp/pano-test-spool-XXXXXX");
}

/* Collects what a replay sends; fails from the fail_at-th call on. */
typedef struct {
    char got[16][128];
    int n, fail_at, reject_at;
} collector;

static pano_spool_result collect(void *user, const char *key, const char *id, const char *json,
                                 size_t len, char *err, size_t errlen)
{
    collector *c = user;
    if (c->fail_at && c->n + 1 >= c->fail_at) {
        snprintf(err, errlen, "broker down");
        return PANO_SPOOL_FAILED;
    }
    ck_assert_int_lt(c->n, 16);
    snprintf(c->got[c->n++], 128, "%s|%s|%.*s", key, id ? id : "-", (int)len, json);
    if (c->reject_at && c->n == c->reject_at) {
        snprintf(err, errlen, "unroutable");
        return PANO_SPOOL_REJECTED;
    }
    return PANO_SPOOL_SENT;
}

static void put(pano_spool *sp, const char *key, const char *id, const char *json)
{
    char err[256];
    ck_assert_msg(pano_spool_put(sp, key, id, json, strlen(json), err, sizeof err) == 0, "%s",
                  err);
}

START_TEST(replays_in_order_and_keeps_ids)
{
    char err[256];
    pano_spool *sp = pano_spool_open(root, "amqp://u@h:5672/v/x", 1 << 20, err, sizeof err);
    ck_assert_msg(sp != NULL, "%s", err);
    ck_assert(!pano_spool_pending(sp));
    put(sp, "kickstart.inv.start", "abc-1", "{\"seq\":1}");
    put(sp, "kickstart.inv.online", "abc-2", "{\"seq\":2}");
    put(sp, "kickstart.inv.end", NULL, "{\"seq\":3}");
    ck_assert(pano_spool_pending(sp));

    /* A failure stops the replay and keeps the rest, in order. */
    collector c = {.fail_at = 2};
    ck_assert_int_eq(pano_spool_replay(sp, collect, &c, 0, err, sizeof err), -1);
    ck_assert_int_eq(c.n, 1);
    ck_assert_str_eq(c.got[0], "kickstart.inv.start|abc-1|{\"seq\":1}");

    collector d = {0};
    ck_assert_int_eq(pano_spool_replay(sp, collect, &d, 0, err, sizeof err), 2);
    ck_assert_str_eq(d.got[0], "kickstart.inv.online|abc-2|{\"seq\":2}");
    ck_assert_str_eq(d.got[1], "kickstart.inv.end|-|{\"seq\":3}");
    ck_assert(!pano_spool_pending(sp));
    pano_spool_close(sp);
}
END_TEST

START_TEST(entries_of_others_are_seen_in_a_quiet_spool)
{
    /* A spool found empty long after its last change is then checked by
     * its mtime alone: an entry another process adds is still seen, and
     * so is one added in the same clock tick as a change before it. */
    char err[256];
    pano_spool *mine = pano_spool_open(root, "amqp://u@h:5672/v/x", 1 << 20, err, sizeof err);
    pano_spool *other = pano_spool_open(root, "amqp://u@h:5672/v/x", 1 << 20, err, sizeof err);
    ck_assert_msg(mine && other, "%s", err);
    int dir = open(pano_spool_path(mine), O_RDONLY | O_DIRECTORY);
    ck_assert_int_ge(dir, 0);
    struct timespec old[2] = {{.tv_sec = 1000000000}, {.tv_sec = 1000000000}};
    for (int round = 0; round < 3; round++) {
        ck_assert_int_eq(futimens(dir, old), 0);
        ck_assert(!pano_spool_pending(mine));
        ck_assert(!pano_spool_pending(mine)); /* by the mtime */
        put(other, "custom.metric", "x-1", "{\"seq\":1}");
        ck_assert(pano_spool_pending(mine));
        collector c = {0};
        ck_assert_int_eq(pano_spool_replay(mine, collect, &c, 0, err, sizeof err), 1);
        ck_assert(!pano_spool_pending(mine)); /* changed just now: read again */
    }
    /* Changed within the same tick as the last change: its mtime stays.
     * A directory changed less than a second before it was read is read
     * again every time. */
    ck_assert_int_eq(futimens(dir, (struct timespec[]){{.tv_nsec = UTIME_NOW}, {.tv_nsec = UTIME_NOW}}), 0);
    ck_assert(!pano_spool_pending(mine));
    struct stat before;
    ck_assert_int_eq(fstat(dir, &before), 0);
    put(other, "custom.metric", "x-2", "{\"seq\":2}");
    ck_assert_int_eq(futimens(dir, (struct timespec[]){before.st_atim, before.st_mtim}), 0);
    ck_assert(pano_spool_pending(mine));
    close(dir);
    pano_spool_close(mine);
    pano_spool_close(other);
}
END_TEST

START_TEST(incomplete_entries_are_never_replayed)
{
    char err[256];
    pano_spool *sp = pano_spool_open(root, "dest", 1 << 20, err, sizeof err);
    ck_assert_ptr_nonnull(sp);
    put(sp, "a", "1", "{\"x\":1}");
    /* A writer that crashed before its rename leaves a hidden temporary
     * file; one that wrote a truncated entry (impossible through the API,
     * but disks lie) leaves a bad length. */
    char path[512];
    snprintf(path, sizeof path, "%s/.tmp-00000000000000000001-0000000001-00000001.ev",
             pano_spool_path(sp));
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("PANO-SPOOL 1\nkey=b\nid=2\nlen=7\n\n{\"x\":2}", f);
    fclose(f);
    snprintf(path, sizeof path, "%s/99999999999999999999-0000000001-00000001.ev",
             pano_spool_path(sp));
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("PANO-SPOOL 1\nkey=c\nid=3\nlen=70\n\n{\"x\":", f);
    fclose(f);
    collector c = {0};
    ck_assert_int_eq(pano_spool_replay(sp, collect, &c, 0, err, sizeof err), 1);
    ck_assert_int_eq(c.n, 1);
    ck_assert_str_eq(c.got[0], "a|1|{\"x\":1}");
    ck_assert(!pano_spool_pending(sp));
    pano_spool_close(sp);
}
END_TEST

START_TEST(full_spool_drops_the_oldest)
{
    char err[256];
    /* Each entry takes 41 bytes: room for three. */
    pano_spool *sp = pano_spool_open(root, "dest", 130, err, sizeof err);
    ck_assert_ptr_nonnull(sp);
    char json[32];
    for (int i = 1; i <= 6; i++) {
        snprintf(json, sizeof json, "{\"seq\":%d}", i);
        put(sp, "k", "id", json);
    }
    ck_assert_uint_eq(pano_spool_dropped(sp), 3);
    collector c = {0};
    ck_assert_int_eq(pano_spool_replay(sp, collect, &c, 0, err, sizeof err), 3);
    ck_assert_str_eq(c.got[0], "k|id|{\"seq\":4}");
    ck_assert_str_eq(c.got[2], "k|id|{\"seq\":6}");
    pano_spool_close(sp);
}
END_TEST

/* The one entry file in dir (NULL if none or several); its name in name. */
static char *only_entry(const char *dir, char name[64])
{
    DIR *d = opendir(dir);
    if (!d)
        return NULL;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        if (strstr(de->d_name, ".ev") && n++ == 0)
            snprintf(name, 64, "%.63s", de->d_name);
    closedir(d);
    if (n != 1)
        return NULL;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    static char text[1024];
    size_t got = fread(text, 1, sizeof text - 1, f);
    text[got] = '\0';
    fclose(f);
    return text;
}

START_TEST(rejected_entries_are_put_aside_with_the_reason)
{
    char err[256];
    pano_spool *sp = pano_spool_open(root, "dest", 1 << 20, err, sizeof err);
    ck_assert_ptr_nonnull(sp);
    put(sp, "k", "1", "{}");
    put(sp, "k", "2", "[]");
    collector c = {.reject_at = 1};
    ck_assert_int_eq(pano_spool_replay(sp, collect, &c, 0, err, sizeof err), 1);
    ck_assert_int_eq(c.n, 2);
    ck_assert(!pano_spool_pending(sp));
    /* kept aside, with the reason, and not replayed again */
    char dir[512], name[64];
    snprintf(dir, sizeof dir, "%s/rejected", pano_spool_path(sp));
    char *text = only_entry(dir, name);
    ck_assert_ptr_nonnull(text);
    ck_assert_str_eq(text, "PANO-SPOOL 1\nkey=k\nid=1\nlen=2\nwhy=unroutable\n\n{}");
    collector again = {0};
    ck_assert_int_eq(pano_spool_replay(sp, collect, &again, 0, err, sizeof err), 0);
    ck_assert_int_eq(again.n, 0);
    /* moved back, it is queued again, as it was */
    char from[600], to[600];
    snprintf(from, sizeof from, "%s/%s", dir, name);
    snprintf(to, sizeof to, "%s/%s", pano_spool_path(sp), name);
    ck_assert_int_eq(rename(from, to), 0);
    ck_assert(pano_spool_pending(sp));
    ck_assert_int_eq(pano_spool_replay(sp, collect, &again, 0, err, sizeof err), 1);
    ck_assert_str_eq(again.got[0], "k|1|{}");
    pano_spool_close(sp);
}
END_TEST

START_TEST(rejected_events_are_bounded_and_their_reason_is_one_line)
{
    char err[256];
    pano_spool *sp = pano_spool_open(root, "dest", 200, err, sizeof err);
    ck_assert_ptr_nonnull(sp);
    ck_assert_int_eq(pano_spool_reject(sp, "k", NULL, "{\"a\":1}", 7, "two\nlines", err,
                                       sizeof err), 0);
    char dir[512], name[64];
    snprintf(dir, sizeof dir, "%s/rejected", pano_spool_path(sp));
    char *text = only_entry(dir, name);
    ck_assert_ptr_nonnull(text);
    ck_assert_str_eq(text, "PANO-SPOOL 1\nkey=k\nid=\nlen=7\nwhy=two lines\n\n{\"a\":1}");
    char big[150];
    memset(big, ' ', sizeof big);
    ck_assert_int_eq(pano_spool_reject(sp, "k", "2", big, sizeof big, "no", err, sizeof err), -1);
    ck_assert_msg(strstr(err, "rejected is full"), "%s", err);
    ck_assert_ptr_nonnull(only_entry(dir, name)); /* the first one is kept */
    pano_spool_close(sp);
}
END_TEST

START_TEST(one_replayer_at_a_time)
{
    char err[256];
    pano_spool *a = pano_spool_open(root, "dest", 1 << 20, err, sizeof err);
    pano_spool *b = pano_spool_open(root, "dest", 1 << 20, err, sizeof err);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_str_eq(pano_spool_path(a), pano_spool_path(b));
    put(a, "k", "1", "{}");
    /* Another open file description holding the lock = another process. */
    char lock[512];
    snprintf(lock, sizeof lock, "%s/.lock", pano_spool_path(a));
    int fd = open(lock, O_RDWR);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(flock(fd, LOCK_EX), 0);
    collector c = {0};
    ck_assert_int_eq(pano_spool_replay(b, collect, &c, 0.1, err, sizeof err), -2);
    ck_assert_int_eq(c.n, 0);
    close(fd);
    ck_assert_int_eq(pano_spool_replay(b, collect, &c, 0.1, err, sizeof err), 1);
    /* Another destination has its own directory. */
    pano_spool *other = pano_spool_open(root, "elsewhere", 1 << 20, err, sizeof err);
    ck_assert_ptr_nonnull(other);
    ck_assert_str_ne(pano_spool_path(a), pano_spool_path(other));
    pano_spool_close(other);
    pano_spool_close(a);
    pano_spool_close(b);
}
END_TEST

START_TEST(unsafe_directories_are_refused)
{
    char err[256];
    char dir[512];
    snprintf(dir, sizeof dir, "%s/open", root);
    ck_assert_int_eq(mkdir(dir, 0777), 0);
    ck_assert_int_eq(chmod(dir, 0777), 0);
    ck_assert_ptr_null(pano_spool_open(dir, "dest", 1 << 20, err, sizeof err));
    ck_assert_msg(strstr(err, "writable by others"), "%s", err);
    /* A fresh one is created private. */
    snprintf(dir, sizeof dir, "%s/a/b", root);
    pano_spool *sp = pano_spool_open(dir, "dest", 1 << 20, err, sizeof err);
    ck_assert_msg(sp != NULL, "%s", err);
    struct stat st;
    ck_assert_int_eq(stat(dir, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0700);
    pano_spool_close(sp);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("spool");
    TCase *tc = tcase_create("spool");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, replays_in_order_and_keeps_ids);
    tcase_add_test(tc, entries_of_others_are_seen_in_a_quiet_spool);
    tcase_add_test(tc, incomplete_entries_are_never_replayed);
    tcase_add_test(tc, full_spool_drops_the_oldest);
    tcase_add_test(tc, rejected_entries_are_put_aside_with_the_reason);
    tcase_add_test(tc, rejected_events_are_bounded_and_their_reason_is_one_line);
    tcase_add_test(tc, one_replayer_at_a_time);
    tcase_add_test(tc, unsafe_directories_are_refused);
    suite_add_tcase(s, tc);
    return pano_test_run(s);
}
