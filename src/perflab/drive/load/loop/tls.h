/* TLS as a transport of the compiled loop (transport.h), on the machine's OpenSSL where perflab
 * was built with it (setup.py looks for its headers): an https:// target's users speak it as the
 * lean client does (http_client.py's TlsSetup): the same verification (a CA file, or the
 * system's), host name check and SNI, version pins and TLS 1.2 cipher list, and a user's last
 * session offered again on its next connection when session_resumption asks. Without it,
 * tls_available() is "" and native_http.py sends https on the Python path, saying why. */
#ifndef PERFLAB_TLS_H
#define PERFLAB_TLS_H

#include <Python.h>

#include "loop.h"

/* The OpenSSL the loop was built with ("" when none). */
const char *tls_available(void);

/* tls = (ca_file or None, verify, min_version, max_version, ciphers or None, server_name,
 * session_resumption): L->transport becomes TLS. -1 with a Python exception set. */
int tls_configure(loop_t *L, PyObject *tls);

#endif
