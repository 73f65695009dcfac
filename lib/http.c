#include "http.h"

#include "log.h"
#include "mem.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

struct pano_http {
    struct MHD_Daemon *daemon;
    pano_http_handler handler;
    void *user;
    char *auth_user, *auth_password;
    char **headers; /* name, value, ..., NULL */
    int port;
};

struct pano_http_request {
    struct MHD_Connection *connection;
    const char *path;
};

const char *pano_http_path(const pano_http_request *r) { return r->path; }

const char *pano_http_arg(const pano_http_request *r, const char *name)
{
    return MHD_lookup_connection_value(r->connection, MHD_GET_ARGUMENT_KIND, name);
}

bool pano_http_client_gone(const pano_http_request *r)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(r->connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!info)
        return false;
    struct pollfd p = {.fd = info->connect_fd, .events = POLLRDHUP};
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

/* Compare without leaking, through the time taken, where they differ. */
static bool same_secret(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    unsigned char diff = la != lb;
    for (size_t i = 0; i < la; i++)
        diff |= (unsigned char)a[i] ^ (unsigned char)(i < lb ? b[i] : 0);
    return diff == 0;
}

static bool authorized(const pano_http *s, struct MHD_Connection *c)
{
    if (!s->auth_user)
        return true;
    char *password = NULL;
    char *user = MHD_basic_auth_get_username_password(c, &password);
    bool ok = user && password && same_secret(user, s->auth_user) &&
              same_secret(password, s->auth_password);
    if (password) {
        memset(password, 0, strlen(password));
        MHD_free(password);
    }
    if (user)
        MHD_free(user);
    return ok;
}

static void add_headers(const pano_http *s, struct MHD_Response *r)
{
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    for (size_t i = 0; s->headers && s->headers[i]; i += 2)
        MHD_add_response_header(r, s->headers[i], s->headers[i + 1]);
}

static enum MHD_Result send_text(const pano_http *s, struct MHD_Connection *c, unsigned status,
                                 const char *text)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    add_headers(s, r);
    MHD_add_response_header(r, "Content-Type", "text/plain; charset=utf-8");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, "Allow", "GET, HEAD");
    enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **state)
{
    pano_http *s = cls;
    (void)version;
    (void)upload;
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return send_text(s, c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n");
    /* GET has no body: answer on the first call; refuse a body sent anyway */
    if (*upload_size) {
        *upload_size = 0;
        *state = (void *)1;
        return MHD_YES;
    }
    if (*state)
        return send_text(s, c, MHD_HTTP_BAD_REQUEST, "a GET request has no body\n");
    if (!authorized(s, c)) {
        static const char text[] = "authenticate\n";
        struct MHD_Response *r = MHD_create_response_from_buffer(sizeof text - 1, (void *)text,
                                                                 MHD_RESPMEM_PERSISTENT);
        if (!r)
            return MHD_NO;
        add_headers(s, r);
        enum MHD_Result ok = MHD_queue_basic_auth_fail_response(c, "pano", r);
        MHD_destroy_response(r);
        return ok;
    }
    pano_http_request req = {c, url};
    pano_http_reply reply = {.status = 200};
    s->handler(s->user, &req, &reply);
    struct MHD_Response *r = NULL;
    if (reply.file) {
        int fd = open(reply.file, O_RDONLY | O_CLOEXEC);
        struct stat st;
        if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
            r = MHD_create_response_from_fd((uint64_t)st.st_size, fd);
        else {
            if (fd >= 0)
                close(fd);
            pano_buf_free(&reply.body);
            return send_text(s, c, MHD_HTTP_NOT_FOUND, "not found\n");
        }
    } else {
        r = MHD_create_response_from_buffer(reply.body.len, reply.body.data,
                                            MHD_RESPMEM_MUST_FREE);
        reply.body.data = NULL; /* MHD frees it */
    }
    pano_buf_free(&reply.body);
    if (!r)
        return MHD_NO;
    add_headers(s, r);
    MHD_add_response_header(r, "Content-Type",
                            reply.content_type ? reply.content_type : "text/plain; charset=utf-8");
    MHD_add_response_header(r, "Cache-Control", reply.cache ? reply.cache : "no-store");
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)reply.status, r);
    MHD_destroy_response(r);
    return ok;
}

bool pano_http_is_loopback(const char *address)
{
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET, address, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    return inet_pton(AF_INET6, address, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}

pano_http *pano_http_start(const pano_http_options *o, pano_http_handler handler, void *user,
                           char *err, size_t errlen)
{
    const char *address = o->address && *o->address ? o->address : "127.0.0.1";
    struct sockaddr_storage ss = {0};
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
    struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, address, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)o->port);
    } else if (inet_pton(AF_INET6, address, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)o->port);
        flags |= MHD_USE_IPv6;
    } else {
        snprintf(err, errlen, "'%s' is not a numeric IPv4 or IPv6 address", address);
        return NULL;
    }
    if ((o->user == NULL) != (o->password == NULL)) {
        snprintf(err, errlen, "basic authentication needs both a user and a password");
        return NULL;
    }
    pano_http *s = pano_calloc(1, sizeof *s);
    s->handler = handler;
    s->user = user;
    if (o->user) {
        s->auth_user = pano_strdup(o->user);
        s->auth_password = pano_strdup(o->password);
    }
    size_t nh = 0;
    while (o->headers && o->headers[nh])
        nh++;
    s->headers = pano_calloc(nh + 1, sizeof *s->headers);
    for (size_t i = 0; i < nh; i++)
        s->headers[i] = pano_strdup(o->headers[i]);
    /* The server's threads must not take the program's signals (its main
     * loop waits for them): they start with every signal blocked. */
    sigset_t all, old;
    sigfillset(&all);
    /* One thread is MHD's own polling thread; a pool only for more. */
    unsigned threads = o->threads ? o->threads : 2;
    struct MHD_OptionItem pool[] = {
        {threads > 1 ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_END, threads, NULL},
        {MHD_OPTION_END, 0, NULL}};
    pthread_sigmask(SIG_BLOCK, &all, &old);
    s->daemon = MHD_start_daemon(
        flags, (uint16_t)o->port, NULL, NULL, handle, s, MHD_OPTION_SOCK_ADDR, &ss,
        MHD_OPTION_ARRAY, pool,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)64, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30,
        MHD_OPTION_END);
    int start_errno = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = start_errno;
    if (!s->daemon) {
        snprintf(err, errlen, "cannot listen on %s:%d: %s", address, o->port,
                 errno ? strerror(errno) : "libmicrohttpd refused");
        pano_http_stop(s);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info ? info->port : o->port;
    return s;
}

int pano_http_port(const pano_http *s) { return s->port; }

void pano_http_stop(pano_http *s)
{
    if (!s)
        return;
    if (s->daemon)
        MHD_stop_daemon(s->daemon);
    for (size_t i = 0; s->headers && s->headers[i]; i++)
        free(s->headers[i]);
    free(s->headers);
    if (s->auth_password)
        memset(s->auth_password, 0, strlen(s->auth_password));
    free(s->auth_user);
    free(s->auth_password);
    free(s);
}
