"""Verify a detached OpenPGP signature made with an RSA key, in the standard library only.

AWS documents verifying the EFA installer by its GPG signature: import ``aws-efa-installer.key``,
check that its fingerprint is ``4E90 91BC BB97 A96B 26B1 5E59 A054 80B1 DD2D 3CCC`` and run ``gpg
--verify`` on ``aws-efa-installer-<version>.tar.gz.sig`` ("Get started with EFA and MPI", Amazon EC2
User Guide, step "Verify the authenticity and integrity of the EFA tarball"). The Lambda runtime has
no gpg, so the mirror does the same check here: the public key's v4 fingerprint must be the pinned
one, and the signature over the tarball must verify under that key (RFC 4880 sections 3.2, 4.2, 5.2,
5.5.2, 6.2, 12.2 and 13.1.3; RSA with PKCS#1 v1.5, SHA-256/384/512). Anything else (DSA or ECC keys,
v3 packets, SHA-1 digests, a key or signature that does not parse) is refused, never skipped.

Runs in AWS Lambda beside ``efa_mirror.py`` and in the tests; imports only the standard library.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

# RFC 4880 9.4 hash algorithm ids, and the DER DigestInfo prefix of each (RFC 8017 9.2 note 1).
_HASHES: dict[int, tuple[str, bytes]] = {
    8: ("sha256", bytes.fromhex("3031300d060960864801650304020105000420")),
    9: ("sha384", bytes.fromhex("3041300d060960864801650304020205000430")),
    10: ("sha512", bytes.fromhex("3051300d060960864801650304020305000440")),
}
_RSA = (1, 3)  # RSA (Encrypt or Sign), RSA Sign-Only
_BINARY_DOCUMENT = 0x00


class SignatureError(ValueError):
    """The key or the signature is not what was pinned, or does not verify."""


def dearmor(data: bytes) -> bytes:
    """The binary packets of ``data``: ASCII armor (RFC 4880 6.2) removed, binary returned as is."""
    if not data.lstrip().startswith(b"-----BEGIN PGP"):
        return data
    lines = data.decode("ascii", errors="strict").strip().splitlines()
    body: list[str] = []
    in_body = False
    for line in lines[1:]:
        if line.startswith("-----END PGP"):
            break
        if not in_body:
            in_body = line.strip() == ""
            continue
        if line.startswith("="):  # the CRC-24 line
            continue
        body.append(line.strip())
    if not body:
        raise SignatureError("the ASCII armor holds no data")
    return base64.b64decode("".join(body), validate=True)


def packets(data: bytes) -> list[tuple[int, bytes]]:
    """(tag, body) of each packet in ``data`` (old and new packet formats, RFC 4880 4.2)."""
    found: list[tuple[int, bytes]] = []
    at = 0
    while at < len(data):
        first = data[at]
        if not first & 0x80:
            raise SignatureError(f"no packet header at byte {at}")
        if first & 0x40:  # new format
            tag = first & 0x3F
            at += 1
            octet = data[at]
            if octet < 192:
                length, at = octet, at + 1
            elif octet < 224:
                length, at = ((octet - 192) << 8) + data[at + 1] + 192, at + 2
            elif octet == 255:
                length, at = int.from_bytes(data[at + 1 : at + 5], "big"), at + 5
            else:
                raise SignatureError("partial body lengths are not used in keys or signatures")
        else:  # old format
            tag = (first >> 2) & 0x0F
            kind = first & 0x03
            if kind == 3:
                raise SignatureError("indeterminate packet lengths are not used in keys or signatures")
            size = 1 << kind
            length = int.from_bytes(data[at + 1 : at + 1 + size], "big")
            at += 1 + size
        if at + length > len(data):
            raise SignatureError("a packet runs past the end of the data")
        found.append((tag, data[at : at + length]))
        at += length
    return found


def _mpi(data: bytes, at: int) -> tuple[int, int]:
    bits = int.from_bytes(data[at : at + 2], "big")
    size = (bits + 7) // 8
    if at + 2 + size > len(data):
        raise SignatureError("a multiprecision integer runs past its packet")
    return int.from_bytes(data[at + 2 : at + 2 + size], "big"), at + 2 + size


def rsa_key(armored_key: bytes) -> tuple[str, int, int]:
    """(fingerprint, n, e) of the primary RSA public key in ``armored_key`` (RFC 4880 5.5.2, 12.2)."""
    for tag, body in packets(dearmor(armored_key)):
        if tag != 6:  # public-key packet
            continue
        if body[0] != 4:
            raise SignatureError(f"public key version {body[0]}: only v4 keys are accepted")
        if body[5] not in _RSA:
            raise SignatureError(f"public key algorithm {body[5]}: only RSA keys are accepted")
        n, at = _mpi(body, 6)
        e, _ = _mpi(body, at)
        fingerprint = hashlib.sha1(b"\x99" + len(body).to_bytes(2, "big") + body).hexdigest().upper()
        return fingerprint, n, e
    raise SignatureError("no public key packet found")


def _subpacket_issuers(area: bytes) -> set[bytes]:
    """Issuer key ids (subpacket 16) and fingerprints (33) in a signature subpacket area."""
    issuers: set[bytes] = set()
    at = 0
    while at < len(area):
        octet = area[at]
        if octet < 192:
            length, at = octet, at + 1
        elif octet < 255:
            length, at = ((octet - 192) << 8) + area[at + 1] + 192, at + 2
        else:
            length, at = int.from_bytes(area[at + 1 : at + 5], "big"), at + 5
        kind = area[at] & 0x7F
        value = area[at + 1 : at + length]
        if kind == 16:
            issuers.add(value)
        elif kind == 33 and value[:1] == b"\x04":
            issuers.add(value[1:][-8:])
        at += length
    return issuers


def verify_detached(data_path: str, signature: bytes, armored_key: bytes, fingerprint: str) -> str:
    """Check that ``signature`` over the file at ``data_path`` was made by the key with ``fingerprint``.

    :param fingerprint: the expected v4 fingerprint, hex, spaces ignored (as AWS prints it).
    :returns: the hash algorithm the signature used (``sha256``, ...).
    :raises SignatureError: naming what does not match.
    """
    expected = fingerprint.replace(" ", "").upper()
    actual, n, e = rsa_key(armored_key)
    if actual != expected:
        raise SignatureError(f"the key's fingerprint is {actual}, not the pinned {expected}")
    signatures = [body for tag, body in packets(dearmor(signature)) if tag == 2]
    if len(signatures) != 1:
        raise SignatureError(f"{len(signatures)} signature packets found, expected 1")
    (body,) = signatures
    if body[0] != 4:
        raise SignatureError(f"signature version {body[0]}: only v4 signatures are accepted")
    sig_type, algorithm, hash_id = body[1], body[2], body[3]
    if sig_type != _BINARY_DOCUMENT:
        raise SignatureError(f"signature type {sig_type:#04x} is not a signature of a binary document")
    if algorithm not in _RSA:
        raise SignatureError(f"signature algorithm {algorithm}: only RSA is accepted")
    if hash_id not in _HASHES:
        raise SignatureError(f"hash algorithm {hash_id}: only SHA-256, SHA-384 and SHA-512 are accepted")
    hashed_length = int.from_bytes(body[4:6], "big")
    hashed_end = 6 + hashed_length
    unhashed_length = int.from_bytes(body[hashed_end : hashed_end + 2], "big")
    unhashed_end = hashed_end + 2 + unhashed_length
    key_id = bytes.fromhex(expected)[-8:]
    issuers = _subpacket_issuers(body[6:hashed_end]) | _subpacket_issuers(body[hashed_end + 2 : unhashed_end])
    if issuers and key_id not in issuers:
        raise SignatureError(
            f"the signature names issuer(s) {sorted(i.hex() for i in issuers)}, not {key_id.hex()}"
        )
    left16 = body[unhashed_end : unhashed_end + 2]
    value, _ = _mpi(body, unhashed_end + 2)
    name, prefix = _HASHES[hash_id]
    digest: Any = hashlib.new(name)
    with open(data_path, "rb") as data:
        for chunk in iter(lambda: data.read(1024 * 1024), b""):
            digest.update(chunk)
    hashed_part = body[:hashed_end]
    digest.update(hashed_part)
    digest.update(b"\x04\xff" + len(hashed_part).to_bytes(4, "big"))
    result = digest.digest()
    if result[:2] != left16:
        raise SignatureError("the signature does not match the data (digest check bytes differ)")
    size = (n.bit_length() + 7) // 8
    encoded = pow(value, e, n).to_bytes(size, "big")
    padding = size - 3 - len(prefix) - len(result)
    if padding < 8 or encoded != b"\x00\x01" + b"\xff" * padding + b"\x00" + prefix + result:
        raise SignatureError("the RSA signature does not verify")
    return name


__all__ = ["SignatureError", "dearmor", "packets", "rsa_key", "verify_detached"]
