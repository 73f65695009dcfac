#include "netbytes.h"

#include "log.h"
#include "mem.h"

#include <dirent.h>
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* At most this many network namespaces of the task are followed. */
#define MAX_NETNS 64
/* Room for a few dozen sockets' replies a read. */
#define DIAG_BUF 65536

/* TCP states dumped: all but LISTEN (nothing moves), TIME_WAIT and
 * SYN_RECV (kernel minisockets, without tcp_info). */
#define DUMP_STATES                                                                            \
    (((1u << 12) - 1) & ~((1u << 10) | (1u << 6) | (1u << 3))) /* TCP_LISTEN, _TIME_WAIT, _SYN_RECV */

typedef enum { UNKNOWN, FOREIGN, TREE } owner;

/* A TCP socket of the monitor's namespace owned by the monitor's user, as
 * last read, named by its cookie (stable for its whole life, also after
 * its descriptors are closed, when the kernel reports its inode as 0). */
typedef struct {
    uint64_t cookie;
    uint64_t inode;
    uint64_t acked, received;
    owner owner;
} tcp_sock;

typedef struct {
    uint64_t inode;
    uint64_t rx, tx; /* largest read */
    unsigned round;  /* last read in this sample */
} namespace;

struct pano_netbytes {
    int diag_fd;    /* dumps; -1 when sock_diag is not available */
    int destroy_fd; /* the kernel's notices of destroyed TCP sockets, or -1 */
    bool no_compat; /* the kernel refused the dump of both families at once */
    uint32_t seq;
    uint64_t own_netns;
    uid_t uid;
    tcp_sock *socks, *next; /* last dump and the one under way, by cookie */
    size_t nsocks, nnext, cap;
    tcp_sock *gone; /* the tree's sockets gone from the last dump, by cookie */
    size_t ngone, gone_cap;
    pid_t *pids; /* the tree's processes in our namespace last sample, sorted */
    size_t npids, pids_cap;
    uint64_t closed_sent, closed_received;
    namespace ns[MAX_NETNS];
    size_t nns;
    bool ns_full_logged;
    unsigned round;
    unsigned methods; /* used so far */
    uint64_t last_sent, last_received;
    char *buf;
};

/* ---- helpers ------------------------------------------------------------------ */

static int by_cookie(const void *a, const void *b)
{
    uint64_t x = ((const tcp_sock *)a)->cookie, y = ((const tcp_sock *)b)->cookie;
    return x < y ? -1 : x > y;
}

static tcp_sock *find_sock(tcp_sock *v, size_t n, uint64_t cookie)
{
    tcp_sock key = {.cookie = cookie};
    return n ? bsearch(&key, v, n, sizeof *v, by_cookie) : NULL;
}

static int by_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

uint64_t pano_netns_of(pid_t pid)
{
    char path[48];
    struct stat st;
    if (pid > 0)
        snprintf(path, sizeof path, "/proc/%d/ns/net", (int)pid);
    else
        snprintf(path, sizeof path, "/proc/self/ns/net");
    return stat(path, &st) == 0 ? (uint64_t)st.st_ino : 0;
}

pano_netbytes *pano_netbytes_new(void)
{
    pano_netbytes *n = pano_calloc(1, sizeof *n);
    n->buf = pano_malloc(DIAG_BUF);
    n->uid = geteuid();
    n->own_netns = pano_netns_of(0);
    n->diag_fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (n->diag_fd < 0)
        pano_warn("network bytes: no socket diagnostics (%s): TCP bytes are not counted",
                  strerror(errno));
    n->destroy_fd =
        socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_SOCK_DIAG);
    if (n->destroy_fd >= 0) {
        struct sockaddr_nl sa = {.nl_family = AF_NETLINK,
                                 .nl_groups = (1u << (SKNLGRP_INET_TCP_DESTROY - 1)) |
                                              (1u << (SKNLGRP_INET6_TCP_DESTROY - 1))};
        if (bind(n->destroy_fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
            pano_debug("network bytes: no notices of closed sockets (%s): a closed socket "
                       "keeps the figures of the last sample",
                       strerror(errno));
            close(n->destroy_fd);
            n->destroy_fd = -1;
        }
    }
    return n;
}

void pano_netbytes_free(pano_netbytes *n)
{
    if (!n)
        return;
    if (n->diag_fd >= 0)
        close(n->diag_fd);
    if (n->destroy_fd >= 0)
        close(n->destroy_fd);
    free(n->socks);
    free(n->next);
    free(n->gone);
    free(n->pids);
    free(n->buf);
    free(n);
}

const char *pano_net_method_name(unsigned methods)
{
    switch (methods & (PANO_NET_SOCK_DIAG | PANO_NET_NETNS)) {
    case PANO_NET_SOCK_DIAG:
        return "sock_diag";
    case PANO_NET_NETNS:
        return "netns";
    case PANO_NET_SOCK_DIAG | PANO_NET_NETNS:
        return "sock_diag+netns";
    default:
        return "none";
    }
}

/* ---- socket diagnostics --------------------------------------------------------- */

/* The cookie, inode and byte counts of one inet_diag message; false when it
 * is not one or carries no tcp_info with them. */
static bool parse_diag(const struct nlmsghdr *h, tcp_sock *s, uid_t *uid)
{
    if ((h->nlmsg_type != SOCK_DIAG_BY_FAMILY && h->nlmsg_type != TCPDIAG_GETSOCK) ||
        h->nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
        return false;
    const struct inet_diag_msg *m = NLMSG_DATA(h);
    *s = (tcp_sock){
        .cookie = (uint64_t)m->id.idiag_cookie[0] | (uint64_t)m->id.idiag_cookie[1] << 32,
        .inode = m->idiag_inode,
    };
    *uid = m->idiag_uid;
    int len = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof *m));
    for (const struct rtattr *a = (const struct rtattr *)(m + 1); RTA_OK(a, len);
         a = RTA_NEXT(a, len)) {
        if (a->rta_type != INET_DIAG_INFO)
            continue;
        size_t have = RTA_PAYLOAD(a);
        size_t need = offsetof(struct tcp_info, tcpi_bytes_received) + sizeof(uint64_t);
        if (have < need)
            return false; /* a kernel older than 4.1 */
        struct tcp_info info;
        memset(&info, 0, sizeof info);
        memcpy(&info, RTA_DATA(a), have < sizeof info ? have : sizeof info);
        s->acked = info.tcpi_bytes_acked;
        s->received = info.tcpi_bytes_received;
        return true;
    }
    return false;
}

static void keep(pano_netbytes *n, const tcp_sock *s)
{
    if (n->nnext == n->cap) {
        n->cap = n->cap ? 2 * n->cap : 64;
        n->next = pano_realloc(n->next, n->cap * sizeof *n->next);
        n->socks = pano_realloc(n->socks, n->cap * sizeof *n->socks);
    }
    n->next[n->nnext++] = *s;
}

/* Dump TCP sockets into n->next (those of our user): of one family
 * (AF_INET, AF_INET6), or of both (AF_UNSPEC: the older request, which
 * walks the kernel's table of connections once for both, where the newer
 * walks it once per family; the walk, over every bucket of a table sized
 * by the machine's memory, is what a dump costs). Returns 0, or -1 when
 * the kernel refused. */
static int dump(pano_netbytes *n, int family)
{
    struct {
        struct nlmsghdr h;
        union {
            struct inet_diag_req_v2 v2;
            struct inet_diag_req both;
        } r;
    } req;
    memset(&req, 0, sizeof req);
    req.h = (struct nlmsghdr){.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP, .nlmsg_seq = ++n->seq};
    if (family == AF_UNSPEC) {
        req.h.nlmsg_type = TCPDIAG_GETSOCK;
        req.h.nlmsg_len = NLMSG_LENGTH(sizeof req.r.both);
        req.r.both = (struct inet_diag_req){.idiag_family = AF_INET,
                                            .idiag_ext = 1u << (INET_DIAG_INFO - 1),
                                            .idiag_states = DUMP_STATES};
    } else {
        req.h.nlmsg_type = SOCK_DIAG_BY_FAMILY;
        req.h.nlmsg_len = NLMSG_LENGTH(sizeof req.r.v2);
        req.r.v2 = (struct inet_diag_req_v2){.sdiag_family = (uint8_t)family,
                                             .sdiag_protocol = IPPROTO_TCP,
                                             .idiag_ext = 1u << (INET_DIAG_INFO - 1),
                                             .idiag_states = DUMP_STATES};
    }
    struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
    if (sendto(n->diag_fd, &req, req.h.nlmsg_len, 0, (struct sockaddr *)&kernel,
               sizeof kernel) < 0)
        return -1;
    for (;;) {
        ssize_t got = recv(n->diag_fd, n->buf, DIAG_BUF, 0);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        int len = (int)got;
        for (struct nlmsghdr *h = (struct nlmsghdr *)n->buf; NLMSG_OK(h, len);
             h = NLMSG_NEXT(h, len)) {
            if (h->nlmsg_seq != n->seq)
                continue;
            if (h->nlmsg_type == NLMSG_DONE)
                return 0;
            if (h->nlmsg_type == NLMSG_ERROR) {
                const struct nlmsgerr *e = NLMSG_DATA(h);
                errno = e->error < 0 ? -e->error : EPROTO;
                return -1;
            }
            tcp_sock s;
            uid_t uid;
            if (!parse_diag(h, &s, &uid) || (uid != n->uid && n->uid != 0))
                continue;
            tcp_sock *was = find_sock(n->socks, n->nsocks, s.cookie);
            s.owner = was ? was->owner : UNKNOWN;
            if (was && s.owner == TREE) { /* what a notice gave stays */
                s.acked = s.acked > was->acked ? s.acked : was->acked;
                s.received = s.received > was->received ? s.received : was->received;
            }
            /* a socket just created may not have its inode yet */
            if (s.owner == FOREIGN && was->inode != s.inode && s.inode)
                s.owner = UNKNOWN;
            keep(n, &s);
        }
    }
}

/* The final figures the kernel gives of the sockets destroyed since the
 * last sample: those of the tree's, still in the last dump or gone since,
 * replace what was read of them. */
static void read_destroyed(pano_netbytes *n)
{
    if (n->destroy_fd < 0)
        return;
    for (;;) {
        ssize_t got = recv(n->destroy_fd, n->buf, DIAG_BUF, MSG_DONTWAIT);
        if (got < 0) {
            if (errno == EINTR || errno == ENOBUFS)
                continue; /* ENOBUFS: notices were lost, their sockets keep their last figures */
            return;
        }
        int len = (int)got;
        for (struct nlmsghdr *h = (struct nlmsghdr *)n->buf; NLMSG_OK(h, len);
             h = NLMSG_NEXT(h, len)) {
            tcp_sock s;
            uid_t uid;
            if (!parse_diag(h, &s, &uid))
                continue;
            tcp_sock *live = find_sock(n->socks, n->nsocks, s.cookie);
            if (live && live->owner == TREE) {
                if (s.acked > live->acked)
                    live->acked = s.acked;
                if (s.received > live->received)
                    live->received = s.received;
                continue;
            }
            tcp_sock *gone = find_sock(n->gone, n->ngone, s.cookie);
            if (gone) {
                if (s.acked > gone->acked)
                    n->closed_sent += s.acked - gone->acked;
                if (s.received > gone->received)
                    n->closed_received += s.received - gone->received;
                gone->acked = s.acked > gone->acked ? s.acked : gone->acked;
                gone->received = s.received > gone->received ? s.received : gone->received;
            }
        }
    }
}

static int by_pid(const void *a, const void *b)
{
    pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
    return x < y ? -1 : x > y;
}

/* Whether these processes include one the last sample did not have; they
 * become the ones the next sample compares with. */
static bool tree_grew(pano_netbytes *n, const pid_t *pids, size_t npids)
{
    bool grew = false;
    for (size_t i = 0; i < npids && !grew; i++)
        grew = !n->npids || !bsearch(&pids[i], n->pids, n->npids, sizeof *pids, by_pid);
    if (npids > n->pids_cap) {
        n->pids_cap = npids;
        n->pids = pano_realloc(n->pids, npids * sizeof *n->pids);
    }
    if (npids) {
        memcpy(n->pids, pids, npids * sizeof *pids);
        qsort(n->pids, npids, sizeof *pids, by_pid);
    }
    n->npids = npids;
    return grew;
}

/* The socket inodes held by these processes, sorted (*count of them). */
static uint64_t *socket_inodes(const pid_t *pids, size_t npids, size_t *count)
{
    uint64_t *v = NULL;
    size_t nv = 0, cap = 0;
    char path[64], link[64];
    for (size_t i = 0; i < npids; i++) {
        snprintf(path, sizeof path, "/proc/%d/fd", (int)pids[i]);
        DIR *d = opendir(path);
        if (!d)
            continue; /* gone, or not ours to read */
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.')
                continue;
            ssize_t len = readlinkat(dirfd(d), e->d_name, link, sizeof link - 1);
            if (len < 9 || memcmp(link, "socket:[", 8) != 0)
                continue;
            link[len] = '\0';
            if (nv == cap) {
                cap = cap ? 2 * cap : 32;
                v = pano_realloc(v, cap * sizeof *v);
            }
            v[nv++] = strtoull(link + 8, NULL, 10);
        }
        closedir(d);
    }
    if (nv)
        qsort(v, nv, sizeof *v, by_u64);
    *count = nv;
    return v;
}

/* Swap the dump under way in, counting the tree's sockets that left it as
 * closed with their last figures. */
static void settle_dump(pano_netbytes *n)
{
    if (n->nnext)
        qsort(n->next, n->nnext, sizeof *n->next, by_cookie);
    n->ngone = 0;
    for (size_t i = 0; i < n->nsocks; i++) {
        const tcp_sock *s = &n->socks[i];
        if (s->owner != TREE || find_sock(n->next, n->nnext, s->cookie))
            continue;
        n->closed_sent += s->acked;
        n->closed_received += s->received;
        if (n->ngone == n->gone_cap) {
            n->gone_cap = n->gone_cap ? 2 * n->gone_cap : 16;
            n->gone = pano_realloc(n->gone, n->gone_cap * sizeof *n->gone);
        }
        n->gone[n->ngone++] = *s; /* in cookie order, as socks is */
    }
    tcp_sock *swap = n->socks;
    n->socks = n->next;
    n->next = swap;
    n->nsocks = n->nnext;
    n->nnext = 0;
}

/* The TCP bytes of these processes (all in our namespace), in *sent and
 * *received; false when the kernel gave nothing. */
static bool tcp_bytes(pano_netbytes *n, const pid_t *pids, size_t npids, uint64_t *sent,
                      uint64_t *received)
{
    if (n->diag_fd < 0)
        return false;
    read_destroyed(n);
    n->nnext = 0;
    if (!n->no_compat && dump(n, AF_UNSPEC) < 0) {
        pano_debug("network bytes: one dump for both families refused (%s): one each",
                   strerror(errno));
        n->no_compat = true;
        n->nnext = 0;
    }
    if (n->no_compat && (dump(n, AF_INET) < 0 || dump(n, AF_INET6) < 0)) {
        pano_warn("network bytes: the socket dump failed (%s)", strerror(errno));
        close(n->diag_fd);
        n->diag_fd = -1;
        return false;
    }
    /* A socket not the tree's may be held by a process new to it: one
     * forked after the tree was read, holding the only descriptor left of
     * a socket its parent closed. Each process new to the tree has those
     * sockets looked at again. */
    bool grew = tree_grew(n, pids, npids);
    bool look = false;
    for (size_t i = 0; i < n->nnext && !look; i++)
        look = n->next[i].inode &&
               (n->next[i].owner == UNKNOWN || (grew && n->next[i].owner == FOREIGN));
    if (look) {
        size_t ninodes;
        uint64_t *inodes = socket_inodes(pids, npids, &ninodes);
        for (size_t i = 0; i < n->nnext; i++) {
            tcp_sock *s = &n->next[i];
            if (s->owner == TREE || !s->inode)
                continue;
            s->owner = ninodes && bsearch(&s->inode, inodes, ninodes, sizeof *inodes, by_u64)
                           ? TREE
                           : FOREIGN;
        }
        free(inodes);
    }
    settle_dump(n);
    *sent = n->closed_sent;
    *received = n->closed_received;
    for (size_t i = 0; i < n->nsocks; i++)
        if (n->socks[i].owner == TREE) {
            *sent += n->socks[i].acked;
            *received += n->socks[i].received;
        }
    return true;
}

/* ---- network namespaces ------------------------------------------------------ */

bool pano_net_dev_parse(const char *buf, size_t len, uint64_t *rx, uint64_t *tx)
{
    *rx = *tx = 0;
    bool any = false;
    const char *p = buf, *stop = buf + len;
    while (p < stop) {
        const char *eol = memchr(p, '\n', (size_t)(stop - p));
        if (!eol)
            eol = stop;
        const char *colon = memchr(p, ':', (size_t)(eol - p));
        if (colon) {
            /* bytes packets errs drop fifo frame compressed multicast, then
             * the same eight fields transmitted */
            uint64_t field[9];
            const char *q = colon + 1;
            int k = 0;
            for (; k < 9 && q < eol; k++) {
                while (q < eol && *q == ' ')
                    q++;
                char *end;
                field[k] = strtoull(q, &end, 10);
                if (end == q)
                    break;
                q = end;
            }
            if (k == 9) {
                *rx += field[0];
                *tx += field[8];
                any = true;
            }
        }
        p = eol + 1;
    }
    return any;
}

/* Read the namespace of pid (inode ino) once this sample. */
static void read_netns(pano_netbytes *n, pid_t pid, uint64_t ino)
{
    namespace *ns = NULL;
    for (size_t i = 0; i < n->nns && !ns; i++)
        if (n->ns[i].inode == ino)
            ns = &n->ns[i];
    if (ns && ns->round == n->round)
        return;
    if (!ns) {
        if (n->nns == MAX_NETNS) {
            if (!n->ns_full_logged)
                pano_warn("network bytes: the task has more than %d network namespaces; "
                          "those past them are not counted",
                          MAX_NETNS);
            n->ns_full_logged = true;
            return;
        }
        ns = &n->ns[n->nns++];
        *ns = (namespace){.inode = ino};
    }
    char path[48];
    snprintf(path, sizeof path, "/proc/%d/net/dev", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    size_t len = fread(n->buf, 1, DIAG_BUF - 1, f);
    fclose(f);
    uint64_t rx, tx;
    if (!pano_net_dev_parse(n->buf, len, &rx, &tx))
        return;
    ns->round = n->round;
    if (rx > ns->rx)
        ns->rx = rx;
    if (tx > ns->tx)
        ns->tx = tx;
}

/* ---- a sample -------------------------------------------------------------------- */

unsigned pano_netbytes_sample(pano_netbytes *n, const pid_t *pids, const uint64_t *netns,
                              size_t npids, uint64_t *sent, uint64_t *received)
{
    n->round++;
    pid_t *own = pano_malloc((npids ? npids : 1) * sizeof *own);
    size_t nown = 0;
    unsigned methods = 0;
    for (size_t i = 0; i < npids; i++) {
        uint64_t ino = netns[i];
        if (!ino)
            continue; /* not known */
        if (ino == n->own_netns)
            own[nown++] = pids[i];
        else {
            read_netns(n, pids[i], ino);
            methods |= PANO_NET_NETNS;
        }
    }
    uint64_t tcp_sent = 0, tcp_received = 0;
    if (tcp_bytes(n, own, nown, &tcp_sent, &tcp_received) && nown)
        methods |= PANO_NET_SOCK_DIAG;
    free(own);
    uint64_t s = tcp_sent, r = tcp_received;
    for (size_t i = 0; i < n->nns; i++) {
        s += n->ns[i].tx;
        r += n->ns[i].rx;
    }
    n->methods |= methods;
    /* never decreasing, whatever a method lost */
    n->last_sent = s > n->last_sent ? s : n->last_sent;
    n->last_received = r > n->last_received ? r : n->last_received;
    *sent = n->last_sent;
    *received = n->last_received;
    return n->methods;
}
