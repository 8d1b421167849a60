/* An HTTP/1.x response parser over buffers (http_parse.h says what it holds a response to). */
#include "http_parse.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mem.h"

enum { P_HEAD = 0, P_LENGTH, P_CHUNK_SIZE, P_CHUNK_DATA, P_CHUNK_CRLF, P_TRAILER, P_CLOSE, P_DONE };

static const char STATUS_PREFIX[] = "HTTP/1.";
#define MAX_CONTENT_LENGTH ((int64_t)1 << 50)

void http_start(http_resp_t *r, int head_only) {
    char *buf = r->buf;
    size_t cap = r->buf_cap;
    memset(r, 0, sizeof *r);
    r->buf = buf;
    r->buf_cap = cap;
    r->head_only = (uint8_t)(head_only != 0);
    r->keepalive = 1;
}

void http_shrink(http_resp_t *r, size_t keep) {
    if (r->buf_cap > keep) {
        free(r->buf);
        r->buf = NULL;
        r->buf_cap = 0;
        r->buf_len = 0;
    }
}

void http_free(http_resp_t *r) {
    free(r->buf);
    r->buf = NULL;
    r->buf_cap = r->buf_len = 0;
}

static int fail(http_resp_t *r, int why) {
    r->error = (uint8_t)why;
    return HTTP_ERROR;
}

/* RFC 9110's tchar: the characters of a token (a header name, a coding, a connection option). */
static int tchar(unsigned char c) {
    static const char extra[] = "!#$%&'*+-.^_`|~";
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c != 0 && strchr(extra, c) != NULL);
}

static int ows(char c) { return c == ' ' || c == '\t'; }

/* ---- a list header's elements (RFC 9110 5.6.1: "a, b ,,c") ------------------------------ */

typedef struct {
    const char *p, *end;
} list_t;

/* The next non-empty element, its optional whitespace trimmed: 1 (in *e, *en), or 0 at the end. */
static int list_next(list_t *l, const char **e, size_t *en) {
    for (;;) {
        while (l->p < l->end && (ows(*l->p) || *l->p == ','))
            l->p++;
        if (l->p >= l->end)
            return 0;
        const char *start = l->p;
        while (l->p < l->end && *l->p != ',')
            l->p++;
        const char *stop = l->p;
        while (stop > start && ows(stop[-1]))
            stop--;
        if (stop > start) {
            *e = start;
            *en = (size_t)(stop - start);
            return 1;
        }
    }
}

/* A token at the start of e[0:n], up to an optional ";parameters": its length, or 0 if it is none. */
static size_t token_len(const char *e, size_t n) {
    size_t i = 0;
    while (i < n && tchar((unsigned char)e[i]))
        i++;
    if (i == 0)
        return 0;
    size_t j = i;
    while (j < n && ows(e[j]))
        j++;
    if (j < n && e[j] != ';')
        return 0; /* a second word, or a character no token has */
    return i;
}

static int is_token(const char *e, size_t n, const char *word) {
    size_t w = strlen(word);
    return n == w && strncasecmp(e, word, w) == 0;
}

/* ---- the head ----------------------------------------------------------------------------- */

typedef struct {
    int64_t length; /* -1: no Content-Length */
    int codings, chunked, chunked_last;
    int close, keep_alive;
} framing_t;

static int content_length(framing_t *f, const char *v, size_t vn) {
    list_t l = {v, v + vn};
    const char *e;
    size_t en;
    int any = 0;
    while (list_next(&l, &e, &en)) {
        int64_t x = 0;
        for (size_t i = 0; i < en; i++) {
            if (e[i] < '0' || e[i] > '9')
                return -1;
            x = x * 10 + (e[i] - '0');
            if (x > MAX_CONTENT_LENGTH)
                return -1;
        }
        if (f->length >= 0 && f->length != x) /* two lengths: which one frames the body is anyone's guess */
            return -1;
        f->length = x;
        any = 1;
    }
    return any ? 0 : -1;
}

static int transfer_encoding(framing_t *f, const char *v, size_t vn) {
    list_t l = {v, v + vn};
    const char *e;
    size_t en;
    while (list_next(&l, &e, &en)) {
        size_t t = token_len(e, en);
        if (t == 0)
            return -1;
        int chunked = is_token(e, t, "chunked");
        f->codings++;
        f->chunked += chunked;
        f->chunked_last = chunked;
    }
    return 0;
}

static void connection(framing_t *f, const char *v, size_t vn) {
    list_t l = {v, v + vn};
    const char *e;
    size_t en;
    while (list_next(&l, &e, &en)) {
        f->close |= is_token(e, en, "close");
        f->keep_alive |= is_token(e, en, "keep-alive");
    }
}

/* Parse a whole head h[0:n] (CRLF-ended lines, the last one empty). 0: a final response (the body's
 * framing set); 1: an interim response (1xx but 101), to be skipped; HTTP_ERROR: malformed. */
static int parse_head(http_resp_t *r, const char *h, size_t n) {
    /* the status line: HTTP/1.x SP DDD (SP reason) */
    const char *eol = memchr(h, '\n', n);
    size_t len = (size_t)(eol - h) - 1; /* without its CRLF */
    if (len < 12 || memcmp(h, STATUS_PREFIX, 7) != 0 || h[7] < '0' || h[7] > '9' || h[8] != ' ')
        return fail(r, HM_STATUS_LINE);
    for (int i = 9; i < 12; i++)
        if (h[i] < '0' || h[i] > '9')
            return fail(r, HM_STATUS_LINE);
    if (len > 12 && h[12] != ' ')
        return fail(r, HM_STATUS_LINE);
    r->minor = (uint8_t)(h[7] - '0');
    r->status = (int16_t)((h[9] - '0') * 100 + (h[10] - '0') * 10 + (h[11] - '0'));
    if (r->status < 100)
        return fail(r, HM_STATUS_LINE);

    framing_t f = {.length = -1};
    int last = 0; /* the field the previous line was: 1 a framing one (Content-Length, Transfer-Encoding, Connection) */
    const char *p = eol + 1, *end = h + n;
    while (p < end) {
        eol = memchr(p, '\n', (size_t)(end - p));
        len = (size_t)(eol - p) - 1;
        if (len == 0)
            break; /* the empty line: the head's end */
        if (ows(*p)) { /* obs-fold: a continuation line, which no framing field may have */
            if (last)
                return fail(r, HM_HEADER);
            p = eol + 1;
            continue;
        }
        const char *colon = memchr(p, ':', len);
        if (colon == NULL || colon == p)
            return fail(r, HM_HEADER);
        size_t name = (size_t)(colon - p);
        for (size_t i = 0; i < name; i++)
            if (!tchar((unsigned char)p[i]))
                return fail(r, HM_HEADER); /* whitespace before the colon among them */
        const char *v = colon + 1, *vend = p + len;
        while (v < vend && ows(*v))
            v++;
        while (vend > v && ows(vend[-1]))
            vend--;
        size_t vn = (size_t)(vend - v);
        last = 0;
        if (name == 14 && strncasecmp(p, "content-length", 14) == 0) {
            if (content_length(&f, v, vn) < 0)
                return fail(r, HM_CONTENT_LENGTH);
            last = 1;
        } else if (name == 17 && strncasecmp(p, "transfer-encoding", 17) == 0) {
            if (transfer_encoding(&f, v, vn) < 0)
                return fail(r, HM_TRANSFER_ENCODING);
            last = 1;
        } else if (name == 10 && strncasecmp(p, "connection", 10) == 0) {
            connection(&f, v, vn);
            last = 1;
        }
        p = eol + 1;
    }
    if (r->status < 200 && r->status != 101)
        return 1;
    r->keepalive = (uint8_t)(r->minor >= 1 ? !f.close : f.keep_alive && !f.close);
    if (f.codings && r->minor == 0) /* RFC 9112 6.1: an HTTP/1.0 message's framing is faulty then */
        return fail(r, HM_TRANSFER_ENCODING);
    if (f.chunked > 1)
        return fail(r, HM_TRANSFER_ENCODING);
    if (r->status == 101) { /* switching protocols: no HTTP response follows on this connection */
        r->body = HB_NONE;
        r->keepalive = 0;
    } else if (r->head_only || r->status == 204 || r->status == 304 || r->status < 200) {
        r->body = HB_NONE;
    } else if (f.codings) {
        if (f.length >= 0) /* both: Transfer-Encoding frames it, and the connection is not trusted after */
            r->keepalive = 0;
        if (f.chunked_last) {
            r->body = HB_CHUNKED;
        } else { /* another coding last: the body ends when the server closes (RFC 9112 6.3) */
            r->body = HB_CLOSE;
            r->keepalive = 0;
        }
    } else if (f.length >= 0) {
        r->body = HB_LENGTH;
        r->left = f.length;
    } else {
        r->body = HB_CLOSE;
        r->keepalive = 0;
    }
    return 0;
}

/* Where the head ends in p[0:n]: the offset after its empty line's LF; 0 when it has not ended
 * there (the line state carried to the next piece); HTTP_ERROR for a bare LF or a first line
 * that cannot be a status line. */
static long head_end(http_resp_t *r, const char *p, size_t n) {
    size_t pos = 0;
    while (pos < n) {
        if (r->lines == 0) { /* the status line's first bytes, checked as they arrive */
            size_t seen = r->line_bytes, k = 0;
            while (seen + k < 7 && pos + k < n) {
                if (p[pos + k] != STATUS_PREFIX[seen + k])
                    return fail(r, HM_STATUS_LINE);
                k++;
            }
        }
        const char *nl = memchr(p + pos, '\n', n - pos);
        if (nl == NULL) {
            r->line_bytes += (uint32_t)(n - pos);
            r->prev_cr = p[n - 1] == '\r';
            return 0;
        }
        size_t i = (size_t)(nl - p);
        int cr = i > pos ? p[i - 1] == '\r' : (r->line_bytes > 0 && r->prev_cr);
        if (!cr)
            return fail(r, HM_BARE_LF);
        size_t line = r->line_bytes + (i - pos); /* its CR included */
        r->line_bytes = 0;
        r->prev_cr = 0;
        pos = i + 1;
        if (line == 1) {
            if (r->lines == 0)
                return fail(r, HM_STATUS_LINE); /* an empty first line */
            r->lines = 0;
            return (long)pos;
        }
        if (r->lines < 255)
            r->lines++;
    }
    return 0;
}

static int gather(http_resp_t *r, const char *p, size_t n, size_t limit, int why) {
    if (r->buf_len + n > limit)
        return fail(r, why);
    if (mem_grow(&r->buf, &r->buf_cap, r->buf_len + n) < 0)
        return HTTP_NOMEM;
    memcpy(r->buf + r->buf_len, p, n);
    r->buf_len += n;
    return 0;
}

/* A whole CRLF-ended line from p[0:n]: 1 (the line in *line[0:*len] without its CRLF, *used bytes
 * of p taken), 0 (all of p gathered, the line goes on), or an error. */
static int take_line(http_resp_t *r, const char *p, size_t n, size_t *used, const char **line, size_t *len,
                     size_t limit, int why) {
    const char *nl = memchr(p, '\n', n);
    size_t part = nl ? (size_t)(nl - p) + 1 : n;
    if (nl == NULL) {
        int e = gather(r, p, n, limit, why);
        *used = n;
        return e < 0 ? e : 0;
    }
    int cr = part >= 2 ? p[part - 2] == '\r' : (r->buf_len > 0 && r->buf[r->buf_len - 1] == '\r');
    if (!cr)
        return fail(r, HM_BARE_LF);
    *used = part;
    if (r->buf_len == 0) { /* whole in this piece: read where it is */
        *line = p;
        *len = part - 2;
        return 1;
    }
    int e = gather(r, p, part, limit, why);
    if (e < 0)
        return e;
    *line = r->buf;
    *len = r->buf_len - 2;
    r->buf_len = 0; /* read before the buffer is written again */
    return 1;
}

static int chunk_size(http_resp_t *r, const char *line, size_t n) {
    int64_t size = 0;
    size_t i = 0;
    for (; i < n; i++) {
        char c = line[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            break;
        size = size * 16 + d;
        if (size > MAX_CONTENT_LENGTH)
            return fail(r, HM_CHUNK);
    }
    if (i == 0)
        return fail(r, HM_CHUNK);
    while (i < n && ows(line[i]))
        i++;
    if (i < n && line[i] != ';')
        return fail(r, HM_CHUNK);
    if (size == 0) {
        r->phase = P_TRAILER;
        r->left = HTTP_MAX_HEAD; /* the trailer section's budget */
    } else {
        r->phase = P_CHUNK_DATA;
        r->left = size;
    }
    return 0;
}

static int head_piece(http_resp_t *r, const char *p, size_t n, size_t *pos) {
    long end = head_end(r, p + *pos, n - *pos);
    if (end < 0)
        return HTTP_ERROR;
    size_t avail = n - *pos;
    size_t budget = HTTP_MAX_HEAD - r->head_bytes; /* interim responses' heads count too */
    if (end == 0) { /* the head goes on in the next piece: keep what came */
        int e = gather(r, p + *pos, avail, budget, HM_HEAD_TOO_LARGE);
        *pos = n;
        return e < 0 ? e : HTTP_MORE;
    }
    const char *head = p + *pos;
    size_t head_len = (size_t)end;
    if (r->buf_len) { /* begun in an earlier piece */
        int e = gather(r, head, head_len, budget, HM_HEAD_TOO_LARGE);
        if (e < 0)
            return e;
        head = r->buf;
        head_len = r->buf_len;
    } else if (head_len > budget) {
        return fail(r, HM_HEAD_TOO_LARGE);
    }
    r->head_bytes += (uint32_t)head_len;
    *pos += (size_t)end;
    int parsed = parse_head(r, head, head_len);
    r->buf_len = 0;
    if (parsed < 0)
        return parsed;
    if (parsed == 1) /* an interim response: what follows is parsed as the response */
        return HTTP_MORE + 2;
    switch (r->body) {
    case HB_NONE: r->phase = P_DONE; break;
    case HB_LENGTH: r->phase = r->left ? P_LENGTH : P_DONE; break;
    case HB_CHUNKED: r->phase = P_CHUNK_SIZE; break;
    default: r->phase = P_CLOSE;
    }
    return HTTP_MORE;
}

int http_feed(http_resp_t *r, const char *p, size_t n, size_t *used, http_body_fn body, void *ctx) {
    size_t pos = 0;
    if (n)
        r->started = 1;
    while (r->phase != P_DONE) {
        if (pos >= n && r->phase != P_DONE) {
            *used = n;
            return HTTP_MORE;
        }
        const char *line;
        size_t len, took = 0;
        int got;
        switch (r->phase) {
        case P_HEAD:
            got = head_piece(r, p, n, &pos);
            if (got < 0)
                return got;
            if (got == HTTP_MORE + 2)
                continue; /* interim: phase stays P_HEAD */
            break;
        case P_LENGTH:
        case P_CHUNK_DATA: {
            size_t take = (int64_t)(n - pos) < r->left ? n - pos : (size_t)r->left;
            if (body != NULL && take)
                body(ctx, p + pos, take);
            r->left -= (int64_t)take;
            pos += take;
            if (r->left == 0)
                r->phase = r->phase == P_LENGTH ? P_DONE : P_CHUNK_CRLF;
            break;
        }
        case P_CHUNK_CRLF: /* exactly CR LF after a chunk's data (line_bytes: how much of it came) */
            if (p[pos] != (r->line_bytes == 0 ? '\r' : '\n'))
                return fail(r, r->line_bytes == 1 || p[pos] != '\n' ? HM_CHUNK : HM_BARE_LF);
            pos++;
            if (++r->line_bytes == 2) {
                r->line_bytes = 0;
                r->phase = P_CHUNK_SIZE;
            }
            break;
        case P_CHUNK_SIZE:
            got = take_line(r, p + pos, n - pos, &took, &line, &len, HTTP_MAX_LINE, HM_CHUNK);
            pos += took;
            if (got < 0)
                return got;
            if (got == 1 && chunk_size(r, line, len) < 0)
                return HTTP_ERROR;
            break;
        case P_TRAILER:
            got = take_line(r, p + pos, n - pos, &took, &line, &len, (size_t)r->left, HM_HEAD_TOO_LARGE);
            if (got < 0)
                return got;
            pos += took;
            if ((int64_t)took > r->left)
                return fail(r, HM_HEAD_TOO_LARGE);
            r->left -= (int64_t)took;
            if (got == 1 && len == 0)
                r->phase = P_DONE;
            break;
        case P_CLOSE: /* the body runs until the server closes */
            if (body != NULL)
                body(ctx, p + pos, n - pos);
            pos = n;
            break;
        }
    }
    *used = pos;
    return HTTP_DONE;
}

int http_eof(http_resp_t *r) {
    if (r->phase == P_CLOSE) {
        r->phase = P_DONE;
        return HTTP_DONE;
    }
    return r->phase == P_DONE ? HTTP_DONE : HTTP_ERROR;
}
