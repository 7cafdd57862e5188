"""Passport signing keys: Ed25519 key generation, PEM files (created owner-only), loading a
private key from a file or ``HBEVAL_PASSPORT_KEY``, and public keys as PEM or raw base64.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey


ENV_PASSPORT_KEY: Final = "HBEVAL_PASSPORT_KEY"
"""Environment variable holding the signing key: PEM text, or the path of a PEM file."""
DEFAULT_KEY_PATH: Final = Path(".hbeval") / "passport-key.pem"
"""Where ``passport keygen`` writes by default: under the working directory, never home."""


class PassportError(ValueError):
    """A passport could not be built, signed or read (bad key, bad report, bad arguments)."""


def _ed25519() -> Any:
    from cryptography.hazmat.primitives.asymmetric import ed25519

    return ed25519


def generate_private_key() -> Ed25519PrivateKey:
    """A new random Ed25519 signing key."""
    key: Ed25519PrivateKey = _ed25519().Ed25519PrivateKey.generate()
    return key


def public_key_raw(private_key: Ed25519PrivateKey) -> bytes:
    """The raw 32-byte public key of a signing key."""
    from cryptography.hazmat.primitives import serialization

    return private_key.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )


def _cwd_is_home() -> bool:
    try:
        return Path.cwd().resolve() == Path.home().resolve()
    except (RuntimeError, OSError, KeyError):
        return False


def write_private_key(
    path: Path | None = None,
    key: Ed25519PrivateKey | None = None,
    *,
    force: bool = False,
) -> tuple[Path, Ed25519PrivateKey]:
    """Write a signing key as unencrypted PKCS#8 PEM with mode 0600, and its public PEM beside it.

    ``path`` None means ``./.hbeval/passport-key.pem`` under the working directory; that default
    is refused when the working directory is the home folder (a key is never written under home
    unasked: pass a path to do it on purpose). An existing key is never overwritten unless
    ``force``. The public key goes to ``<path>.pub`` (SubjectPublicKeyInfo PEM).
    """
    from cryptography.hazmat.primitives import serialization

    explicit = path is not None
    target = Path(path) if path is not None else DEFAULT_KEY_PATH
    if not explicit and _cwd_is_home():
        raise PassportError(
            f"refusing to write the signing key to {target.resolve()}: the working directory "
            "is your home folder, and hbeval never writes keys under home unasked. Run keygen "
            "from the project folder or pass --out FILE."
        )
    if target.exists() and not force:
        raise PassportError(
            f"{target} already exists; refusing to overwrite a signing key (use --force to "
            "replace it: passports signed with the old key will no longer match it)"
        )
    key = key if key is not None else generate_private_key()
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    from ..store._atomic import write_atomic

    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink():
        raise PassportError(
            f"{target} is a symlink; refusing to write a signing key through it (give a plain "
            "file path)"
        )
    write_atomic(target, pem, mode=0o600)
    write_atomic(Path(f"{target}.pub"), public_key_pem(key), mode=0o644)
    return target, key


def public_key_pem(private_key: Ed25519PrivateKey) -> bytes:
    """The public half of a signing key as SubjectPublicKeyInfo PEM (what ``<key>.pub`` holds)."""
    from cryptography.hazmat.primitives import serialization

    pem: bytes = private_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return pem


def _load_private_pem(data: bytes, where: str) -> Ed25519PrivateKey:
    from cryptography.hazmat.primitives import serialization

    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise PassportError(f"{where} is not an unencrypted PEM private key ({exc})") from None
    if not isinstance(key, _ed25519().Ed25519PrivateKey):
        raise PassportError(f"{where} is a {type(key).__name__}, not an Ed25519 key")
    result: Ed25519PrivateKey = key
    return result


def load_private_key(
    path: str | Path | None = None, env: Mapping[str, str] | None = None
) -> Ed25519PrivateKey:
    """The signing key from ``path``, else from ``$HBEVAL_PASSPORT_KEY`` (PEM text or a path)."""
    if path is not None:
        p = Path(path)
        try:
            return _load_private_pem(p.read_bytes(), str(p))
        except OSError as exc:
            raise PassportError(f"cannot read the signing key {str(p)!r}: {exc}") from None
    environ = os.environ if env is None else env
    value = environ.get(ENV_PASSPORT_KEY)
    if not value:
        raise PassportError(
            f"no signing key: pass --key FILE or set {ENV_PASSPORT_KEY} (PEM text or a path); "
            "create one with `hbeval passport keygen`"
        )
    if "-----BEGIN" in value:
        return _load_private_pem(value.encode("utf-8"), f"${ENV_PASSPORT_KEY}")
    p = Path(value)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise PassportError(
            f"${ENV_PASSPORT_KEY} is neither PEM text nor a readable file ({exc})"
        ) from None
    return _load_private_pem(data, f"{p} (from ${ENV_PASSPORT_KEY})")


def _b64decode_exact(text: Any, size: int, what: str) -> bytes:
    """Decode standard base64 that re-encodes to exactly ``text`` and has ``size`` bytes."""
    if not isinstance(text, str):
        raise PassportError(f"{what} is not a base64 string")
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise PassportError(f"{what} is not valid base64") from None
    if base64.b64encode(raw).decode("ascii") != text:
        raise PassportError(f"{what} is not in canonical base64 form")
    if len(raw) != size:
        raise PassportError(f"{what} decodes to {len(raw)} bytes, expected {size}")
    return raw


def load_public_key(source: str | Path) -> bytes:
    """A trusted public key as raw 32 bytes, from a PEM file (public or private) or base64 text."""
    from cryptography.hazmat.primitives import serialization

    text = str(source).strip()
    p = Path(text)
    data: bytes | None = None
    try:
        if p.is_file():
            data = p.read_bytes()
    except OSError:
        data = None
    if data is None:
        try:
            return _b64decode_exact(text, 32, "--key")
        except PassportError:
            raise PassportError(
                f"--key {text!r} is neither a readable key file nor a base64 raw public key"
            ) from None
    if b"PRIVATE KEY" in data:
        return public_key_raw(_load_private_pem(data, str(p)))
    try:
        key = serialization.load_pem_public_key(data)
    except ValueError:
        try:
            return _b64decode_exact(data.decode("ascii").strip(), 32, str(p))
        except (UnicodeDecodeError, PassportError):
            raise PassportError(f"{p} holds no PEM or base64 Ed25519 public key") from None
    if not isinstance(key, _ed25519().Ed25519PublicKey):
        raise PassportError(f"{p} is a {type(key).__name__}, not an Ed25519 public key")
    raw: bytes = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return raw
