/* TLS as a transport of the compiled loop (tls.h), on OpenSSL's non-blocking SSL objects over the
 * users' sockets. Built where setup.py found OpenSSL's headers (PERFLAB_TLS); else the stubs at
 * the end say there is none. */
#include "tls.h"

#include "transport.h"

#ifdef PERFLAB_TLS

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "mem.h"

typedef struct {
    SSL_CTX *ctx;
    char *server_name; /* verified against the certificate; sent as SNI unless it is an address */
    int verify, resume, is_address;
} tlsdata_t;

typedef struct {
    SSL *ssl;
    SSL_SESSION *session; /* the user's last session, offered on its next connection (resume) */
    int handshaken;
} tlsuser_t;

static inline tlsdata_t *tdata(loop_t *L) { return (tlsdata_t *)L->tdata; }

const char *tls_available(void) {
    return OpenSSL_version(OPENSSL_VERSION);
}

/* OpenSSL's words for what failed, as one line (the row's error, after "TLS handshake failed: "). */
static size_t ssl_words(SSL *ssl, char *out, size_t size) {
    unsigned long e = ERR_get_error();
    char reason[256] = "";
    if (e != 0)
        ERR_error_string_n(e, reason, sizeof reason);
    ERR_clear_error();
    long verify = ssl != NULL ? SSL_get_verify_result(ssl) : X509_V_OK;
    int n;
    if (verify != X509_V_OK)
        n = snprintf(out, size, "ConnectionError: TLS handshake failed: [SSL: CERTIFICATE_VERIFY_FAILED] certificate "
                     "verify failed: %s", X509_verify_cert_error_string(verify)); /* as Python's ssl words it */
    else
        n = snprintf(out, size, "ConnectionError: TLS handshake failed: %s", reason[0] ? reason : "the server closed "
                     "the connection");
    return n < 0 ? 0 : (size_t)n < size ? (size_t)n : size - 1;
}

static tlsuser_t *user_tls(loop_t *L, user_t *u) {
    if (u->tls == NULL && (u->tls = mem_calloc(1, sizeof(tlsuser_t))) == NULL)
        loop_fail(L, ENOMEM);
    return u->tls;
}

static int tls_handshake(loop_t *L, user_t *u, int *err) {
    tlsuser_t *t = user_tls(L, u);
    if (t == NULL) {
        *err = ENOMEM;
        return -1;
    }
    tlsdata_t *d = tdata(L);
    if (t->ssl == NULL) {
        SSL *ssl = SSL_new(d->ctx);
        if (ssl == NULL || SSL_set_fd(ssl, u->fd) != 1) {
            SSL_free(ssl);
            ERR_clear_error();
            *err = ENOMEM;
            return -1;
        }
        int ok = 1;
        if (!d->is_address)
            ok &= SSL_set_tlsext_host_name(ssl, d->server_name) == 1;
        if (d->verify) {
            if (d->is_address)
                ok &= X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), d->server_name) == 1;
            else
                ok &= SSL_set1_host(ssl, d->server_name) == 1;
        }
        if (d->resume && t->session != NULL)
            ok &= SSL_set_session(ssl, t->session) == 1;
        if (!ok) {
            SSL_free(ssl);
            ERR_clear_error();
            *err = ENOMEM;
            return -1;
        }
        SSL_set_connect_state(ssl);
        t->ssl = ssl;
        t->handshaken = 0;
    }
    ERR_clear_error();
    int r = SSL_do_handshake(t->ssl);
    if (r == 1) {
        t->handshaken = 1;
        loop_count(L, &L->handshakes, 1);
        if (SSL_session_reused(t->ssl))
            loop_count(L, &L->resumed, 1);
        return 1;
    }
    switch (SSL_get_error(t->ssl, r)) {
    case SSL_ERROR_WANT_READ:
        u->want = 1;
        return 0;
    case SSL_ERROR_WANT_WRITE:
        u->want = 2;
        return 0;
    default: {
        char words[512];
        size_t n = ssl_words(t->ssl, words, sizeof words);
        loop_close_conn(L, u);
        loop_finish_words(L, u, E_TLS, words, n);
        *err = -1;
        return -1;
    }
    }
}

static ssize_t tls_send(loop_t *L, user_t *u, const char *p, size_t n) {
    tlsuser_t *t = u->tls;
    (void)L;
    if (t == NULL || t->ssl == NULL) { /* (close_all's goodbye on a connection that never spoke TLS) */
        errno = ENOTCONN;
        return -1;
    }
    ERR_clear_error();
    int r = SSL_write(t->ssl, p, n > (size_t)1 << 30 ? 1 << 30 : (int)n);
    if (r > 0) {
        if (u->want == 1)
            u->want = 0;
        return r;
    }
    switch (SSL_get_error(t->ssl, r)) {
    case SSL_ERROR_WANT_WRITE:
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_WANT_READ: /* a record from the server first (a renegotiation, a key update) */
        u->want = 1;
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_SYSCALL:
        ERR_clear_error();
        if (errno == 0)
            errno = EPIPE;
        return -1;
    default:
        ERR_clear_error();
        errno = ECONNRESET;
        return -1;
    }
}

static ssize_t tls_recv(loop_t *L, user_t *u, char *p, size_t n) {
    tlsuser_t *t = u->tls;
    (void)L;
    if (t == NULL || t->ssl == NULL) {
        errno = ENOTCONN;
        return -1;
    }
    ERR_clear_error();
    int r = SSL_read(t->ssl, p, n > (size_t)1 << 30 ? 1 << 30 : (int)n);
    if (r > 0) {
        if (u->want == 2)
            u->want = 0;
        return r;
    }
    switch (SSL_get_error(t->ssl, r)) {
    case SSL_ERROR_ZERO_RETURN: /* the server's close_notify: the connection ends */
        return 0;
    case SSL_ERROR_WANT_READ:
        if (u->want == 2)
            u->want = 0;
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_WANT_WRITE:
        u->want = 2;
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_SYSCALL:
        ERR_clear_error();
        if (errno == 0 || errno == EAGAIN)
            return 0; /* the socket closed without close_notify */
        return -1;
    default:
        ERR_clear_error();
        errno = ECONNRESET;
        return -1;
    }
}

/* The connection ends: its session kept for the user's next one (taken now, not after the
 * handshake: a TLS 1.3 server sends its tickets after it), and close_notify said (OpenSSL marks
 * a session that ends without it as not resumable). */
static void tls_close(loop_t *L, user_t *u) {
    tlsuser_t *t = u->tls;
    if (t == NULL || t->ssl == NULL)
        return;
    if (tdata(L)->resume && t->handshaken) {
        SSL_SESSION *s = SSL_get1_session(t->ssl);
        if (s != NULL) {
            SSL_SESSION_free(t->session);
            t->session = s;
        }
        (void)SSL_shutdown(t->ssl); /* sent as far as the socket takes it; the peer's is not awaited */
    }
    ERR_clear_error();
    SSL_free(t->ssl);
    t->ssl = NULL;
    t->handshaken = 0;
}

static void tls_free(loop_t *L) {
    for (int i = 0; L->chunks != NULL && i < L->n_users; i++) {
        user_t *u = user_at(L, i);
        tlsuser_t *t = u->tls;
        if (t == NULL)
            continue;
        SSL_free(t->ssl);
        SSL_SESSION_free(t->session);
        free(t);
        u->tls = NULL;
    }
    tlsdata_t *d = tdata(L);
    if (d != NULL) {
        SSL_CTX_free(d->ctx);
        free(d->server_name);
        free(d);
        L->tdata = NULL;
    }
}

static const transport_t TRANSPORT_TLS = {
    .name = "tls", .handshake = tls_handshake, .send = tls_send, .recv = tls_recv, .close = tls_close,
    .free = tls_free,
};

static int version_of(const char *v) {
    if (v == NULL || v[0] == '\0')
        return 0;
    if (strcmp(v, "1.2") == 0)
        return TLS1_2_VERSION;
    if (strcmp(v, "1.3") == 0)
        return TLS1_3_VERSION;
    return -1;
}

int tls_configure(loop_t *L, PyObject *tls) {
    const char *ca_file = NULL, *version = NULL, *ciphers = NULL, *server_name;
    int verify, resume;
    if (!PyArg_ParseTuple(tls, "zpzzsp", &ca_file, &verify, &version, &ciphers, &server_name, &resume))
        return -1;
    int v = version_of(version);
    if (v < 0) {
        PyErr_SetString(PyExc_ValueError, "tls version: \"1.2\", \"1.3\" or None");
        return -1;
    }
    tlsdata_t *d = mem_calloc(1, sizeof *d);
    if (d == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    L->tdata = d;
    L->transport = &TRANSPORT_TLS;
    d->verify = verify;
    d->resume = resume;
    size_t n = strlen(server_name);
    if ((d->server_name = mem_alloc(n + 1)) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    memcpy(d->server_name, server_name, n + 1);
    unsigned char probe[16];
    d->is_address = inet_pton(AF_INET, server_name, probe) == 1 || inet_pton(AF_INET6, server_name, probe) == 1;
    ERR_clear_error();
    d->ctx = SSL_CTX_new(TLS_client_method());
    if (d->ctx == NULL)
        goto openssl;
    SSL_CTX_set_mode(d->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_min_proto_version(d->ctx, v ? v : TLS1_2_VERSION); /* as Python's PROTOCOL_TLS_CLIENT */
    if (v)
        SSL_CTX_set_max_proto_version(d->ctx, v);
    if (ciphers != NULL && SSL_CTX_set_cipher_list(d->ctx, ciphers) != 1)
        goto openssl;
    if (resume)
        SSL_CTX_set_session_cache_mode(d->ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    if (verify) {
        SSL_CTX_set_verify(d->ctx, SSL_VERIFY_PEER, NULL);
        int loaded = ca_file != NULL ? SSL_CTX_load_verify_locations(d->ctx, ca_file, NULL)
                                     : SSL_CTX_set_default_verify_paths(d->ctx);
        if (loaded != 1)
            goto openssl;
    } else {
        SSL_CTX_set_verify(d->ctx, SSL_VERIFY_NONE, NULL);
    }
    return 0;
openssl: {
    char words[256] = "unknown";
    ERR_error_string_n(ERR_get_error(), words, sizeof words);
    ERR_clear_error();
    PyErr_Format(PyExc_ValueError, "OpenSSL refused the TLS settings: %s", words);
    return -1;
}
}

#else /* no OpenSSL at build time */

const char *tls_available(void) {
    return "";
}

int tls_configure(loop_t *L, PyObject *tls) {
    (void)L;
    (void)tls;
    PyErr_SetString(PyExc_RuntimeError, "perflab's compiled loop was built without OpenSSL");
    return -1;
}

#endif
