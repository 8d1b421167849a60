/* What the HTTP and raw protocols send and expect, per transaction (binding.c builds it from
 * native_http.py's specs; proto_http.c reads it). */
#ifndef PERFLAB_PROTO_HTTP_H
#define PERFLAB_PROTO_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "params.h"

/* A piece of a request: literal bytes (param < 0), or a parameter's value in an encoding. */
typedef struct {
    const char *p;
    size_t n;
    int param, enc;
} part_t;

#define HTTP_MAX_EXPECT (1 << 16) /* an expected text longer than this: the Python path (native_http.py) */

typedef struct {
    char *wire; /* the whole request (or raw message), when nothing in it is a parameter: sent as it is */
    size_t wire_len;
    part_t *head; /* else the head's parts -- its lines, without the blank line -- */
    int n_head;
    part_t *body; /* and the body's (n_body < 0: no body, and no Content-Length) */
    int n_body;
    char *lits, *body_lits; /* the parts' literal bytes */
    int idempotent, head_only;
    uint8_t *ok_status; /* 1000 flags; NULL: any 2xx or 3xx */
    char *expect;       /* HTTP: text the body must hold; raw: the whole reply, exactly (NULL: no check) */
    size_t expect_len;
    size_t reply_len;   /* raw: the reply's bytes */
} httptx_t;

typedef struct {
    httptx_t *txs;
    int n_txs;
    int close_each; /* a new connection for every transaction (connections: per_transaction) */
} httpdata_t;

void httpdata_free(httpdata_t *d);

#endif
