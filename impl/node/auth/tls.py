"""TLS for the broker protocol (opt-in, ``tls``): Kafka's SASL_SSL rather than SASL_PLAINTEXT.

SCRAM (:mod:`.scram`) proves who is at each end; TLS adds what SCRAM does not give --
confidentiality, and integrity of every frame after the exchange, so a peer on the network
path can neither read records nor inject frames into an authenticated connection.

The harness makes a cluster CA and one broker certificate (subject alternative names
127.0.0.1 and localhost, where every broker here listens) with the ``openssl`` command line,
into ``<data-dir>/security/tls/`` (keys mode 0600); Python's ``ssl`` does the rest.  Clients
verify the broker's certificate against the cluster CA and its host name; brokers do not ask
for client certificates, since SCRAM already names the peer.
"""

from __future__ import annotations

import os
import shutil
import ssl
import subprocess
import tempfile
from pathlib import Path

from impl.node.layout import DataDir

CA, CERT, KEY = "ca.pem", "broker.pem", "broker.key"
_EXT = ("subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n"
        "keyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n")


def tls_dir(data_dir: str | os.PathLike[str]) -> Path:
    return DataDir.of(data_dir).tls


def _openssl(*args: str, cwd: Path) -> None:
    exe = shutil.which("openssl")
    if exe is None:
        raise RuntimeError("TLS needs the openssl command line to make the cluster CA")
    done = subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"openssl {args[0]} failed: {done.stderr.strip()[:200]}")


def ensure_material(data_dir: str | os.PathLike[str]) -> Path:
    """The cluster CA and broker certificate, made once per data directory (EC P-256)."""
    out = tls_dir(data_dir)
    if all((out / f).exists() for f in (CA, CERT, KEY)):
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="tls-", dir=out.parent))
    try:
        os.chmod(work, 0o700)
        _openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "ca.key", cwd=work)
        _openssl("req", "-x509", "-new", "-key", "ca.key", "-sha256", "-days", "3650",
                 "-subj", "/CN=epochal cluster CA", "-out", CA, cwd=work)
        _openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", KEY, cwd=work)
        _openssl("req", "-new", "-key", KEY, "-subj", "/CN=epochal broker", "-out", "broker.csr",
                 cwd=work)
        (work / "ext.cnf").write_text(_EXT)
        _openssl("x509", "-req", "-in", "broker.csr", "-CA", CA, "-CAkey", "ca.key",
                 "-CAcreateserial", "-days", "3650", "-sha256", "-extfile", "ext.cnf",
                 "-out", CERT, cwd=work)
        for name in ("ca.key", KEY):
            os.chmod(work / name, 0o600)
        for name in ("broker.csr", "ext.cnf", "ca.srl"):
            (work / name).unlink(missing_ok=True)
        if out.exists():
            shutil.rmtree(out)
        os.replace(work, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def server_context(data_dir: str | os.PathLike[str]) -> ssl.SSLContext:
    d = tls_dir(data_dir)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        ctx.load_cert_chain(d / CERT, d / KEY)
    except (FileNotFoundError, ssl.SSLError) as exc:
        raise RuntimeError(f"no usable TLS certificate in {d}: {exc}") from None
    return ctx


def client_context(data_dir: str | os.PathLike[str]) -> ssl.SSLContext:
    """Trusts the cluster CA only, and checks the broker's host name."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_verify_locations(tls_dir(data_dir) / CA)
    return ctx


def has_material(data_dir: str | os.PathLike[str]) -> bool:
    return (tls_dir(data_dir) / CA).exists()
