/* A transport of the compiled loop: how bytes cross a user's connection once TCP has connected --
 * plain, or TLS (tls.c). The loop calls these and nothing else to move bytes (wrk's `struct sock`:
 * connect, read, write, close). */
#ifndef PERFLAB_TRANSPORT_H
#define PERFLAB_TRANSPORT_H

#include <stddef.h>
#include <sys/types.h>

#include "loop.h"

typedef struct transport {
    const char *name;
    /* After TCP connected: 1 ready, 0 in progress (u->want says for what), -1 failed (*err: errno,
     * or -1 with the words recorded by loop_finish_words). */
    int (*handshake)(loop_t *L, user_t *u, int *err);
    /* >= 0 bytes, or -1 with errno (EAGAIN: wait for u->want; 0 reads as the peer's close). */
    ssize_t (*send)(loop_t *L, user_t *u, const char *p, size_t n);
    ssize_t (*recv)(loop_t *L, user_t *u, char *p, size_t n);
    /* The connection's own state, before its socket is closed. */
    void (*close)(loop_t *L, user_t *u);
    void (*free)(loop_t *L);
} transport_t;

extern const transport_t TRANSPORT_PLAIN;

#endif
