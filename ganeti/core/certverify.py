"""Certificate checks of cluster verify, as Ganeti's ``utils.VerifyCertificate``.

:func:`verify_certificate` answers ``(level, message)``: ``(None, None)``
for a good certificate, ``("WARNING", ...)`` when it expires within
:data:`EXPIRATION_WARN_DAYS` days, is not valid yet or is weak, and
``("ERROR", ...)`` when it cannot be read, has expired or expires within
:data:`EXPIRATION_ERROR_DAYS` days.  Pure: the caller reads the file and
gives the time.
"""

from __future__ import annotations

import time

from cryptography.hazmat.primitives.asymmetric import rsa

from ganeti.core import crypto
from ganeti.core.verifycodes import ERROR, WARNING

EXPIRATION_WARN_DAYS = 30
EXPIRATION_ERROR_DAYS = 7
MIN_RSA_BITS = 2048
WEAK_SIGNATURES = frozenset({"sha1WithRSAEncryption", "md5WithRSAEncryption"})
#: Clock skew allowed between nodes, in seconds (Ganeti's NODE_MAX_CLOCK_SKEW).
MAX_CLOCK_SKEW = 150.0

Verdict = tuple[str | None, str | None]


def format_time(value: float) -> str:
    """A timestamp as Ganeti prints it (local time, ``%F %T``)."""
    return time.strftime("%F %T", time.localtime(value))


def _validity(not_before: float, not_after: float, now: float) -> Verdict:
    if not_after < now:
        return (ERROR, f"Certificate is expired (valid from {format_time(not_before)} "
                       f"to {format_time(not_after)})")
    now += MAX_CLOCK_SKEW
    if not_before > now:
        return (WARNING, f"Certificate not yet valid (valid from {format_time(not_before)})")
    remaining = int((not_after - now) / (24 * 3600))
    msg = f"Certificate expires in about {remaining} days"
    if remaining <= EXPIRATION_ERROR_DAYS:
        return (ERROR, msg)
    if remaining <= EXPIRATION_WARN_DAYS:
        return (WARNING, msg)
    return (None, None)


def _strength(algorithm: str, key_bits: int | None) -> Verdict:
    warnings = []
    if algorithm in WEAK_SIGNATURES:
        warnings.append(f"weak signature algorithm '{algorithm}', consider running "
                        "gnt-cluster renew-crypto")
    if key_bits is not None and key_bits < MIN_RSA_BITS:
        warnings.append(f"weak public/private keypair: {key_bits} bits, should be at least "
                        f"{MIN_RSA_BITS} bits, consider running gnt-cluster renew-crypto")
    return (WARNING, ", ".join(warnings)) if warnings else (None, None)


def verify_certificate(pem: bytes | None, name: str, now: float) -> Verdict:
    """Check the certificate in ``pem`` (None: the file is missing); ``name`` names it."""
    if pem is None:
        return (ERROR, f"Failed to load X509 certificate {name}: [Errno 2] "
                       "No such file or directory")
    try:
        cert = crypto.load_certificate(pem)
    except ValueError as err:
        return (ERROR, f"Failed to load X509 certificate {name}: {err}")
    checks = [_validity(cert.not_valid_before_utc.timestamp(),
                        cert.not_valid_after_utc.timestamp(), now)]
    oid_name = getattr(cert.signature_algorithm_oid, "_name", "")
    key = cert.public_key()
    bits = key.key_size if isinstance(key, rsa.RSAPublicKey) else None
    checks.append(_strength(oid_name, bits))
    found = [c for c in checks if c[0] is not None]
    if not found:
        return (None, None)
    worst = ERROR if any(level == ERROR for level, _ in found) else WARNING
    text = ", ".join(msg or "" for level, msg in found if level == worst)
    return (worst, f"While verifying {name}: {text}")


def certificate_digest(pem: bytes) -> str:
    """The SHA-1 fingerprint Ganeti keeps in ``candidate_certs``."""
    return crypto.certificate_digest(pem)
