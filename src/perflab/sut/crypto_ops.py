"""Cryptographic operations as the system under test: the CPU cost of one hash, cipher or public-key
operation, through the `cryptography` package (the seeds' VSE/ESA crypto measurements,
004_123ec862020336cf.txt: RSA, DES/3DES and SHA/MD5 cost per operation, "each crypto operation
is performed 10000 times").

Each function is a python-adapter transaction that performs `ops` operations of one kind, so the
CPU per operation is PBT/CMD (S) / ops. `batch(kind)` names the operation by a short string and
takes its batch size from OPS, sized so that a batch costs about a millisecond -- long beside the
worker's own cost per transaction (tens of microseconds; the `noop` kind measures it), short
enough for thousands of transactions per window:

    transactions:
      - {name: op, call: "perflab.sut.crypto_ops:batch", kwargs: {kind: "sha256:1024"}}
      - {name: sign, call: "perflab.sut.crypto_ops:rsa_sign", kwargs: {bits: 2048, ops: 4}}

Which release of `cryptography` runs is whichever the worker imports first: a study compares two
by putting each on the workers' path (the python target's `path`, or a release field that
installs a pinned requirement). Keys, plaintexts and ciphertexts are made on a worker's first
call of a kind (inside the stabilization period, not the window) and reused: what is measured is
the operation, not its set-up. Symmetric ciphers encrypt (decryption costs the same to within a
few percent in OpenSSL); RSA is measured both ways, since signing and decrypting use the private
key (the server's side of an RSA handshake) and are tens of times dearer than verifying and
encrypting.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from typing import Any

#: kind -> operations per transaction (about 1 ms of CPU on the 2-core development VM).
OPS: dict[str, int] = {
    "noop": 1000,
    "md5:1024": 500, "sha1:1024": 500, "sha256:1024": 500, "hmac-sha256:1024": 500,
    "sha256:64": 1000, "hashlib-sha256:1024": 500,
    "aes128-gcm:1024": 500, "aes128-cbc:1024": 500, "chacha20-poly1305:1024": 500, "3des-cbc:1024": 50,
    "rsa-sign:2048": 2, "rsa-decrypt:2048": 2, "rsa-verify:2048": 50, "rsa-encrypt:2048": 50,
    "rsa-sign:1024": 10, "rsa-sign:4096": 1,
    "ecdsa-sign:p256": 50, "ecdsa-verify:p256": 20, "x25519": 20,
}

_cache: dict[tuple, Any] = {}


def _cached(key: tuple, make: Callable[[], Any]) -> Any:
    value = _cache.get(key)
    if value is None:
        value = _cache[key] = make()
    return value


def _data(nbytes: int) -> bytes:
    return _cached(("data", nbytes), lambda: os.urandom(nbytes))


def versions() -> dict[str, str]:
    """The `cryptography` release this process imported and the OpenSSL it carries."""
    import cryptography
    from cryptography.hazmat.backends.openssl.backend import backend

    return {"cryptography": cryptography.__version__, "openssl": backend.openssl_version_text(),
            "path": os.path.dirname(cryptography.__file__)}


# -- hashes and MACs -------------------------------------------------------------------------


def _hash(algorithm: str, nbytes: int, ops: int) -> None:
    from cryptography.hazmat.primitives import hashes

    factory = getattr(hashes, algorithm)
    data = _data(nbytes)
    for _ in range(ops):
        digest = hashes.Hash(factory())
        digest.update(data)
        digest.finalize()


def md5(nbytes: int = 1024, ops: int = 1, **_ignored: Any) -> None:
    _hash("MD5", nbytes, ops)


def sha1(nbytes: int = 1024, ops: int = 1, **_ignored: Any) -> None:
    _hash("SHA1", nbytes, ops)


def sha256(nbytes: int = 1024, ops: int = 1, **_ignored: Any) -> None:
    _hash("SHA256", nbytes, ops)


def hmac_sha256(nbytes: int = 1024, ops: int = 1, **_ignored: Any) -> None:
    from cryptography.hazmat.primitives import hashes, hmac

    key, data = _cached(("hmac-key",), lambda: os.urandom(32)), _data(nbytes)
    for _ in range(ops):
        mac = hmac.HMAC(key, hashes.SHA256())
        mac.update(data)
        mac.finalize()


def hashlib_sha256(nbytes: int = 1024, ops: int = 1, **_ignored: Any) -> None:
    """The interpreter's own hashlib (its OpenSSL, not cryptography's): the reference that no
    release of `cryptography` moves."""
    data = _data(nbytes)
    for _ in range(ops):
        hashlib.sha256(data).digest()


# -- symmetric ciphers -------------------------------------------------------------------------


def aes_gcm(nbytes: int = 1024, ops: int = 1, bits: int = 128, **_ignored: Any) -> None:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    aead = _cached(("aesgcm", bits), lambda: AESGCM(os.urandom(bits // 8)))
    nonce, data = _cached(("nonce12",), lambda: os.urandom(12)), _data(nbytes)
    for _ in range(ops):
        aead.encrypt(nonce, data, None)  # a fixed nonce is wrong for secrecy, right for a cost


def chacha20_poly1305(nbytes: int = 1024, ops: int = 1, **_ignored: Any) -> None:
    from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

    aead = _cached(("chacha",), lambda: ChaCha20Poly1305(os.urandom(32)))
    nonce, data = _cached(("nonce12",), lambda: os.urandom(12)), _data(nbytes)
    for _ in range(ops):
        aead.encrypt(nonce, data, None)


def _cbc(algorithm: Any, block: int, nbytes: int, ops: int) -> None:
    from cryptography.hazmat.primitives.ciphers import Cipher, modes

    iv = os.urandom(block)
    data = _data(nbytes - nbytes % block or block)  # whole blocks: no padding step is measured
    for _ in range(ops):
        encryptor = Cipher(algorithm, modes.CBC(iv)).encryptor()
        encryptor.update(data)
        encryptor.finalize()


def aes_cbc(nbytes: int = 1024, ops: int = 1, bits: int = 128, **_ignored: Any) -> None:
    from cryptography.hazmat.primitives.ciphers import algorithms

    _cbc(algorithms.AES(_cached(("aes-key", bits), lambda: os.urandom(bits // 8))), 16, nbytes, ops)


def tdes_cbc(nbytes: int = 1024, ops: int = 1, **_ignored: Any) -> None:
    """Triple DES (the seeds' 3DES CBC). cryptography 43 moved it to the `decrepit` module and
    later releases removed the old name; either release is served."""
    try:
        from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
    except ImportError:
        from cryptography.hazmat.primitives.ciphers.algorithms import TripleDES
    _cbc(TripleDES(_cached(("3des-key",), lambda: os.urandom(24))), 8, nbytes, ops)


# -- public-key operations ---------------------------------------------------------------------


def _rsa_key(bits: int):
    from cryptography.hazmat.primitives.asymmetric import rsa

    return _cached(("rsa", bits), lambda: rsa.generate_private_key(public_exponent=65537, key_size=bits))


def rsa_sign(bits: int = 2048, ops: int = 1, **_ignored: Any) -> None:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding

    key, data = _rsa_key(bits), _data(64)
    for _ in range(ops):
        key.sign(data, padding.PKCS1v15(), hashes.SHA256())


def rsa_verify(bits: int = 2048, ops: int = 1, **_ignored: Any) -> None:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding

    key, data = _rsa_key(bits), _data(64)
    signature = _cached(("rsa-sig", bits), lambda: key.sign(data, padding.PKCS1v15(), hashes.SHA256()))
    public = key.public_key()
    for _ in range(ops):
        public.verify(signature, data, padding.PKCS1v15(), hashes.SHA256())


def rsa_encrypt(bits: int = 2048, ops: int = 1, **_ignored: Any) -> None:
    from cryptography.hazmat.primitives.asymmetric import padding

    public, secret = _rsa_key(bits).public_key(), _data(48)  # a TLS 1.2 premaster secret's size
    for _ in range(ops):
        public.encrypt(secret, padding.PKCS1v15())


def rsa_decrypt(bits: int = 2048, ops: int = 1, **_ignored: Any) -> None:
    """The server's side of an RSA key exchange (the seeds' RSA decrypt)."""
    from cryptography.hazmat.primitives.asymmetric import padding

    key = _rsa_key(bits)
    sealed = _cached(("rsa-sealed", bits), lambda: key.public_key().encrypt(_data(48), padding.PKCS1v15()))
    for _ in range(ops):
        key.decrypt(sealed, padding.PKCS1v15())


def _ec_key():
    from cryptography.hazmat.primitives.asymmetric import ec

    return _cached(("p256",), lambda: ec.generate_private_key(ec.SECP256R1()))


def ecdsa_sign(ops: int = 1, **_ignored: Any) -> None:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec

    key, data = _ec_key(), _data(64)
    for _ in range(ops):
        key.sign(data, ec.ECDSA(hashes.SHA256()))


def ecdsa_verify(ops: int = 1, **_ignored: Any) -> None:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec

    key, data = _ec_key(), _data(64)
    signature = _cached(("p256-sig",), lambda: key.sign(data, ec.ECDSA(hashes.SHA256())))
    public = key.public_key()
    for _ in range(ops):
        public.verify(signature, data, ec.ECDSA(hashes.SHA256()))


def x25519(ops: int = 1, **_ignored: Any) -> None:
    """One ECDHE key agreement (what a TLS 1.3 handshake does on each side)."""
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

    peer = _cached(("x25519-peer",), lambda: X25519PrivateKey.generate().public_key())
    for _ in range(ops):
        X25519PrivateKey.generate().exchange(peer)


def noop(ops: int = 1, **_ignored: Any) -> None:
    """Nothing, `ops` times: the adapter's own cost per transaction, the floor under every kind."""
    for _ in range(ops):
        pass


_KINDS: dict[str, Callable[..., None]] = {
    "noop": noop, "md5": md5, "sha1": sha1, "sha256": sha256, "hmac-sha256": hmac_sha256,
    "hashlib-sha256": hashlib_sha256, "aes128-gcm": aes_gcm, "aes256-gcm": aes_gcm, "aes128-cbc": aes_cbc,
    "chacha20-poly1305": chacha20_poly1305, "3des-cbc": tdes_cbc, "rsa-sign": rsa_sign, "rsa-verify": rsa_verify,
    "rsa-encrypt": rsa_encrypt, "rsa-decrypt": rsa_decrypt, "ecdsa-sign": ecdsa_sign, "ecdsa-verify": ecdsa_verify,
    "x25519": x25519,
}


def parse_kind(kind: str) -> tuple[Callable[..., None], dict[str, Any]]:
    """'sha256:1024' -> (sha256, {nbytes: 1024}); 'rsa-sign:2048' -> (rsa_sign, {bits: 2048})."""
    name, _, arg = kind.partition(":")
    function = _KINDS.get(name)
    if function is None:
        raise ValueError(f"unknown crypto operation {kind!r}; known: {', '.join(sorted(OPS))}")
    kwargs: dict[str, Any] = {}
    if name.startswith("aes256"):
        kwargs["bits"] = 256
    if arg and arg.isdigit():
        kwargs["bits" if name.startswith(("rsa", "ecdsa")) else "nbytes"] = int(arg)
    return function, kwargs


def batch(kind: str, ops: int | None = None, expect: str | None = None) -> None:
    """One transaction of the kind: OPS[kind] operations unless `ops` says otherwise. `expect`: the
    `cryptography` release that must have been imported (a study that put the wrong one on the
    path fails every transaction instead of measuring the wrong release)."""
    if expect is not None:
        import cryptography

        if cryptography.__version__ != expect:
            raise RuntimeError(f"cryptography {cryptography.__version__} was imported (from "
                               f"{os.path.dirname(cryptography.__file__)}), not {expect}")
    function, kwargs = parse_kind(kind)
    count = ops if ops is not None else OPS.get(kind)
    if count is None:
        raise ValueError(f"{kind!r} has no default batch size in OPS: give ops")
    function(ops=count, **kwargs)
