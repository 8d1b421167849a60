/* An HTTP/1.x response parser: a library over buffers (no socket, no loop), fed the bytes of one
 * response as they arrive, in pieces of any size.
 *
 * What it holds a response to (RFC 9112): a status line "HTTP/1.x DDD"; CRLF line ends (a bare LF
 * in the head, a chunk line or a trailer is malformed, found when it arrives, not by a timeout);
 * header names that are tokens; Content-Length a number, repeated only with the same value;
 * Transfer-Encoding a list of codings, chunked at most once and last (a response whose last
 * coding is another runs until the server closes), and none in an HTTP/1.0 response; 1xx
 * responses other than 101 are interim and skipped, 101 is final; no body after HEAD, 204 or
 * 304; a chunked body's sizes in hex, extensions ignored, a trailer section read and dropped.
 *
 * It keeps nothing of the body: each piece of it is handed to the caller's function as it
 * arrives (the caller searches it or drops it). A head, a chunk line or a trailer line is parsed
 * where it landed when it arrived whole in one piece, and gathered in the parser's buffer only
 * when it spans pieces, up to HTTP_MAX_HEAD bytes.
 */
#ifndef PERFLAB_HTTP_PARSE_H
#define PERFLAB_HTTP_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* http_feed's and http_eof's results */
enum { HTTP_MORE = 0, HTTP_DONE = 1, HTTP_ERROR = -1, HTTP_NOMEM = -2 };

/* What was malformed (http_resp_t.error): native_http.MALFORMED words them. 5 and 6 are the raw
 * exchange's and PostgreSQL's (proto_http.c, proto_pg.c). */
enum {
    HM_STATUS_LINE = 1,
    HM_CONTENT_LENGTH = 2,
    HM_CHUNK = 3,
    HM_HEAD_TOO_LARGE = 4,
    HM_BARE_LF = 7,
    HM_TRANSFER_ENCODING = 8,
    HM_HEADER = 9,
};

#define HTTP_MAX_HEAD (1 << 20) /* a head, or a trailer section, longer than this is refused */
#define HTTP_MAX_LINE 8192      /* a chunk-size line, its extensions included */

enum { HB_NONE = 0, HB_LENGTH, HB_CHUNKED, HB_CLOSE };

typedef struct {
    char *buf; /* a head or line that spans pieces, gathered (NULL until one does) */
    size_t buf_len, buf_cap;
    int64_t left;        /* body bytes left (Content-Length), or of the current chunk; the trailer's budget */
    uint32_t line_bytes; /* bytes of the current line so far, its CR included */
    uint32_t head_bytes; /* bytes of the head so far (interim responses' included) */
    int16_t status;
    uint8_t phase;
    uint8_t body;       /* HB_*: how the body's end is known */
    uint8_t keepalive;  /* the connection may carry the next request */
    uint8_t head_only;  /* the response to a HEAD request: no body */
    uint8_t prev_cr;    /* the last byte of the previous piece was a CR */
    uint8_t lines;      /* lines of the head so far (0: the status line is being read) */
    uint8_t error;      /* HM_*: why HTTP_ERROR */
    uint8_t minor;      /* HTTP/1.<minor> */
    uint8_t started;    /* any byte of the response (or of an interim one) seen */
} http_resp_t;

/* Called with each piece of the body as it arrives (chunk data only, not the chunked framing). */
typedef void (*http_body_fn)(void *ctx, const char *p, size_t n);

/* A new response is expected on the connection (the buffer, if any, is kept for the next). */
void http_start(http_resp_t *r, int head_only);

/* Feed the next piece. HTTP_MORE: all of it taken, the response goes on; HTTP_DONE: the response
 * ended after *used bytes of it (any further bytes answer no request); HTTP_ERROR: malformed
 * (r->error); HTTP_NOMEM: a gathering buffer could not grow. `body` may be NULL. */
int http_feed(http_resp_t *r, const char *p, size_t n, size_t *used, http_body_fn body, void *ctx);

/* The server closed the connection: HTTP_DONE when that is how the body ends (no length), else
 * HTTP_ERROR (the response is incomplete: r->error stays 0). */
int http_eof(http_resp_t *r);

/* The gathering buffer given back when it grew beyond `keep` bytes (after a large head). */
void http_shrink(http_resp_t *r, size_t keep);

void http_free(http_resp_t *r);

#endif
