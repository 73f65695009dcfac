/*
 * pano-workload - tasks of known behaviour for pano-monitor's tests and
 * benchmark. Each mode reports what it did on stdout as one JSON line
 * ("report") unless told otherwise, so a test can compare the monitor's
 * events with the task's own accounting.
 *
 *   burn SECONDS            burn CPU for SECONDS of user time
 *   write N FILE            write exactly N bytes to FILE
 *   tree N SECONDS          fork N short-lived children burning SECONDS of
 *                           CPU together, and one child that calls setsid()
 *                           and leaves an orphan grandchild burning SECONDS;
 *                           waits for all of them; reports the CPU time of
 *                           the whole tree (its own rusage, its children's,
 *                           and the orphan's, sent through a pipe)
 *   name NAME SECONDS N     set its name (comm) to NAME, burn SECONDS, write
 *                           N bytes to /dev/null
 *   payload                 print text with a MONITORING_PAYLOAD block split
 *                           across many small writes, stdout and stderr
 *   sleep SECONDS           sleep
 *   exit CODE               exit with CODE
 *   kill SIGNAL             die of SIGNAL
 *   wait-signal SECONDS     wait up to SECONDS for SIGTERM/SIGINT/SIGHUP/SIGUSR1/
 *                           SIGUSR2/SIGQUIT; exit 100 + the signal number (99: none)
 *   spin N SECONDS          N processes burning CPU for SECONDS of wall time
 *   work N SECONDS          N processes burning SECONDS/N of CPU time each, at
 *                           once (benchmark: fixed work, so wall time shows
 *                           what monitoring takes away)
 *   switch N THREADS HOLD   THREADS threads each sleeping 1 ms N times (a
 *                           voluntary context switch each), then two more
 *                           spinning 0.1 s each on one CPU (the scheduler
 *                           takes it from one for the other: involuntary
 *                           switches, whatever else the machine runs), then
 *                           all kept alive HOLD seconds; reports the
 *                           process's own voluntary switches (getrusage)
 *                           before they end
 *   touch MB HOLD COPIES    write MB MiB of private memory, fork COPIES-1
 *                           copies sharing it, and hold HOLD seconds
 *   tcp FAMILY BYTES HOLD   over loopback TCP (FAMILY 4 or 6), a client sends
 *                           BYTES to the server it connected to, which
 *                           answers BYTES/2; both held open HOLD seconds,
 *                           closed, then HOLD seconds more; reports the
 *                           payload bytes sent and received, both ends
 *   tcp-exec FAMILY BYTES HOLD
 *                           the same connection; a child execs `tcp-write`
 *                           with the client socket, the parent closes its
 *                           own copy and reads BYTES from the server end
 *   tcp-write FD BYTES HOLD write BYTES to the inherited FD, hold HOLD seconds
 *   udp BYTES HOLD          send BYTES in datagrams of 1,000 over IPv4
 *                           loopback and receive them, then hold HOLD seconds
 *   lo-up                   bring the loopback interface up (in a network
 *                           namespace of its own: unshare -rn)
 */
#include <errno.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double tv(struct timeval t) { return (double)t.tv_sec + (double)t.tv_usec / 1e6; }

static double cpu_self(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return tv(ru.ru_utime) + tv(ru.ru_stime);
}

static double wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static volatile unsigned long sink;

/* Burn user CPU until this process used `seconds` more of CPU time. */
static void burn(double seconds)
{
    double start = cpu_self();
    while (cpu_self() - start < seconds)
        for (unsigned long i = 0; i < 200000; i++)
            sink += i * i;
}

static void spin_wall(double seconds)
{
    double end = wall() + seconds;
    while (wall() < end)
        for (unsigned long i = 0; i < 200000; i++)
            sink += i * i;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Write exactly n bytes to fd. */
static int write_n(int fd, long long n)
{
    char buf[65536];
    memset(buf, 'x', sizeof buf);
    while (n > 0) {
        size_t chunk = n > (long long)sizeof buf ? sizeof buf : (size_t)n;
        if (write_all(fd, buf, chunk) < 0) {
            perror("write");
            return -1;
        }
        n -= (long long)chunk;
    }
    return 0;
}

static int write_bytes(const char *path, long long n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) {
        perror(path);
        return 1;
    }
    int rc = write_n(fd, n) < 0 ? 1 : 0;
    close(fd);
    return rc;
}

static int tree(int n, double seconds)
{
    /* Short-lived children. */
    for (int i = 0; i < n; i++) {
        pid_t c = fork();
        if (c < 0) {
            perror("fork");
            return 1;
        }
        if (c == 0) {
            burn(seconds / n);
            _exit(0);
        }
        if (i % 8 == 7) /* a few at a time: many births and deaths */
            while (waitpid(-1, NULL, WNOHANG) > 0)
                ;
    }
    /* A child that leaves the session and an orphan behind. */
    int fds[2];
    if (pipe(fds) < 0) {
        perror("pipe");
        return 1;
    }
    pid_t c = fork();
    if (c == 0) {
        setsid();
        if (fork() == 0) {
            close(fds[0]);
            burn(seconds);
            char msg[64];
            int len = snprintf(msg, sizeof msg, "%.6f\n", cpu_self());
            if (write_all(fds[1], msg, (size_t)len) < 0)
                _exit(1);
            _exit(0);
        }
        _exit(0);
    }
    close(fds[1]);
    while (wait(NULL) > 0)
        ;
    char buf[64] = "";
    ssize_t got = 0, r;
    while ((r = read(fds[0], buf + got, sizeof buf - 1 - (size_t)got)) > 0)
        got += r;
    buf[got > 0 ? got : 0] = '\0';
    double orphan = atof(buf);
    /* The orphan may not be reaped yet: give it a moment, so the monitor can
     * reap it before we exit (it wrote its report last thing). */
    struct rusage self, kids;
    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_CHILDREN, &kids);
    double total = tv(self.ru_utime) + tv(self.ru_stime) + tv(kids.ru_utime) +
                   tv(kids.ru_stime) + orphan;
    printf("{\"report\":\"tree\",\"cpu\":%.6f,\"orphan_cpu\":%.6f}\n", total, orphan);
    return 0;
}

static int payload(void)
{
    /* A block split at awkward places: inside both markers, inside the JSON,
     * across lines, with a logger prefix before it. */
    const char *pieces[] = {
        "line before\n2024-01-01 INFO pegasus-transfer: @@@MONITORING_PAY",
        "LOAD - START@@@{\"ts\": 1700000000, \"monitoring_event\": \"custom.payload_test\",\n",
        " \"payload\": [{\"src\": \"file:///a\", \"bytes\"",
        ": 1024}, {\"src\": \"file:///b\", \"bytes\": 2048}]}@@",
        "@MONITORING_PAYLOAD - E",
        "ND@@@ trailing text\n",
        "@@@ not a marker @@@MONITORING_PAYLOAD - ST no\n",
    };
    for (size_t i = 0; i < sizeof pieces / sizeof pieces[0]; i++) {
        if (write_all(1, pieces[i], strlen(pieces[i])) < 0)
            return 1;
        usleep(20000);
    }
    const char *err = "err: @@@MONITORING_PAYLOAD - START@@@{\"monitoring_event\": "
                      "\"bad name!\", \"payload\": [{}]}@@@MONITORING_PAYLOAD - END@@@\n";
    if (write_all(2, err, strlen(err)) < 0)
        return 1;
    return 0;
}

static int wait_signal(double seconds)
{
    sigset_t set;
    sigemptyset(&set);
    int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGQUIT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaddset(&set, sigs[i]);
    sigprocmask(SIG_BLOCK, &set, NULL);
    /* Tell the test we are ready. */
    printf("ready\n");
    fflush(stdout);
    struct timespec ts = {(time_t)seconds, 0};
    int s = sigtimedwait(&set, NULL, &ts);
    return s > 0 ? 100 + s : 99;
}

/* switch: a thread's sleeps, then the barrier where all wait. */
static int switches;
static pthread_barrier_t switched;

static void *sleeper(void *arg)
{
    (void)arg;
    for (int i = 0; i < switches; i++) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    pthread_barrier_wait(&switched);
    return NULL;
}

static void *spinner(void *arg)
{
    (void)arg;
    spin_wall(0.1);
    return NULL;
}

/* Two threads spinning on one CPU of this process's, at once. */
static int spin_on_one_cpu(void)
{
    cpu_set_t mine, one;
    if (sched_getaffinity(0, sizeof mine, &mine) != 0)
        return -1;
    CPU_ZERO(&one);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &mine)) {
            CPU_SET(c, &one);
            break;
        }
    pthread_attr_t attr;
    pthread_t t[2];
    if (pthread_attr_init(&attr) != 0 || pthread_attr_setaffinity_np(&attr, sizeof one, &one) != 0)
        return -1;
    int made = 0;
    while (made < 2 && pthread_create(&t[made], &attr, spinner, NULL) == 0)
        made++;
    pthread_attr_destroy(&attr);
    for (int i = 0; i < made; i++)
        pthread_join(t[i], NULL);
    return made == 2 ? 0 : -1;
}

static int switch_threads(int n, int threads, double hold)
{
    switches = n;
    pthread_t t[64];
    if (threads < 1 || threads > 64 || pthread_barrier_init(&switched, NULL, (unsigned)threads + 1))
        return 2;
    for (int i = 0; i < threads; i++)
        if (pthread_create(&t[i], NULL, sleeper, NULL) != 0)
            return 2;
    /* every thread done sleeping, none ended: they hold at the barrier */
    struct timespec ms = {0, 1000000};
    while (1) {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        if (ru.ru_nvcsw >= (long)n * threads)
            break;
        nanosleep(&ms, NULL);
    }
    if (spin_on_one_cpu() != 0)
        return 2;
    usleep((useconds_t)(hold * 1e6));
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("{\"report\":\"switch\",\"vol_ctxt\":%ld}\n", ru.ru_nvcsw);
    fflush(stdout);
    pthread_barrier_wait(&switched);
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    return 0;
}

static int touch(long mb, double hold, int copies)
{
    size_t size = (size_t)mb << 20;
    char *p = malloc(size);
    if (!p)
        return 2;
    memset(p, 1, size);
    for (int i = 1; i < copies; i++)
        if (fork() == 0) {
            usleep((useconds_t)(hold * 1e6));
            _exit(p[size - 1] == 1 ? 0 : 1);
        }
    usleep((useconds_t)(hold * 1e6));
    while (wait(NULL) > 0)
        ;
    free(p);
    return 0;
}

/* A TCP connection over loopback: the client's and the server's ends. */
static int tcp_pair(int family, int *client, int *server)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    socklen_t len;
    if (family == 6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_loopback;
        len = sizeof *a;
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        a->sin_family = AF_INET;
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        len = sizeof *a;
    }
    int l = socket(ss.ss_family, SOCK_STREAM, 0);
    if (l < 0 || bind(l, (struct sockaddr *)&ss, len) < 0 || listen(l, 1) < 0 ||
        getsockname(l, (struct sockaddr *)&ss, &len) < 0) {
        perror("listen");
        return -1;
    }
    *client = socket(ss.ss_family, SOCK_STREAM, 0);
    if (*client < 0 || connect(*client, (struct sockaddr *)&ss, len) < 0 ||
        (*server = accept(l, NULL, NULL)) < 0) {
        perror("connect");
        return -1;
    }
    close(l);
    return 0;
}

/* Send n bytes on `from` while reading them on `to`. */
static int xfer(int from, int to, long long n)
{
    static char buf[65536];
    long long sent = 0, got = 0;
    while (sent < n || got < n) {
        bool moved = false;
        if (sent < n) {
            size_t chunk = n - sent > (long long)sizeof buf ? sizeof buf : (size_t)(n - sent);
            ssize_t w = send(from, buf, chunk, MSG_DONTWAIT);
            if (w > 0) {
                sent += w;
                moved = true;
            } else if (w < 0 && errno != EAGAIN && errno != EINTR)
                return -1;
        }
        if (got < n) {
            ssize_t r = recv(to, buf, sizeof buf, MSG_DONTWAIT);
            if (r > 0) {
                got += r;
                moved = true;
            } else if (r == 0 || (errno != EAGAIN && errno != EINTR))
                return -1;
        }
        if (!moved) {
            struct pollfd p[2] = {{from, sent < n ? POLLOUT : 0, 0}, {to, POLLIN, 0}};
            poll(p, 2, 1000);
        }
    }
    return 0;
}

static void hold_for(double seconds) { usleep((useconds_t)(seconds * 1e6)); }

static int tcp(int family, long long bytes, double hold)
{
    int c, s;
    if (tcp_pair(family, &c, &s) < 0 || xfer(c, s, bytes) < 0 || xfer(s, c, bytes / 2) < 0)
        return 1;
    hold_for(hold);
    close(c);
    close(s);
    hold_for(hold);
    printf("{\"report\":\"tcp\",\"sent\":%lld,\"received\":%lld}\n", bytes + bytes / 2,
           bytes + bytes / 2);
    return 0;
}

static int tcp_exec(int family, long long bytes, const char *hold)
{
    int c, s;
    if (tcp_pair(family, &c, &s) < 0)
        return 1;
    pid_t pid = fork();
    if (pid == 0) {
        char fd[16], n[24];
        snprintf(fd, sizeof fd, "%d", c);
        snprintf(n, sizeof n, "%lld", bytes);
        close(s);
        execl("/proc/self/exe", "pano-workload", "tcp-write", fd, n, hold, (char *)NULL);
        _exit(127);
    }
    close(c);
    static char buf[65536];
    long long got = 0;
    while (got < bytes) {
        ssize_t r = read(s, buf, sizeof buf);
        if (r <= 0)
            return 1;
        got += r;
    }
    int status;
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return 1;
    close(s);
    hold_for(atof(hold));
    printf("{\"report\":\"tcp-exec\",\"sent\":%lld,\"received\":%lld}\n", bytes, got);
    return 0;
}

static int tcp_write(int fd, long long bytes, double hold)
{
    if (write_n(fd, bytes) < 0)
        return 1;
    hold_for(hold);
    return 0;
}

static int udp(long long bytes, double hold)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int rx = socket(AF_INET, SOCK_DGRAM, 0), tx = socket(AF_INET, SOCK_DGRAM, 0);
    if (rx < 0 || tx < 0 || bind(rx, (struct sockaddr *)&a, len) < 0 ||
        getsockname(rx, (struct sockaddr *)&a, &len) < 0) {
        perror("udp");
        return 1;
    }
    static char buf[1000];
    long long got = 0;
    for (long long sent = 0; sent < bytes; sent += (long long)sizeof buf) {
        if (sendto(tx, buf, sizeof buf, 0, (struct sockaddr *)&a, len) != (ssize_t)sizeof buf ||
            recv(rx, buf, sizeof buf, 0) != (ssize_t)sizeof buf) {
            perror("udp");
            return 1;
        }
        got += (long long)sizeof buf;
    }
    hold_for(hold);
    printf("{\"report\":\"udp\",\"sent\":%lld,\"received\":%lld}\n", got, got);
    return 0;
}

static int lo_up(void)
{
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0 || ioctl(fd, SIOCGIFFLAGS, &ifr) < 0) {
        perror("lo");
        return 1;
    }
    ifr.ifr_flags |= IFF_UP;
    if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0) {
        perror("lo up");
        return 1;
    }
    close(fd);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: pano-workload MODE ARGS (see the source)\n");
        return 2;
    }
    const char *mode = argv[1];
    if (strcmp(mode, "burn") == 0 && argc == 3) {
        burn(atof(argv[2]));
        printf("{\"report\":\"burn\",\"cpu\":%.6f}\n", cpu_self());
        return 0;
    }
    if (strcmp(mode, "write") == 0 && argc == 4)
        return write_bytes(argv[3], atoll(argv[2]));
    if (strcmp(mode, "tree") == 0 && argc == 4)
        return tree(atoi(argv[2]), atof(argv[3]));
    if (strcmp(mode, "name") == 0 && argc == 5) {
        if (prctl(PR_SET_NAME, argv[2], 0, 0, 0) < 0)
            perror("prctl");
        burn(atof(argv[3]));
        int rc = write_bytes("/dev/null", atoll(argv[4]));
        printf("{\"report\":\"name\",\"cpu\":%.6f}\n", cpu_self());
        return rc;
    }
    if (strcmp(mode, "payload") == 0)
        return payload();
    if (strcmp(mode, "sleep") == 0 && argc == 3) {
        usleep((useconds_t)(atof(argv[2]) * 1e6));
        return 0;
    }
    if (strcmp(mode, "exit") == 0 && argc == 3)
        return atoi(argv[2]);
    if (strcmp(mode, "kill") == 0 && argc == 3) {
        signal(atoi(argv[2]), SIG_DFL);
        raise(atoi(argv[2]));
        return 1;
    }
    if (strcmp(mode, "wait-signal") == 0 && argc == 3)
        return wait_signal(atof(argv[2]));
    if (strcmp(mode, "spin") == 0 && argc == 4) {
        int n = atoi(argv[2]);
        double seconds = atof(argv[3]);
        for (int i = 1; i < n; i++)
            if (fork() == 0) {
                spin_wall(seconds);
                _exit(0);
            }
        spin_wall(seconds);
        while (wait(NULL) > 0)
            ;
        return 0;
    }
    if (strcmp(mode, "work") == 0 && argc == 4) {
        int n = atoi(argv[2]);
        double each = atof(argv[3]) / (n > 0 ? n : 1);
        for (int i = 1; i < n; i++)
            if (fork() == 0) {
                burn(each);
                _exit(0);
            }
        burn(each);
        while (wait(NULL) > 0)
            ;
        return 0;
    }
    if (strcmp(mode, "switch") == 0 && argc == 5)
        return switch_threads(atoi(argv[2]), atoi(argv[3]), atof(argv[4]));
    if (strcmp(mode, "touch") == 0 && argc == 5)
        return touch(atol(argv[2]), atof(argv[3]), atoi(argv[4]));
    if (strcmp(mode, "tcp") == 0 && argc == 5)
        return tcp(atoi(argv[2]), atoll(argv[3]), atof(argv[4]));
    if (strcmp(mode, "tcp-exec") == 0 && argc == 5)
        return tcp_exec(atoi(argv[2]), atoll(argv[3]), argv[4]);
    if (strcmp(mode, "tcp-write") == 0 && argc == 5)
        return tcp_write(atoi(argv[2]), atoll(argv[3]), atof(argv[4]));
    if (strcmp(mode, "udp") == 0 && argc == 4)
        return udp(atoll(argv[2]), atof(argv[3]));
    if (strcmp(mode, "lo-up") == 0)
        return lo_up();
    fprintf(stderr, "pano-workload: bad arguments\n");
    return 2;
}
