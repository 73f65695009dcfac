#include "thread.h"

#include "mem.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

bool pano_thread_start(pthread_t *t, void *(*fn)(void *), void *arg)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    bool started = pthread_create(t, NULL, fn, arg) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return started;
}

/* Below this many elements one thread sorts: a thread and a merge cost
 * more than they save. */
#define PARALLEL_SORT_MIN 20000

typedef struct {
    void *base;
    size_t n, size;
    int (*cmp)(const void *, const void *);
} sort_half;

static void *sort_run(void *arg)
{
    sort_half *h = arg;
    qsort(h->base, h->n, h->size, h->cmp);
    return NULL;
}

void pano_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    if (n < 2)
        return;
    pthread_t t;
    sort_half first = {base, n / 2, size, cmp};
    if (n < PARALLEL_SORT_MIN || !pano_thread_start(&t, sort_run, &first)) {
        qsort(base, n, size, cmp);
        return;
    }
    char *a = base, *b = a + first.n * size;
    size_t na = first.n, nb = n - first.n;
    qsort(b, nb, size, cmp);
    pthread_join(t, NULL);
    char *out = pano_reallocarray(NULL, n, size), *o = out;
    for (; na && nb; o += size) {
        if (cmp(b, a) < 0) {
            memcpy(o, b, size);
            b += size;
            nb--;
        } else {
            memcpy(o, a, size);
            a += size;
            na--;
        }
    }
    memcpy(o, a, na * size); /* what is left of either half */
    memcpy(o + na * size, b, nb * size);
    memcpy(base, out, n * size);
    free(out);
}
