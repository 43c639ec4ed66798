"""Certificates and password hashes the cluster needs."""

from __future__ import annotations

import datetime
import hashlib
import hmac

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

RAPI_REALM = "Ganeti Remote API"
CERT_VALIDITY_DAYS = 5 * 365
RSA_BITS = 2048


def generate_self_signed(common_name: str, validity_days: int = CERT_VALIDITY_DAYS,
                         now: datetime.datetime | None = None) -> bytes:
    """A new RSA key and a self-signed certificate for it, as one PEM (key first).

    This is the shape of Ganeti's ``server.pem`` and ``rapi.pem``.
    """
    key = rsa.generate_private_key(public_exponent=65537, key_size=RSA_BITS)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    start = (now or datetime.datetime.now(datetime.UTC)) - datetime.timedelta(hours=1)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + datetime.timedelta(days=validity_days))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(common_name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(serialization.Encoding.PEM,
                                serialization.PrivateFormat.TraditionalOpenSSL,
                                serialization.NoEncryption())
    return key_pem + cert.public_bytes(serialization.Encoding.PEM)


def load_certificate(pem: bytes) -> x509.Certificate:
    """The first certificate in a PEM blob (which may also hold a key)."""
    return x509.load_pem_x509_certificate(pem)


def certificate_digest(pem: bytes) -> str:
    """SHA-1 fingerprint of the certificate, as Ganeti lists candidate certificates."""
    return load_certificate(pem).fingerprint(hashes.SHA1()).hex().upper()


def rapi_ha1(username: str, password: str, realm: str = RAPI_REALM) -> str:
    """The ``{HA1}`` hash of a RAPI password: MD5 of ``user:realm:password``."""
    return hashlib.md5(f"{username}:{realm}:{password}".encode()).hexdigest()


def constant_time_equal(a: str, b: str) -> bool:
    """Compare secrets without leaking their common prefix length through timing."""
    return hmac.compare_digest(a.encode(), b.encode())
