/* pano-monitor's parts: /proc parsing, the process tree, payload capture,
 * custom metrics and the monitor's configuration keys. */
#include "metric.h"
#include "netbytes.h"
#include "payload.h"
#include "proctree.h"
#include "testutil.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- /proc/PID/stat ------------------------------------------------------ */

START_TEST(stat_name_with_spaces_and_parens)
{
    /* comm "a b) c": a parser that stops at the first ')' or splits on
     * spaces reads every later field from the wrong place. */
    const char line[] =
        "4242 (a b) c) R 4241 4242 4241 0 -1 4194304 120 0 0 0 157 23 4 2 20 0 3 0 "
        "987654 10485760 640 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 "
        "31 0 0 0 0 0 0 0 0 0 0\n";
    pano_proc_stat st;
    ck_assert(pano_proc_stat_parse(line, strlen(line), &st));
    ck_assert_int_eq(st.pid, 4242);
    ck_assert_str_eq(st.comm, "a b) c");
    ck_assert_int_eq(st.state, 'R');
    ck_assert_int_eq(st.ppid, 4241);
    ck_assert_uint_eq(st.utime, 157);
    ck_assert_uint_eq(st.stime, 23);
    ck_assert_uint_eq(st.cutime, 4);
    ck_assert_uint_eq(st.cstime, 2);
    ck_assert_int_eq(st.num_threads, 3);
    ck_assert_uint_eq(st.starttime, 987654);
    ck_assert_uint_eq(st.vsize, 10485760);
    ck_assert_int_eq(st.rss, 640);
    ck_assert_uint_eq(st.blkio_ticks, 31);
}
END_TEST

START_TEST(stat_rejects_garbage)
{
    pano_proc_stat st;
    const char *bad[] = {"", "1234", "12 (x", "12 (x) S 1 2", "x (y) S 1 2 3 4 5 6 7 8 9 10"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(!pano_proc_stat_parse(bad[i], strlen(bad[i]), &st), "%s", bad[i]);
    /* Old kernels end before field 42: no iowait, the rest is fine. */
    const char old[] = "7 (sh) S 1 7 7 0 -1 0 0 0 0 0 5 6 0 0 20 0 1 0 100 2000 30 0\n";
    ck_assert(pano_proc_stat_parse(old, strlen(old), &st));
    ck_assert_uint_eq(st.utime, 5);
    ck_assert_uint_eq(st.blkio_ticks, 0);
}
END_TEST

START_TEST(stat_of_a_live_process_named_oddly)
{
    /* The real thing: a child renames itself and the monitor reads it. */
    int ready[2];
    ck_assert_int_eq(pipe(ready), 0);
    pid_t c = fork();
    ck_assert_int_ge(c, 0);
    if (c == 0) {
        prctl(PR_SET_NAME, "a b) c", 0, 0, 0);
        if (write(ready[1], "x", 1) != 1)
            _exit(1);
        pause();
        _exit(0);
    }
    char x;
    ck_assert_int_eq(read(ready[0], &x, 1), 1);
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)c);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    pano_proc_stat st;
    ck_assert(pano_proc_stat_parse(buf, n, &st));
    ck_assert_str_eq(st.comm, "a b) c");
    ck_assert_int_eq(st.pid, c);
    ck_assert_int_eq(st.ppid, getpid());
    ck_assert_int_eq(st.num_threads, 1);
    ck_assert_uint_gt(st.vsize, 0);
    kill(c, SIGKILL);
    waitpid(c, NULL, 0);
    close(ready[0]);
    close(ready[1]);
}
END_TEST

START_TEST(io_parse)
{
    const char text[] = "rchar: 100\nwchar: 200\nsyscr: 3\nsyscw: 4\nread_bytes: 4096\n"
                        "write_bytes: 8192\ncancelled_write_bytes: 0\n";
    pano_proc_io io;
    ck_assert(pano_proc_io_parse(text, strlen(text), &io));
    ck_assert_uint_eq(io.rchar, 100);
    ck_assert_uint_eq(io.wchar, 200);
    ck_assert_uint_eq(io.syscr, 3);
    ck_assert_uint_eq(io.syscw, 4);
    ck_assert_uint_eq(io.read_bytes, 4096);
    ck_assert_uint_eq(io.write_bytes, 8192);
    /* Any order; unknown, partial and missing lines; no final newline. */
    const char other[] = "wchar: 18446744073709551615\nrchar_x: 9\nread_bytes\nsyscw:7";
    ck_assert(pano_proc_io_parse(other, strlen(other), &io));
    ck_assert_uint_eq(io.wchar, UINT64_MAX);
    ck_assert_uint_eq(io.syscw, 7);
    ck_assert_uint_eq(io.rchar, 0);
    ck_assert_uint_eq(io.read_bytes, 0);
    ck_assert(!pano_proc_io_parse("no io here\n", 11, &io));
}
END_TEST

START_TEST(ctxt_and_pss_parse)
{
    /* the end of a status file, as Linux 6.1 writes it */
    const char status[] = "Name:\tbash\nThreads:\t1\nMems_allowed_list:\t0\n"
                          "voluntary_ctxt_switches:\t150\nnonvoluntary_ctxt_switches:\t7\n";
    uint64_t vol = 0, inv = 0;
    ck_assert(pano_proc_ctxt_parse(status, strlen(status), &vol, &inv));
    ck_assert_uint_eq(vol, 150); /* not the "nonvoluntary" line's tail */
    ck_assert_uint_eq(inv, 7);
    ck_assert(!pano_proc_ctxt_parse("Name:\tx\nvoluntary_ctxt_switches:\t3\n", 35, &vol, &inv));
    const char rollup[] = "55d0c3a4e000-7ffd8 ---p 00000000 00:00 0    [rollup]\n"
                          "Rss:                1024 kB\nPss:                 612 kB\n"
                          "Pss_Anon:            100 kB\nShared_Clean:        800 kB\n"
                          "Private_Clean:        24 kB\nPrivate_Dirty:       200 kB\n";
    uint64_t pss = 0, uss = 0;
    ck_assert(pano_proc_pss_parse(rollup, strlen(rollup), &pss, &uss));
    ck_assert_uint_eq(pss, 612); /* not Pss_Anon */
    ck_assert_uint_eq(uss, 224);
    ck_assert(!pano_proc_pss_parse("Rss: 4 kB\nPss: 4 kB\n", 20, &pss, &uss));
}
END_TEST

START_TEST(net_dev_parse)
{
    const char dev[] =
        "Inter-|   Receive                                                |  Transmit\n"
        " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets "
        "errs drop fifo colls carrier compressed\n"
        "    lo:    1000      10    0    0    0     0          0         0     1000      10    "
        "0    0    0     0       0          0\n"
        "  eth0: 123456789 100 0 0 0 0 0 0 987654321 200 0 0 0 0 0 0\n";
    uint64_t rx = 0, tx = 0;
    ck_assert(pano_net_dev_parse(dev, strlen(dev), &rx, &tx));
    ck_assert_uint_eq(rx, 1000 + 123456789ULL);
    ck_assert_uint_eq(tx, 1000 + 987654321ULL);
    ck_assert(!pano_net_dev_parse(dev, 160, &rx, &tx)); /* the headers alone */
    ck_assert_str_eq(pano_net_method_name(0), "none");
    ck_assert_str_eq(pano_net_method_name(PANO_NET_SOCK_DIAG | PANO_NET_NETNS), "sock_diag+netns");
}
END_TEST

/* A TCP connection over IPv4 loopback: the client's end and the server's. */
static void tcp_pair(int *client, int *server)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int l = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(l, 0);
    ck_assert_int_eq(bind(l, (struct sockaddr *)&a, len), 0);
    ck_assert_int_eq(listen(l, 1), 0);
    ck_assert_int_eq(getsockname(l, (struct sockaddr *)&a, &len), 0);
    *client = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_eq(connect(*client, (struct sockaddr *)&a, len), 0);
    *server = accept(l, NULL, NULL);
    ck_assert_int_ge(*server, 0);
    close(l);
}

static void send_bytes(int from, int to, size_t n)
{
    char buf[4096];
    memset(buf, 'x', sizeof buf);
    ck_assert_uint_le(n, sizeof buf);
    ck_assert_int_eq(write(from, buf, n), (ssize_t)n);
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(to, buf, sizeof buf);
        ck_assert_int_gt(r, 0);
        got += (size_t)r;
    }
}

/* Sample until `sent` reaches at least `least` (a peer's delayed ACK takes
 * up to 200 ms), for a second at most. */
static void sample_until(pano_netbytes *n, const pid_t *tree, const uint64_t *ns, size_t procs,
                         uint64_t least, uint64_t *sent, uint64_t *received)
{
    for (int i = 0; i < 100; i++) {
        pano_netbytes_sample(n, tree, ns, procs, sent, received);
        if (*sent >= least)
            return;
        usleep(10000);
    }
}

START_TEST(net_bytes_of_our_own_sockets)
{
    /* this process stands for the tree: its sockets are the task's */
    pano_netbytes *n = pano_netbytes_new();
    pid_t self = getpid();
    uint64_t own_ns = pano_netns_of(self);
    ck_assert_uint_ne(own_ns, 0);
    uint64_t sent, received, was_sent, was_received;
    unsigned m = pano_netbytes_sample(n, &self, &own_ns, 1, &was_sent, &was_received);
    ck_assert_str_eq(pano_net_method_name(m), "sock_diag");
    int c, s;
    tcp_pair(&c, &s);
    send_bytes(c, s, 3000);
    send_bytes(s, c, 1000);
    sample_until(n, &self, &own_ns, 1, was_sent + 4000, &sent, &received);
    /* both ends are ours: 4,000 each way, the SYNs counting a byte or two */
    ck_assert_uint_ge(sent - was_sent, 4000);
    ck_assert_uint_le(sent - was_sent, 4002);
    ck_assert_uint_eq(received - was_received, 4000);
    /* a second descriptor of the same socket counts it once */
    int twin = dup(c);
    send_bytes(twin, s, 500);
    sample_until(n, &self, &own_ns, 1, was_sent + 4500, &sent, &received);
    ck_assert_uint_ge(sent - was_sent, 4500);
    ck_assert_uint_le(sent - was_sent, 4502);
    ck_assert_uint_eq(received - was_received, 4500);
    /* closed: the figures stay (the FINs may add a byte each) */
    close(twin);
    close(c);
    close(s);
    sample_until(n, &self, &own_ns, 1, was_sent + 4502, &sent, &received);
    ck_assert_uint_ge(sent - was_sent, 4500);
    ck_assert_uint_le(sent - was_sent, 4504);
    ck_assert_uint_ge(received - was_received, 4500);
    ck_assert_uint_le(received - was_received, 4502);
    was_sent = sent;
    was_received = received;
    /* sockets of processes outside the tree are not counted */
    tcp_pair(&c, &s);
    send_bytes(c, s, 2000);
    pano_netbytes_sample(n, NULL, NULL, 0, &sent, &received);
    ck_assert_uint_eq(sent, was_sent);
    ck_assert_uint_eq(received, was_received);
    close(c);
    close(s);
    pano_netbytes_free(n);
}
END_TEST

START_TEST(net_bytes_of_a_socket_a_new_child_holds_alone)
{
    /* The tree is read, then its process forks a child and closes its own
     * copy of the client's end: the sample that follows finds that socket
     * in no process it knows. The next one, which knows the child, counts
     * it. */
    pano_netbytes *n = pano_netbytes_new();
    pid_t tree[2] = {getpid(), 0};
    uint64_t ns[2] = {pano_netns_of(0), 0};
    uint64_t sent, received, was_sent, was_received;
    pano_netbytes_sample(n, tree, ns, 1, &was_sent, &was_received);
    int c, s, go[2];
    tcp_pair(&c, &s);
    ck_assert_int_eq(pipe(go), 0);
    pid_t kid = fork();
    ck_assert_int_ge(kid, 0);
    if (kid == 0) {
        char x, buf[3000];
        memset(buf, 'x', sizeof buf);
        close(s);
        if (read(go[0], &x, 1) != 1 || write(c, buf, sizeof buf) != (ssize_t)sizeof buf)
            _exit(1);
        if (read(go[0], &x, 1) != 1) /* hold it until told */
            _exit(1);
        _exit(0);
    }
    close(c);
    pano_netbytes_sample(n, tree, ns, 1, &sent, &received);
    ck_assert_uint_le(sent - was_sent, 2); /* the server's end alone, its SYN */
    ck_assert_int_eq(write(go[1], "x", 1), 1);
    char buf[4096];
    size_t got = 0;
    while (got < 3000) {
        ssize_t r = read(s, buf, sizeof buf);
        ck_assert_int_gt(r, 0);
        got += (size_t)r;
    }
    tree[1] = kid;
    ns[1] = pano_netns_of(kid);
    ck_assert_uint_eq(ns[1], ns[0]);
    sample_until(n, tree, ns, 2, was_sent + 3000, &sent, &received);
    ck_assert_uint_ge(sent - was_sent, 3000);
    ck_assert_uint_le(sent - was_sent, 3002);
    ck_assert_uint_eq(received - was_received, 3000);
    ck_assert_int_eq(write(go[1], "x", 1), 1);
    int status;
    ck_assert_int_eq(waitpid(kid, &status, 0), kid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(s);
    close(go[0]);
    close(go[1]);
    pano_netbytes_free(n);
}
END_TEST

/* ---- the process tree ----------------------------------------------------- */

START_TEST(tree_counts_children_and_the_reaped)
{
    pano_proctree *t = pano_proctree_new(getpid());
    pano_tree_totals a, b, c;
    ck_assert_int_eq(pano_proctree_sample(t, &a), 0);
    ck_assert_uint_eq(a.procs, 0);
    int go[2];
    ck_assert_int_eq(pipe(go), 0);
    pid_t kid = fork();
    ck_assert_int_ge(kid, 0);
    if (kid == 0) {
        char buf[65536] = {0};
        FILE *f = fopen("/dev/null", "w");
        for (int i = 0; i < 16; i++)
            fwrite(buf, 1, sizeof buf, f);
        fclose(f);
        char x;
        if (read(go[0], &x, 1) < 0)
            _exit(1);
        _exit(0);
    }
    usleep(200000);
    ck_assert_int_eq(pano_proctree_sample(t, &b), 0);
    ck_assert_uint_eq(b.procs, 1);
    ck_assert_uint_ge(b.wchar, 16 * 65536);
    ck_assert_uint_gt(b.rss, 0);
    /* It exits; the monitor reads the zombie, then reaps it. */
    ck_assert_int_eq(write(go[1], "x", 1), 1);
    siginfo_t si;
    memset(&si, 0, sizeof si);
    ck_assert_int_eq(waitid(P_PID, (id_t)kid, &si, WEXITED | WNOWAIT), 0);
    pano_proctree_zombie(t, kid);
    struct rusage ru;
    int status;
    ck_assert_int_eq(wait4(kid, &status, 0, &ru), kid);
    pano_proctree_reaped(t, kid, &ru);
    ck_assert_int_eq(pano_proctree_sample(t, &c), 0);
    ck_assert_uint_eq(c.procs, 0);
    /* Cumulative: the exited child still counts. */
    ck_assert_uint_ge(c.wchar, 16 * 65536);
    ck_assert(c.utime >= b.utime);
    ck_assert_uint_ge(c.rss_peak, b.rss);
    pano_proctree_free(t);
    close(go[0]);
    close(go[1]);
}
END_TEST

/* A child that sleeps until killed; or, with a lifeline (the read end of
 * a pipe whose write end the test holds), until the test is gone, so that
 * a test that fails leaves nothing behind. */
static pid_t sleeper(int lifeline)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (lifeline < 0)
            for (;;)
                pause();
        char x;
        while (read(lifeline, &x, 1) < 0 && errno == EINTR)
            ;
        _exit(0);
    }
    return pid;
}

/* Sample until a sample is taken without the children files (no pid
 * allocated on the machine for two samples in a row), at most 20 s. */
static void sample_until_stable(pano_proctree *t, pano_tree_totals *out)
{
    uint64_t before = pano_proctree_stable_walks(t);
    for (int i = 0; i < 4000 && pano_proctree_stable_walks(t) == before; i++) {
        usleep(5000);
        ck_assert_int_eq(pano_proctree_sample(t, out), 0);
    }
    ck_assert_msg(pano_proctree_stable_walks(t) > before,
                  "pids were allocated all the time for 20 s: no stable sample");
}

/* The next sample finds n processes, and so do the stable samples that
 * follow it, which read only the processes already known. */
static void expect_procs(pano_proctree *t, uint64_t n, pano_tree_totals *full,
                         pano_tree_totals *stable)
{
    ck_assert_int_eq(pano_proctree_sample(t, full), 0);
    ck_assert_uint_eq(full->procs, n);
    sample_until_stable(t, stable);
    ck_assert_uint_eq(stable->procs, n);
}

START_TEST(tree_changes_are_seen_after_stable_samples)
{
    /* The test process is the monitor: orphans come back to it. */
    ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    pano_proctree *t = pano_proctree_new(getpid());
    pid_t a = sleeper(-1);
    int report[2];
    ck_assert_int_eq(pipe(report), 0);
    pid_t middle = fork(); /* a child with a child of its own */
    ck_assert_int_ge(middle, 0);
    if (middle == 0) {
        pid_t grandchild = sleeper(-1);
        if (write(report[1], &grandchild, sizeof grandchild) != (ssize_t)sizeof grandchild)
            _exit(1);
        for (;;)
            pause();
    }
    pid_t grandchild;
    ck_assert_int_eq(read(report[0], &grandchild, sizeof grandchild), (ssize_t)sizeof grandchild);
    close(report[0]);
    close(report[1]);
    usleep(100000);
    pano_tree_totals full, stable;
    /* Nothing changes: the known processes are read alone, same totals. */
    expect_procs(t, 3, &full, &stable);
    ck_assert_uint_eq(stable.threads, full.threads);
    ck_assert_uint_eq(stable.vm, full.vm);
    ck_assert(stable.utime == full.utime && stable.stime == full.stime);

    /* A new process (a fork allocates a pid) is found at once. */
    pid_t b = sleeper(-1);
    usleep(20000);
    expect_procs(t, 4, &full, &stable);

    /* The middle one dies: its child comes back to us (no pid allocated)
     * and stays counted; the dead one is gone. */
    ck_assert_int_eq(kill(middle, SIGKILL), 0);
    ck_assert_int_eq(waitpid(middle, NULL, 0), middle);
    expect_procs(t, 3, &full, &stable);

    /* A process ends between samples: gone from the next one. */
    ck_assert_int_eq(kill(a, SIGKILL), 0);
    ck_assert_int_eq(waitpid(a, NULL, 0), a);
    ck_assert_int_eq(pano_proctree_sample(t, &full), 0);
    ck_assert_uint_eq(full.procs, 2);

    /* What is left: b and the orphan, both children of ours now. */
    ck_assert_int_eq(kill(b, SIGKILL), 0);
    ck_assert_int_eq(waitpid(b, NULL, 0), b);
    ck_assert_int_eq(kill(grandchild, SIGKILL), 0);
    ck_assert_int_eq(waitpid(grandchild, NULL, 0), grandchild);
    pano_proctree_free(t);
}
END_TEST

/* How many children the kernel lists for pid (its main thread). */
static int children_of(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)pid, (int)pid);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    int n = 0, child;
    while (fscanf(f, "%d", &child) == 1)
        n++;
    fclose(f);
    return n;
}

START_TEST(forks_outside_the_tree_do_not_unsettle_it)
{
    /* The tree: a child of ours (in a process group of its own, killed at
     * the end) with KIDS children, which forks one more on request. All
     * of them go when the test does (EOF on go or life). A few new pids
     * are looked at instead of a walk (one per 6 processes known): the
     * tree is large enough for other forks not to get in the way. */
    enum { KIDS = 30 };
    int go[2], life[2];
    ck_assert_int_eq(pipe(go), 0);
    ck_assert_int_eq(pipe(life), 0);
    pid_t root = fork();
    ck_assert_int_ge(root, 0);
    if (root == 0) {
        close(go[1]);
        close(life[1]);
        if (setpgid(0, 0) < 0)
            _exit(1);
        for (int i = 0; i < KIDS; i++)
            sleeper(life[0]);
        char x;
        while (read(go[0], &x, 1) == 1)
            sleeper(life[0]);
        _exit(0);
    }
    pano_proctree *t = pano_proctree_new(root);
    pano_tree_totals s;
    for (int i = 0; i < 400; i++) {
        ck_assert_int_eq(pano_proctree_sample(t, &s), 0);
        if (s.procs == KIDS)
            break;
        usleep(5000);
    }
    ck_assert_uint_eq(s.procs, KIDS);
    sample_until_stable(t, &s);

    /* A process outside the tree comes and goes: the tree stays settled
     * (other forks on the machine may unsettle it: tried a few times). */
    bool kept = false;
    for (int i = 0; i < 50 && !kept; i++) {
        usleep(5000);
        ck_assert_int_eq(pano_proctree_sample(t, &s), 0);
        uint64_t before = pano_proctree_stable_walks(t);
        pid_t outsider = fork();
        ck_assert_int_ge(outsider, 0);
        if (outsider == 0)
            _exit(0);
        ck_assert_int_eq(waitpid(outsider, NULL, 0), outsider);
        ck_assert_int_eq(pano_proctree_sample(t, &s), 0);
        ck_assert_uint_eq(s.procs, KIDS);
        kept = pano_proctree_stable_walks(t) == before + 1;
    }
    ck_assert_msg(kept, "every fork outside the tree led to a full walk");

    /* A fork inside it is found by the first sample after the new process
     * is linked to its parent. */
    ck_assert_int_eq(write(go[1], "x", 1), 1);
    for (int i = 0; i < 400 && children_of(root) != KIDS + 1; i++)
        usleep(5000);
    ck_assert_int_eq(children_of(root), KIDS + 1);
    ck_assert_int_eq(pano_proctree_sample(t, &s), 0);
    ck_assert_uint_eq(s.procs, KIDS + 1);
    sample_until_stable(t, &s);
    ck_assert_uint_eq(s.procs, KIDS + 1);

    pano_proctree_free(t);
    ck_assert_int_eq(kill(-root, SIGKILL), 0);
    ck_assert_int_eq(waitpid(root, NULL, 0), root);
    close(go[0]);
    close(go[1]);
    close(life[0]);
    close(life[1]);
}
END_TEST

/* ---- payload capture ------------------------------------------------------ */

typedef struct {
    int complete, oversized, unterminated;
    char last[4096];
} found;

static void on_block(void *user, pano_payload_status status, const char *block, size_t size)
{
    found *f = user;
    if (status == PANO_PAYLOAD_COMPLETE) {
        f->complete++;
        snprintf(f->last, sizeof f->last, "%.*s", (int)size, block);
    } else if (status == PANO_PAYLOAD_OVERSIZED)
        f->oversized++;
    else
        f->unterminated++;
}

static const char sample_text[] =
    "log line\nINFO 12:00 @@@MONITORING_PAYLOAD - START@@@{\"monitoring_event\":\"a.b\",\n"
    "\"payload\":[{\"x\":1}]}@@@MONITORING_PAYLOAD - END@@@ tail\n"
    "@@@@MONITORING_PAYLOAD - START@@@[1]@@@MONITORING_PAYLOAD - END@@@@\n";

START_TEST(markers_split_at_every_position)
{
    size_t len = strlen(sample_text);
    /* Every way of cutting the text in two, and byte by byte. */
    for (size_t cut = 0; cut <= len; cut++) {
        found f = {0};
        pano_payload_scanner *s = pano_payload_scanner_new(1024, on_block, &f);
        pano_payload_feed(s, sample_text, cut);
        pano_payload_feed(s, sample_text + cut, len - cut);
        pano_payload_finish(s);
        ck_assert_msg(f.complete == 2 && !f.unterminated, "cut %zu: %d blocks", cut, f.complete);
        ck_assert_str_eq(f.last, "[1]");
        pano_payload_scanner_free(s);
    }
    found f = {0};
    pano_payload_scanner *s = pano_payload_scanner_new(1024, on_block, &f);
    for (size_t i = 0; i < len; i++)
        pano_payload_feed(s, sample_text + i, 1);
    ck_assert_int_eq(f.complete, 2);
    pano_payload_scanner_free(s);
}
END_TEST

START_TEST(oversized_and_unterminated_blocks)
{
    found f = {0};
    pano_payload_scanner *s = pano_payload_scanner_new(16, on_block, &f);
    const char big[] = PANO_PAYLOAD_START "01234567890123456789012345" PANO_PAYLOAD_END
                                          PANO_PAYLOAD_START "{}" PANO_PAYLOAD_END;
    pano_payload_feed(s, big, strlen(big));
    ck_assert_int_eq(f.oversized, 1);
    ck_assert_int_eq(f.complete, 1);
    ck_assert_str_eq(f.last, "{}");
    pano_payload_feed(s, PANO_PAYLOAD_START "{\"never", 40);
    pano_payload_finish(s);
    ck_assert_int_eq(f.unterminated, 1);
    pano_payload_scanner_free(s);
}
END_TEST

typedef struct {
    pano_json *ev[8];
    int n;
} collected;

static void collect(void *user, pano_json *ev)
{
    collected *c = user;
    ck_assert_int_lt(c->n, 8);
    c->ev[c->n++] = ev;
}

static void free_collected(collected *c)
{
    for (int i = 0; i < c->n; i++)
        pano_json_free(c->ev[i]);
    c->n = 0;
}

START_TEST(blocks_become_events)
{
    pano_config *cfg = pano_config_new();
    pano_source *src = pano_source_new(cfg);
    collected c = {0};
    const char block[] = "{\"ts\": 1700000000, \"monitoring_event\": \"darshan.perf\", "
                         "\"payload\": [{\"nprocs\": 4, \"hostname\": \"other\"}, {\"x\": {\"y\": 1}}]}";
    ck_assert_uint_eq(pano_payload_events(src, "stdout", PANO_PAYLOAD_COMPLETE, block,
                                          strlen(block), collect, &c),
                      2);
    ck_assert_int_eq(c.n, 2);
    ck_assert_str_eq(pano_json_get_str(c.ev[0], "event"), "darshan.perf");
    ck_assert_str_eq(pano_json_get_str(c.ev[0], "monitoring_event"), "darshan.perf");
    double ts;
    ck_assert(pano_json_get_number(c.ev[0], "ts", &ts) && ts == 1700000000.0);
    int64_t v;
    ck_assert(pano_json_get_int(c.ev[0], "nprocs", &v) && v == 4);
    /* The envelope is the monitor's; the item's own value is kept aside. */
    ck_assert_str_ne(pano_json_get_str(c.ev[0], "hostname"), "other");
    ck_assert_str_eq(pano_json_get_str(c.ev[0], "payload_hostname"), "other");
    ck_assert_ptr_nonnull(pano_json_get(c.ev[1], "x"));
    ck_assert(pano_json_get_int(c.ev[1], "seq", &v) && v == 2);
    free_collected(&c);

    /* Without monitoring_event: Pegasus's default name. */
    const char plain[] = "{\"payload\": [{\"k\": 1}]}";
    pano_payload_events(src, "stderr", PANO_PAYLOAD_COMPLETE, plain, strlen(plain), collect, &c);
    ck_assert_str_eq(pano_json_get_str(c.ev[0], "event"), "monitoring.additional");
    free_collected(&c);
    pano_source_free(src);
    pano_config_free(cfg);
}
END_TEST

START_TEST(bad_blocks_become_error_events)
{
    pano_config *cfg = pano_config_new();
    pano_source *src = pano_source_new(cfg);
    const char *bad[] = {
        "not json",
        "[1, 2]",
        "{\"monitoring_event\": \"bad name!\", \"payload\": []}",
        "{\"monitoring_event\": 7, \"payload\": []}",
        "{\"monitoring_event\": \"ok\"}",
        "{\"monitoring_event\": \"ok\", \"payload\": [3]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        collected c = {0};
        ck_assert_uint_eq(pano_payload_events(src, "stdout", PANO_PAYLOAD_COMPLETE, bad[i],
                                              strlen(bad[i]), collect, &c),
                          0);
        ck_assert_msg(c.n == 1, "%s: %d events", bad[i], c.n);
        ck_assert_str_eq(pano_json_get_str(c.ev[0], "event"), "kickstart.payload.error");
        ck_assert_str_eq(pano_json_get_str(c.ev[0], "stream"), "stdout");
        ck_assert_ptr_nonnull(pano_json_get_str(c.ev[0], "error"));
        free_collected(&c);
    }
    collected c = {0};
    pano_payload_events(src, "stderr", PANO_PAYLOAD_OVERSIZED, NULL, 5000000, collect, &c);
    ck_assert_int_eq(c.n, 1);
    int64_t size;
    ck_assert(pano_json_get_int(c.ev[0], "size", &size) && size == 5000000);
    free_collected(&c);
    pano_source_free(src);
    pano_config_free(cfg);
}
END_TEST

/* ---- custom metrics and configuration -------------------------------------- */

START_TEST(metric_events_and_levels)
{
    setenv("PANO_WF_UUID", "wf-1", 1);
    setenv("PANO_MONITOR_LEVEL", "2", 1);
    unsetenv("PANO_AMQP_URL");
    char path[] = "/tmp/pano-test-metric-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    setenv("PANO_OUTPUT", path, 1);
    char err[256];
    pano_metrics *m = pano_metrics_open(NULL, err, sizeof err);
    ck_assert_msg(m != NULL, "%s", err);
    const char *tags[] = {"phase=solve", "grid=512", NULL};
    ck_assert_int_eq(pano_metric(m, "residual", 0.25, 1, tags, err, sizeof err), 0);
    ck_assert_int_eq(pano_metric(m, "detail", 1, 2, NULL, err, sizeof err), 0);
    ck_assert_int_eq(pano_metric(m, "too.detailed", 1, 3, NULL, err, sizeof err), 1);
    const char *badtag[] = {"no-equals", NULL};
    ck_assert_int_eq(pano_metric(m, "x", 1, 1, badtag, err, sizeof err), -1);
    ck_assert_int_eq(pano_metric(m, "", 1, 1, NULL, err, sizeof err), -1);
    pano_metrics_close(m);

    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char line[2048];
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    pano_json *ev = pano_json_parse(line, strlen(line) - 1, 8, err, sizeof err);
    ck_assert_msg(ev != NULL, "%s", err);
    ck_assert_str_eq(pano_json_get_str(ev, "event"), "custom.metric");
    ck_assert_str_eq(pano_json_get_str(ev, "wf_uuid"), "wf-1");
    ck_assert_str_eq(pano_json_get_str(ev, "name"), "residual");
    double v;
    ck_assert(pano_json_get_number(ev, "value", &v) && v == 0.25);
    ck_assert_str_eq(pano_json_get_str(pano_json_get(ev, "tags"), "grid"), "512");
    pano_json_free(ev);
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    ck_assert_ptr_null(fgets(line, sizeof line, f)); /* level 3 was not sent */
    fclose(f);
    unlink(path);
    unsetenv("PANO_OUTPUT");
    unsetenv("PANO_WF_UUID");
    unsetenv("PANO_MONITOR_LEVEL");
}
END_TEST

START_TEST(kickstart_environment_aliases)
{
    setenv("KICKSTART_MON_URL",
           "rabbitmq://u:p@broker:15672/api/exchanges/panorama/monitoring/publish", 1);
    setenv("KICKSTART_MON_INTERVAL", "10", 1);
    unsetenv("PANO_AMQP_URL");
    unsetenv("PEGASUS_AMQP_URL");
    unsetenv("PANO_MONITOR_INTERVAL");
    pano_config *c = pano_config_new();
    char err[256];
    ck_assert_msg(pano_config_load_env(c, err, sizeof err) == 0, "%s", err);
    ck_assert_str_eq(pano_config_str(c, "pano.amqp.url"),
                     "rabbitmq://u:p@broker:15672/api/exchanges/panorama/monitoring/publish");
    ck_assert(pano_config_double(c, "pano.monitor.interval") == 10.0);
    pano_config_free(c);
    /* PEGASUS_AMQP_URL goes first; the interval's range is checked. */
    setenv("PEGASUS_AMQP_URL", "amqp://h/v/x", 1);
    setenv("KICKSTART_MON_INTERVAL", "0.01", 1);
    c = pano_config_new();
    ck_assert_int_eq(pano_config_load_env(c, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "KICKSTART_MON_INTERVAL"), "%s", err);
    ck_assert_str_eq(pano_config_str(c, "pano.amqp.url"), "amqp://h/v/x");
    pano_config_free(c);
    unsetenv("KICKSTART_MON_URL");
    unsetenv("KICKSTART_MON_INTERVAL");
    unsetenv("PEGASUS_AMQP_URL");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("monitor");
    TCase *tc = tcase_create("monitor");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, stat_name_with_spaces_and_parens);
    tcase_add_test(tc, stat_rejects_garbage);
    tcase_add_test(tc, stat_of_a_live_process_named_oddly);
    tcase_add_test(tc, io_parse);
    tcase_add_test(tc, ctxt_and_pss_parse);
    tcase_add_test(tc, net_dev_parse);
    tcase_add_test(tc, net_bytes_of_our_own_sockets);
    tcase_add_test(tc, net_bytes_of_a_socket_a_new_child_holds_alone);
    tcase_add_test(tc, tree_counts_children_and_the_reaped);
    tcase_add_test(tc, tree_changes_are_seen_after_stable_samples);
    tcase_add_test(tc, forks_outside_the_tree_do_not_unsettle_it);
    tcase_add_test(tc, markers_split_at_every_position);
    tcase_add_test(tc, oversized_and_unterminated_blocks);
    tcase_add_test(tc, blocks_become_events);
    tcase_add_test(tc, bad_blocks_become_error_events);
    tcase_add_test(tc, metric_events_and_levels);
    tcase_add_test(tc, kickstart_environment_aliases);
    suite_add_tcase(s, tc);
    return pano_test_run(s);
}
