/* Helper threads: they start with every signal blocked; pano_sort gives
 * qsort's order on both sides of its two-thread threshold. */
#include "testutil.h"
#include "thread.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

static void *blocked_signals(void *out)
{
    sigset_t mask;
    pthread_sigmask(SIG_BLOCK, NULL, &mask);
    *(int *)out = sigismember(&mask, SIGTERM) + sigismember(&mask, SIGINT) +
                  sigismember(&mask, SIGHUP);
    return NULL;
}

START_TEST(a_helper_takes_no_signal_and_leaves_the_callers_mask)
{
    int blocked = -1;
    pthread_t t;
    ck_assert(pano_thread_start(&t, blocked_signals, &blocked));
    pthread_join(t, NULL);
    ck_assert_int_eq(blocked, 3);
    sigset_t mine;
    pthread_sigmask(SIG_BLOCK, NULL, &mine);
    ck_assert(!sigismember(&mine, SIGTERM));
}
END_TEST

typedef struct {
    uint32_t key;
    uint32_t at; /* where it was before sorting: tells equal keys apart */
    char pad[40];
} item;

static int by_key(const void *a, const void *b)
{
    const item *x = a, *y = b;
    return x->key < y->key ? -1 : x->key > y->key;
}

static int by_key_then_at(const void *a, const void *b)
{
    int c = by_key(a, b);
    const item *x = a, *y = b;
    return c ? c : (x->at < y->at ? -1 : x->at > y->at);
}

/* n items with keys below range (many equal when range is small). */
static item *items(size_t n, uint32_t range, uint64_t seed)
{
    item *v = calloc(n, sizeof *v);
    for (size_t i = 0; i < n; i++) {
        v[i].key = (uint32_t)(pano_test_random(&seed) % range);
        v[i].at = (uint32_t)i;
        memset(v[i].pad, (int)(i % 251), sizeof v[i].pad);
    }
    return v;
}

static void sorts_as_qsort(size_t n, uint32_t range)
{
    item *a = items(n, range, 0x9e3779b97f4a7c15ULL + n), *b = malloc(n * sizeof *b);
    memcpy(b, a, n * sizeof *a);
    pano_sort(a, n, sizeof *a, by_key_then_at); /* a total order: one answer */
    qsort(b, n, sizeof *b, by_key_then_at);
    ck_assert_msg(memcmp(a, b, n * sizeof *a) == 0, "n=%zu range=%u", n, range);
    /* with ties: ordered by key, each item once */
    memcpy(a, b, n * sizeof *a);
    for (size_t i = 0; i < n; i++) /* out of order again: 7919, a prime, divides no n here */
        a[i] = b[(i * 7919) % n];
    pano_sort(a, n, sizeof *a, by_key);
    char *seen = calloc(n, 1);
    for (size_t i = 0; i < n; i++) {
        ck_assert(i == 0 || a[i - 1].key <= a[i].key);
        ck_assert(!seen[a[i].at]);
        seen[a[i].at] = 1;
    }
    free(seen);
    free(a);
    free(b);
}

START_TEST(sorts_small_and_large_arrays_as_qsort_does)
{
    sorts_as_qsort(1, 10);
    sorts_as_qsort(2, 10);
    sorts_as_qsort(1000, 1u << 31);
    sorts_as_qsort(19999, 1u << 31); /* one thread */
    sorts_as_qsort(20000, 1u << 31); /* two */
    sorts_as_qsort(200001, 1u << 31);
    sorts_as_qsort(200001, 7); /* mostly equal keys */
    pano_sort(NULL, 0, sizeof(item), by_key);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("thread");
    TCase *tc = tcase_create("thread");
    tcase_add_test(tc, a_helper_takes_no_signal_and_leaves_the_callers_mask);
    tcase_add_test(tc, sorts_small_and_large_arrays_as_qsort_does);
    suite_add_tcase(s, tc);
    return pano_test_run(s);
}
