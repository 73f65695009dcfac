/* Shared helpers for the Check unit tests. */
#ifndef PANO_TESTUTIL_H
#define PANO_TESTUTIL_H

#include <check.h>
#include <stdint.h>
#include <stdlib.h>

/* Run a suite, print Check's summary, and turn failures into the exit code. */
static inline int pano_test_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* xorshift64: the same numbers on every run, for a state that is not 0. */
static inline uint64_t pano_test_random(uint64_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

#endif
