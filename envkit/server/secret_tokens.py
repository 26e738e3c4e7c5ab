"""Secret tokens a server hands out once and keeps only as digests (seat tokens, in chess's game
service and the world server).

- ``TOKEN_BYTES``: the random bytes of a token (32: 256 bits, as chess's game service draws its own
  seat tokens in ``chess_env.serving.service.tokens``).
- ``new_token()``: a fresh ``secrets.token_urlsafe(TOKEN_BYTES)``.
- ``token_digest(token)``: its SHA-256 in hex, what a server keeps: enough to tell whose a token
  is, useless to whoever reads it (256 random bits cannot be found back from their digest, so
  no salt or slow hash is needed).
- ``same_secret(given, secret)``: the comparison, in constant time (``hmac.compare_digest``).

Example:
    >>> token = new_token()
    >>> kept = token_digest(token)
    >>> same_secret(token_digest(token), kept), same_secret(token_digest("guess"), kept)
    (True, False)
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

__all__ = ["TOKEN_BYTES", "new_token", "same_secret", "token_digest"]

TOKEN_BYTES = 32  # at least 16 (128 bits) is the bar; 32 costs nothing


def new_token() -> str:
    """A fresh secret of ``TOKEN_BYTES`` random bytes, URL-safe text (43 characters).

    Example:
        >>> len(new_token()), new_token() != new_token()
        (43, True)
    """
    return secrets.token_urlsafe(TOKEN_BYTES)


def token_digest(token: str) -> str:
    """The SHA-256 of ``token``, in hex; a lone surrogate (which JSON may carry) is hashed as
    its code point rather than refused.

    Example:
        >>> token_digest("abc")[:16]
        'ba7816bf8f01cfea'
    """
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def same_secret(given: str, secret: str) -> bool:
    """Whether ``given`` is ``secret``, in time independent of where they differ.

    Example:
        >>> same_secret("abc", "abc"), same_secret("abd", "abc")
        (True, False)
    """
    return hmac.compare_digest(
        given.encode("utf-8", "surrogatepass"), secret.encode("utf-8", "surrogatepass")
    )
