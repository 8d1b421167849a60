"""A self-signed certificate for a TLS server made for one run (the openssl command-line tool).

A TLS study needs a server certificate, and a certificate kept in the repository would carry a
private key anyone can read; one made per run costs a few milliseconds (an RSA-2048 key, more
for 4096) before the server starts, outside the measurement. The workload's service block calls
it as a setup command, and the driver verifies the server against the certificate itself
(target.tls.ca_file):

    service:
      setup: [["{python}", -m, perflab.sut.tls_cert, "{run_dir}", --key, "rsa:2048"]]
    target:
      tls: {ca_file: "{run_dir}/cert.pem"}

    python -m perflab.sut.tls_cert DIR [--key rsa:2048|rsa:4096|ec:P-256] [--san IP:10.0.0.2 ...]

writes DIR/cert.pem and DIR/key.pem, valid for localhost and 127.0.0.1 (and the --san names).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

KEYS = {
    # the key type decides the handshake's signature cost: RSA signing is the server's expensive
    # part (and 4096 bits about 7x 2048), ECDSA P-256 much cheaper
    "rsa:2048": ["-newkey", "rsa:2048"],
    "rsa:4096": ["-newkey", "rsa:4096"],
    "ec:P-256": ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"],
}
DEFAULT_SAN = ("DNS:localhost", "IP:127.0.0.1")


class CertificateError(RuntimeError):
    pass


def make_self_signed(directory: Path, key: str = "rsa:2048", san: tuple[str, ...] = (),
                     days: int = 7) -> tuple[Path, Path]:
    """(cert.pem, key.pem) in `directory`; raises CertificateError saying what is missing."""
    if key not in KEYS:
        raise CertificateError(f"unknown key type {key!r}; known: {', '.join(KEYS)}")
    openssl = shutil.which("openssl")
    if openssl is None:
        raise CertificateError("the openssl command is not installed (apt-get install openssl)")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    cert, private = directory / "cert.pem", directory / "key.pem"
    names = ",".join(dict.fromkeys([*DEFAULT_SAN, *san]))
    argv = [openssl, "req", "-x509", *KEYS[key], "-nodes", "-keyout", str(private), "-out", str(cert),
            "-days", str(days), "-subj", "/CN=perflab", "-addext", f"subjectAltName={names}"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise CertificateError(f"openssl req failed: {done.stderr.strip()[-500:]}")
    private.chmod(0o600)
    return cert, private


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m perflab.sut.tls_cert", description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--key", default="rsa:2048", choices=sorted(KEYS))
    parser.add_argument("--san", action="append", default=[], help="another subjectAltName, e.g. IP:169.254.77.2")
    args = parser.parse_args(argv)
    try:
        cert, _ = make_self_signed(args.directory, args.key, tuple(args.san))
    except CertificateError as exc:
        print(f"tls_cert: {exc}", file=sys.stderr)
        return 1
    print(cert)
    return 0


if __name__ == "__main__":
    sys.exit(main())
