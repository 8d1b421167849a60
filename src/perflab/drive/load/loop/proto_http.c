/* HTTP/1.1 as a protocol of the compiled loop (proto.h), and the TCP adapter's raw exchanges.
 *
 * HTTP: a transaction is one request on the user's keep-alive connection -- the same bytes the
 * lean client sends (http_request.py's encode_request), its {placeholders} filled with the
 * transaction's parameters (params.h) -- and its response, read by http_parse.c and judged as
 * http_request.py's problem() judges it: the status (those expected, else 2xx or 3xx), then the
 * expected text, searched in the body as it arrives through a window of the text's length (no
 * body is kept). A response that begins while the request is still being sent (a 413 to a large
 * upload) is the response. An idempotent request is sent again once on a new connection when the
 * server closed a kept-alive one before answering (http.py's KeepAliveClosed).
 *
 * Raw: the TCP adapter's exchange -- a message, then reply_len bytes back on the same connection,
 * compared with the expected reply as they arrive (tcp.py's readexactly and its comparison).
 */
#define _GNU_SOURCE /* memmem */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_parse.h"
#include "mem.h"
#include "proto.h"
#include "proto_http.h"

/* Buffers a user kept after a large response are given back above this. */
#define KEEP_BYTES 4096

typedef struct {
    http_resp_t resp;
    char *req; /* the rendered request (one with {placeholders}) */
    size_t req_cap;
    char *win; /* the body's last (expect_len - 1) bytes, and room for as many more */
    size_t win_len, win_cap;
    uint8_t found; /* the expected text was seen */
    uint8_t differs; /* raw: a byte of the reply differed from the expected one */
} httpuser_t;

static inline httpdata_t *data(loop_t *L) { return (httpdata_t *)L->pdata; }
static inline const httptx_t *tx_of(loop_t *L, user_t *u) { return &data(L)->txs[user_step(L, u)->tx]; }

/* The user's state, made with its first connection. NULL: out of memory (the loop stops). */
static httpuser_t *state(loop_t *L, user_t *u) {
    if (u->ext == NULL && (u->ext = mem_calloc(1, sizeof(httpuser_t))) == NULL) {
        loop_fail(L, ENOMEM);
        loop_close_conn(L, u);
        loop_finish(L, u, 0, E_NOMEM, 0);
    }
    return u->ext;
}

/* ---- the request ------------------------------------------------------------------------- */

static int part_text(loop_t *L, user_t *u, const part_t *part, char number[24], const char **text, size_t *len) {
    if (part->param < 0) {
        *text = part->p;
        *len = part->n;
        return 0;
    }
    const txcommon_t *tc = &L->txs[user_step(L, u)->tx];
    return param_text(&tc->params[part->param], u->drawn[part->param], part->enc, number, text, len);
}

static size_t parts_len(loop_t *L, user_t *u, const part_t *parts, int n) {
    size_t total = 0;
    char number[24];
    for (int i = 0; i < n; i++) {
        const char *t;
        size_t len;
        if (part_text(L, u, &parts[i], number, &t, &len) == 0)
            total += len;
    }
    return total;
}

static char *put_parts(loop_t *L, user_t *u, char *at, const part_t *parts, int n) {
    char number[24];
    for (int i = 0; i < n; i++) {
        const char *t;
        size_t len;
        if (part_text(L, u, &parts[i], number, &t, &len) == 0) {
            memcpy(at, t, len);
            at += len;
        }
    }
    return at;
}

/* The request's bytes in u->out: the pre-encoded ones, or the head and body with this
 * transaction's values and the body's length (encode_request's order: the head's lines, then
 * Content-Length, the blank line, the body). -1: out of memory. */
static int render(loop_t *L, user_t *u, httpuser_t *h, const httptx_t *tx) {
    if (tx->wire != NULL) {
        u->out = tx->wire;
        u->out_len = tx->wire_len;
        return 0;
    }
    size_t head = parts_len(L, u, tx->head, tx->n_head);
    size_t body = tx->n_body >= 0 ? parts_len(L, u, tx->body, tx->n_body) : 0;
    char length[48];
    int length_len = tx->n_body >= 0 ? snprintf(length, sizeof length, "Content-Length: %zu\r\n", body) : 0;
    size_t total = head + (size_t)length_len + 2 + body;
    if (mem_grow(&h->req, &h->req_cap, total) < 0)
        return -1;
    char *at = put_parts(L, u, h->req, tx->head, tx->n_head);
    memcpy(at, length, (size_t)length_len);
    at += length_len;
    *at++ = '\r';
    *at++ = '\n';
    if (tx->n_body >= 0)
        at = put_parts(L, u, at, tx->body, tx->n_body);
    u->out = h->req;
    u->out_len = (size_t)(at - h->req);
    return 0;
}

/* ---- the response ------------------------------------------------------------------------ */

typedef struct {
    httpuser_t *h;
    const httptx_t *tx;
    loop_t *L;
} search_t;

/* A piece of the body: the expected text searched for across the pieces' boundaries, keeping
 * only the last (len - 1) bytes seen (the window). */
static void search(void *ctx, const char *p, size_t n) {
    search_t *s = ctx;
    httpuser_t *h = s->h;
    size_t k = s->tx->expect_len;
    if (h->found || s->tx->expect == NULL || n == 0)
        return;
    if (k == 0 || (n >= k && memmem(p, n, s->tx->expect, k) != NULL)) {
        h->found = 1;
        return;
    }
    if (k == 1)
        return;
    size_t keep = k - 1, head = n < keep ? n : keep;
    if (h->win == NULL || h->win_cap < 2 * keep) {
        char *w = mem_realloc(h->win, 2 * keep);
        if (w == NULL) {
            loop_fail(s->L, ENOMEM);
            return;
        }
        h->win = w;
        h->win_cap = 2 * keep;
    }
    memcpy(h->win + h->win_len, p, head); /* the window, then this piece's start: the boundary */
    size_t joined = h->win_len + head;
    if (joined >= k && memmem(h->win, joined, s->tx->expect, k) != NULL) {
        h->found = 1;
        return;
    }
    if (n >= keep) { /* this piece's end is the new window */
        memcpy(h->win, p + n - keep, keep);
        h->win_len = keep;
    } else if (joined > keep) {
        memmove(h->win, h->win + joined - keep, keep);
        h->win_len = keep;
    } else {
        h->win_len = joined;
    }
}

static void give_back(httpuser_t *h) {
    http_shrink(&h->resp, KEEP_BYTES);
    if (h->req_cap > KEEP_BYTES) {
        free(h->req);
        h->req = NULL;
        h->req_cap = 0;
    }
    if (h->win_cap > KEEP_BYTES) {
        free(h->win);
        h->win = NULL;
        h->win_cap = 0;
    }
    h->win_len = 0;
}

/* The response is whole: judged (http_request.py's problem()), recorded, and the user goes on. */
static void response_done(loop_t *L, user_t *u, httpuser_t *h, int leftover) {
    const httptx_t *tx = tx_of(L, u);
    int s = h->resp.status, ok = 1, err = E_NONE;
    if (tx->ok_status != NULL ? !(s >= 0 && s < 1000 && tx->ok_status[s]) : !(s >= 200 && s < 400)) {
        ok = 0;
        err = E_STATUS;
    } else if (tx->expect != NULL && !h->found) {
        ok = 0;
        err = E_BODY;
    }
    /* bytes after the response answer no request, and an answer before the request was whole
     * leaves the connection's state unknown: either way it is dropped */
    if (!h->resp.keepalive || leftover || u->state == U_SENDING || data(L)->close_each)
        loop_close_conn(L, u);
    else
        u->reused = 1;
    give_back(h);
    loop_finish(L, u, ok, err, s);
}

/* The server closed a kept-alive connection before answering: an idempotent request is sent
 * again once, on a new connection. 1: it is. */
static int retry_closed(loop_t *L, user_t *u) {
    const httptx_t *tx = tx_of(L, u);
    if (!u->reused || u->got > 0 || u->retried || !tx->idempotent)
        return 0;
    u->retried = 1;
    loop_close_conn(L, u);
    loop_connect(L, u);
    return 1;
}

static void send_failed(loop_t *L, user_t *u, int e) {
    if (e == EPIPE || e == ECONNRESET) {
        if (loop_drain(L, u)) /* an answer came before the refusal: it is the answer */
            return;
        if (u->fd < 0)
            return;
        if (retry_closed(L, u))
            return;
        if (u->reused && u->got == 0) {
            loop_finish(L, u, 0, E_KEEPALIVE, 0);
            return;
        }
    }
    loop_finish(L, u, 0, E_IO_OS, e);
}

static void push(loop_t *L, user_t *u) {
    int e = 0, r = loop_send(L, u, &e);
    if (r < 0)
        send_failed(L, u, e);
    else if (r > 0) /* the response's timeout counts from the request's send */
        loop_set_deadline(L, u, mono() + L->timeout);
}

static void http_begin(loop_t *L, user_t *u) {
    httpuser_t *h = state(L, u);
    if (h == NULL)
        return;
    const httptx_t *tx = tx_of(L, u);
    if (render(L, u, h, tx) < 0) {
        loop_fail(L, ENOMEM);
        loop_finish(L, u, 0, E_NOMEM, 0);
        return;
    }
    http_start(&h->resp, tx->head_only);
    h->found = 0;
    h->differs = 0;
    h->win_len = 0;
    u->sent = 0;
    loop_set_deadline(L, u, mono() + L->timeout); /* a send that blocks times out too */
    push(L, u);
}

static void http_writable(loop_t *L, user_t *u) {
    push(L, u);
}

static int http_received(loop_t *L, user_t *u, const char *p, size_t n) {
    httpuser_t *h = u->ext;
    const httptx_t *tx = tx_of(L, u);
    if (u->got == n)
        u->first = mono(); /* the response's first bytes (the lean client's data_received) */
    search_t s = {h, tx, L};
    size_t used = 0;
    int r = http_feed(&h->resp, p, n, &used, tx->expect != NULL ? search : NULL, &s);
    if (L->error_no == ENOMEM) {
        loop_finish(L, u, 0, E_NOMEM, 0);
        return 1;
    }
    switch (r) {
    case HTTP_DONE:
        response_done(L, u, h, used < n);
        return 1;
    case HTTP_ERROR:
        loop_finish(L, u, 0, E_MALFORMED, h->resp.error);
        return 1;
    case HTTP_NOMEM:
        loop_fail(L, ENOMEM);
        loop_finish(L, u, 0, E_NOMEM, 0);
        return 1;
    default:
        return 0;
    }
}

static void http_closed(loop_t *L, user_t *u, int e) {
    httpuser_t *h = u->ext;
    if (e == 0 && u->state == U_READING && http_eof(&h->resp) == HTTP_DONE) { /* a body read until the close */
        h->resp.keepalive = 0;
        response_done(L, u, h, 0);
        return;
    }
    if ((e == 0 || e == ECONNRESET) && retry_closed(L, u))
        return;
    if ((e == 0 || e == ECONNRESET) && u->reused && u->got == 0)
        loop_finish(L, u, 0, E_KEEPALIVE, 0);
    else if (e == 0)
        loop_finish(L, u, 0, E_CLOSED, 0);
    else
        loop_finish(L, u, 0, E_IO_OS, e);
}

static int no_idle_bytes(loop_t *L, user_t *u, const char *p, size_t n) {
    (void)L;
    (void)u;
    (void)p;
    (void)n;
    return -1; /* bytes answering no request: the connection is dropped */
}

static void nothing(loop_t *L, user_t *u) {
    (void)L;
    (void)u;
}

static void http_free_user(loop_t *L, user_t *u) {
    (void)L;
    httpuser_t *h = u->ext;
    if (h != NULL) {
        http_free(&h->resp);
        free(h->req);
        free(h->win);
        free(h);
        u->ext = NULL;
    }
}

void httpdata_free(httpdata_t *d) {
    if (d == NULL)
        return;
    for (int i = 0; d->txs != NULL && i < d->n_txs; i++) {
        httptx_t *t = &d->txs[i];
        free(t->wire);
        free(t->head);
        free(t->body);
        free(t->lits);
        free(t->body_lits);
        free(t->ok_status);
        free(t->expect);
    }
    free(d->txs);
    free(d);
}

static void http_free_all(loop_t *L) {
    httpdata_free(data(L));
    L->pdata = NULL;
}

const proto_t PROTO_HTTP = {
    .name = "http",
    .connected = http_begin, /* the transaction in flight is what the connection was made for */
    .begin = http_begin,
    .writable = http_writable,
    .received = http_received,
    .idle = no_idle_bytes,
    .closed = http_closed,
    .disconnected = nothing,
    .free_user = http_free_user,
    .free = http_free_all,
};

/* ---- raw exchanges (the TCP adapter's round trips) ----------------------------------------- */

static void raw_begin(loop_t *L, user_t *u) {
    httpuser_t *h = state(L, u);
    if (h == NULL)
        return;
    const httptx_t *tx = tx_of(L, u);
    u->out = tx->wire;
    u->out_len = tx->wire_len;
    u->sent = 0;
    h->differs = 0;
    loop_set_deadline(L, u, mono() + L->timeout);
    int e = 0;
    if (loop_send(L, u, &e) < 0) {
        if ((e == EPIPE || e == ECONNRESET) && loop_drain(L, u))
            return;
        if (u->fd >= 0)
            loop_finish(L, u, 0, E_IO_OS, e);
    }
}

static void raw_writable(loop_t *L, user_t *u) {
    int e = 0;
    if (loop_send(L, u, &e) < 0)
        loop_finish(L, u, 0, E_IO_OS, e);
}

/* A raw exchange's reply so far: whole at reply_len bytes, then judged. */
static int raw_received(loop_t *L, user_t *u, const char *p, size_t n) {
    httpuser_t *h = u->ext;
    const httptx_t *tx = tx_of(L, u);
    if (u->got == n)
        u->first = mono(); /* the reply's first bytes */
    if (u->got > tx->reply_len) { /* more than the reply: answers no request */
        loop_finish(L, u, 0, E_MALFORMED, M_EXTRA);
        return 1;
    }
    size_t at = u->got - n;
    if (tx->expect != NULL && memcmp(p, tx->expect + at, n) != 0)
        h->differs = 1;
    if (u->got < tx->reply_len)
        return 0;
    if (u->state == U_SENDING) { /* the whole reply before the whole message: the connection is not trusted */
        loop_close_conn(L, u);
    } else {
        u->reused = 1;
    }
    loop_finish(L, u, !h->differs, h->differs ? E_BODY : E_NONE, 0);
    return 1;
}

static void raw_closed(loop_t *L, user_t *u, int e) {
    loop_finish(L, u, 0, e == 0 || e == ECONNRESET ? E_CLOSED : E_IO_OS, e == 0 || e == ECONNRESET ? 0 : e);
}

const proto_t PROTO_RAW = {
    .name = "raw",
    .connected = raw_begin,
    .begin = raw_begin,
    .writable = raw_writable,
    .received = raw_received,
    .idle = no_idle_bytes,
    .closed = raw_closed,
    .disconnected = nothing,
    .free_user = http_free_user,
    .free = http_free_all,
};
