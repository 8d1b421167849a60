/* Every allocation of the compiled loop goes through these, so that every one is checked the same
 * way and a test can make the n-th one fail (the binding's fail_allocations(): out of memory must
 * end the run as failed with the rows recorded so far, never abort()). */
#ifndef PERFLAB_MEM_H
#define PERFLAB_MEM_H

#include <stddef.h>

void *mem_alloc(size_t n);
void *mem_calloc(size_t n, size_t size);
void *mem_realloc(void *p, size_t n);
/* The test hook: the n-th allocation from now fails (and every one after it), n <= 0 disarms. */
void mem_fail_after(long n);

/* *buf grown to hold `need` bytes (doubling from 256): 0, or -1 when memory ran out (*buf kept). */
int mem_grow(char **buf, size_t *cap, size_t need);

#endif
