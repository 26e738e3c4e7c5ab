"""Seat tokens: the secrets that let a client play its side of a service game, or abort it.

- ``SeatTokens``: a game's tokens, one per remote side and one for the creator, each
  ``secrets.token_urlsafe(TOKEN_BYTES)`` (256 bits). ``POST /games`` returns them once; the
  service keeps them in its own memory, keyed by game id and dropped with the game, never on the
  ``Game`` (so never in a listing, a frame, the PGN or the archive).
- ``SEAT_TOKEN_HEADER``: the request header that carries one ("X-Seat-Token"), not
  ``Authorization`` (the server-wide bearer token's) and never the URL (access logs print it).
- ``SeatDigests``: what the service keeps of them: their SHA-256, enough to tell whose a token is
  and saved with the game so that its players can go on after a restart, useless to whoever reads
  them (a token's 256 random bits cannot be found back from its digest).
- ``same_secret(given, secret)``: the comparison, in constant time (``hmac.compare_digest``);
  it, ``digest`` and ``TOKEN_BYTES`` are ``envkit.server.secret_tokens``'s, shared with the
  world server's seats.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from chess_env.core.game import Color
from envkit.server.secret_tokens import TOKEN_BYTES, new_token, same_secret
from envkit.server.secret_tokens import token_digest as digest

__all__ = [
    "SEAT_TOKEN_HEADER",
    "TOKEN_BYTES",
    "Holder",
    "SeatDigests",
    "SeatTokens",
    "digest",
    "same_secret",
]

SEAT_TOKEN_HEADER = "X-Seat-Token"
Holder = Literal["white", "black", "creator"]


class SeatTokens(BaseModel):
    """A game's secrets: one per side a client plays (null for a side the server plays) and one
    for the creator. ``repr`` hides them, so a log line or traceback never shows one.

    Example:
        >>> tokens = SeatTokens.new(remote=["white"])
        >>> tokens.black is None, len(tokens.white) >= 43, tokens.white != tokens.creator
        (True, True, True)
        >>> tokens.holder(tokens.white), tokens.holder(tokens.creator), tokens.holder("guess")
        ('white', 'creator', None)
        >>> tokens
        SeatTokens()
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    white: str | None = Field(
        repr=False, description=f"White's token for {SEAT_TOKEN_HEADER}; null: the server plays it"
    )
    black: str | None = Field(
        repr=False, description=f"Black's token for {SEAT_TOKEN_HEADER}; null: the server plays it"
    )
    creator: str = Field(
        repr=False, description=f"The creator's token for {SEAT_TOKEN_HEADER}: abort the game"
    )

    @classmethod
    def new(cls, remote: Collection[Color]) -> SeatTokens:
        """Fresh tokens for the ``remote`` sides and the creator."""
        white, black = (new_token() if c in remote else None for c in _SIDES)
        return cls(white=white, black=black, creator=new_token())

    def holder(self, token: str) -> Holder | None:
        """Whose ``token`` is: a side's, the creator's or nobody's. Every secret is compared,
        so the time taken does not tell which one matched."""
        return _whose(token, self.white, self.black, self.creator)


class SeatDigests(BaseModel):
    """The SHA-256 of a game's tokens (null for a side the server plays): whose a token is,
    without the tokens.

    Example:
        >>> tokens = SeatTokens.new(remote=["black"])
        >>> digests = SeatDigests.of(tokens)
        >>> digests.holder(tokens.black), digests.holder(tokens.creator), digests.holder("guess")
        ('black', 'creator', None)
        >>> digests.white is None and tokens.creator not in digests.model_dump_json()
        True
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    white: str | None = Field(description="SHA-256 of white's token, hex; null: the server's")
    black: str | None = Field(description="SHA-256 of black's token, hex; null: the server's")
    creator: str = Field(description="SHA-256 of the creator's token, hex")

    @classmethod
    def of(cls, tokens: SeatTokens) -> SeatDigests:
        white, black = (None if t is None else digest(t) for t in (tokens.white, tokens.black))
        return cls(white=white, black=black, creator=digest(tokens.creator))

    def holder(self, token: str) -> Holder | None:
        """Whose ``token`` is; every digest is compared, as ``SeatTokens.holder`` does."""
        return _whose(digest(token), self.white, self.black, self.creator)


def _whose(given: str, white: str | None, black: str | None, creator: str) -> Holder | None:
    """Whose secret ``given`` is; each is compared, so the time does not tell which matched."""
    found: Holder | None = None
    secrets_of: tuple[tuple[Holder, str | None], ...] = (
        ("white", white),
        ("black", black),
        ("creator", creator),
    )
    for holder, secret in secrets_of:
        if secret is not None and same_secret(given, secret):
            found = holder
    return found


_SIDES: tuple[Color, Color] = ("white", "black")
