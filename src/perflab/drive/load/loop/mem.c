/* The compiled loop's allocations (mem.h). */
#include "mem.h"

#include <stdlib.h>

/* The countdown of fail_allocations(): read and written by whichever thread allocates. The loop
 * runs on one thread at a time (run() and open() are never concurrent), and Python's thread sets
 * it before run(): a plain atomic counter suffices. */
static long fail_countdown;

static int failing(void) {
    long left = __atomic_load_n(&fail_countdown, __ATOMIC_RELAXED);
    if (left <= 0)
        return 0;
    if (left == 1)
        return 1; /* stays at 1: every later allocation fails too, as memory that ran out stays out */
    __atomic_store_n(&fail_countdown, left - 1, __ATOMIC_RELAXED);
    return 0;
}

void mem_fail_after(long n) {
    __atomic_store_n(&fail_countdown, n > 0 ? n : 0, __ATOMIC_RELAXED);
}

void *mem_alloc(size_t n) {
    return failing() ? NULL : malloc(n ? n : 1);
}

void *mem_calloc(size_t n, size_t size) {
    return failing() ? NULL : calloc(n ? n : 1, size ? size : 1);
}

void *mem_realloc(void *p, size_t n) {
    return failing() ? NULL : realloc(p, n ? n : 1);
}

int mem_grow(char **buf, size_t *cap, size_t need) {
    if (need <= *cap)
        return 0;
    size_t grown = *cap ? *cap : 256;
    while (grown < need) {
        if (grown > ((size_t)-1) / 2)
            return -1;
        grown *= 2;
    }
    char *p = mem_realloc(*buf, grown);
    if (p == NULL)
        return -1;
    *buf = p;
    *cap = grown;
    return 0;
}
