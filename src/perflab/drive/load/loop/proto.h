/* A protocol of the compiled loop: what is said on a user's connection. The loop (loop.c) owns the
 * connection, the users' time line, deadlines and rows; a protocol owns what is sent and how the
 * bytes that come back are read, and ends each transaction with loop_finish. Three of them:
 * HTTP/1.1 requests and the TCP adapter's raw exchanges (proto_http.c), PostgreSQL's round trips
 * (proto_pg.c). wrk keeps its parser apart from its loop the same way. */
#ifndef PERFLAB_PROTO_H
#define PERFLAB_PROTO_H

#include <stddef.h>

#include "loop.h"

typedef struct proto {
    const char *name;
    /* The connection is up (and its TLS handshake done): send what comes first -- a transaction's
     * request, or PostgreSQL's startup message. */
    void (*connected)(loop_t *L, user_t *u);
    /* A transaction starts on a user whose connection is up and idle. */
    void (*begin)(loop_t *L, user_t *u);
    /* The socket takes more of what is being sent (U_SENDING). */
    void (*writable)(loop_t *L, user_t *u);
    /* Bytes of the answer (U_SENDING or U_READING): 0 read on, 1 the transaction (or logon) ended. */
    int (*received)(loop_t *L, user_t *u, const char *p, size_t n);
    /* Bytes on a connection with nothing in flight: 0 read and ignored, -1 the connection is dropped. */
    int (*idle)(loop_t *L, user_t *u, const char *p, size_t n);
    /* The server closed the connection (err 0) or it failed (errno) while something was in flight. */
    void (*closed)(loop_t *L, user_t *u, int err);
    /* The connection is gone: what the protocol kept of it is reset (a statement's preparation...). */
    void (*disconnected)(loop_t *L, user_t *u);
    /* The user's state, and the run-wide data, freed. */
    void (*free_user)(loop_t *L, user_t *u);
    void (*free)(loop_t *L);
} proto_t;

extern const proto_t PROTO_HTTP, PROTO_RAW, PROTO_PG;

#endif
