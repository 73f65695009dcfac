/*
 * thread.h - the helper threads of pano's programs, and the one sort that
 * uses them.
 *
 * A helper thread starts with every signal blocked: signals stay the main
 * thread's, whose loop waits for them (SIGTERM is answered within a
 * second whatever a helper is doing).
 */
#ifndef PANO_THREAD_H
#define PANO_THREAD_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

/* Start fn(arg) on a helper thread (joined by the caller): false when it
 * could not start, and the caller does the work itself. */
bool pano_thread_start(pthread_t *t, void *(*fn)(void *), void *arg);

/* qsort(3) for an array that may be empty (and NULL, which qsort must not
 * be given), on two threads when it is large: each sorts half, and the
 * halves are merged. Elements that compare equal come in no set order, as
 * with qsort. */
void pano_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));

#endif
