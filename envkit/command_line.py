"""What every ``python -m <package>`` command shares: exit codes, one-line errors, ``--debug``.

- Exit codes: ``EXIT_OK`` (0), ``EXIT_FAILURE`` (1: the command ran and failed, or its result
  is a failure), ``EXIT_USAGE`` (2: the command cannot run as asked: bad usage, argparse's own
  code, or a missing optional extra), ``EXIT_INTERRUPTED`` (130: Ctrl-C).
- ``CommandError`` (exit 1), ``UsageError`` (a ``ValueError``, exit 2) and ``MissingExtraError``
  (an ``ImportError`` naming the extra to install, exit 2): errors that carry a hint, raised
  where the problem is known.
- ``add_debug_flag(parser)`` and ``run_command(command, prog=..., debug=...)``: the command runs;
  an exception becomes one ``prog: error: message (hint)`` line on stderr and its exit code, with
  the traceback before it under ``--debug``.
- ``did_you_mean(word, choices)``: the nearest valid names, to end an error message with.

Only the standard library is imported, so a command's ``--help`` stays instant.
"""

from __future__ import annotations

import argparse
import difflib
import sys
import traceback
from collections.abc import Callable, Iterable, Mapping

__all__ = [
    "DEBUG_HINT",
    "EXIT_FAILURE",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "CommandError",
    "MissingExtraError",
    "UsageError",
    "add_debug_flag",
    "did_you_mean",
    "error_line",
    "install_hint",
    "run_command",
]

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
DEBUG_HINT = "--debug shows the traceback"


def install_hint(extra: str, package: str = "polyarena") -> str:
    """The pip command that installs ``extra``, quoted for a shell."""
    return f"pip install '{package}[{extra}]'"


class CommandError(Exception):
    """An error a command reports in one line: ``message``, then ``hint``; exit ``code``."""

    code = EXIT_FAILURE

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message, self.hint = message, hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class UsageError(CommandError, ValueError):
    """Bad usage: an unknown key or command, a value that cannot be used (exit 2)."""

    code = EXIT_USAGE


class MissingExtraError(CommandError, ImportError):
    """An optional dependency is not installed (exit 2: the command cannot run as asked); the
    hint is the pip command of its extra unless one is given.

    Example:
        >>> str(MissingExtraError("tensorboard=true needs TensorBoard", "tensorboard"))
        "tensorboard=true needs TensorBoard (pip install 'polyarena[tensorboard]')"
    """

    code = EXIT_USAGE

    def __init__(
        self, message: str, extra: str, package: str = "polyarena", hint: str | None = None
    ) -> None:
        super().__init__(message, hint or install_hint(extra, package))
        self.extra = extra


def did_you_mean(word: str, choices: Iterable[str], n: int = 3) -> str:
    """``"did you mean a or b?"`` naming the choices nearest ``word``; ``""`` when none is near.

    Example:
        >>> did_you_mean("totl_timesteps", ["total_timesteps", "seed", "ppo.total_timesteps"])
        'did you mean total_timesteps or ppo.total_timesteps?'
        >>> did_you_mean("zzz", ["seed"])
        ''
    """
    matches = difflib.get_close_matches(word, list(choices), n=n, cutoff=0.6)
    if not matches:
        return ""
    names = matches[0] if len(matches) == 1 else f"{', '.join(matches[:-1])} or {matches[-1]}"
    return f"did you mean {names}?"


def add_debug_flag(parser: argparse.ArgumentParser) -> None:
    """``--debug``: show the full traceback of an error, not only its one line."""
    parser.add_argument(
        "--debug", action="store_true", help="on an error, print the full traceback too"
    )


def error_line(prog: str, message: str, hint: str | None = None) -> str:
    """``prog: error: message (hint)`` on one line, whatever lines the message had."""
    text = "; ".join(line.strip() for line in message.splitlines() if line.strip())
    return f"{prog}: error: {text}" + (f" ({hint})" if hint else "")


def run_command(
    command: Callable[[], int],
    *,
    prog: str,
    debug: bool = False,
    usage_errors: tuple[type[BaseException], ...] = (),
    usage_hint: str | None = None,
    extras: Mapping[str, str] | None = None,
) -> int:
    """``command()``'s exit code; an exception is reported on stderr and becomes a code.

    Args:
        command: the work, returning its exit code.
        prog: names the command in the error line (``python -m training ppo``).
        debug: print the traceback before the error line.
        usage_errors: exception types that mean bad usage (exit 2), e.g. a config error.
        usage_hint: the hint after a usage error that has none of its own.
        extras: top-level module -> the extra that installs it, so a ``ModuleNotFoundError`` for
            ``torch`` says ``pip install 'polyarena[train]'``.
    """
    try:
        return command()
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as error:
        code, message, hint = _classify(error, usage_errors, usage_hint, extras or {})
        if debug:
            traceback.print_exception(type(error), error, error.__traceback__, file=sys.stderr)
        print(
            error_line(prog, message, None if debug and hint == DEBUG_HINT else hint),
            file=sys.stderr,
        )
        return code


def _classify(
    error: Exception,
    usage_errors: tuple[type[BaseException], ...],
    usage_hint: str | None,
    extras: Mapping[str, str],
) -> tuple[int, str, str | None]:
    """(exit code, message, hint) for an error a command raised."""
    if isinstance(error, CommandError):
        hint = error.hint or (usage_hint if error.code == EXIT_USAGE else None)
        return error.code, error.message, hint
    module = (getattr(error, "name", None) or "").partition(".")[0]
    if isinstance(error, ModuleNotFoundError) and module in extras:
        return EXIT_USAGE, f"{module} is not installed", install_hint(extras[module])
    if isinstance(error, usage_errors):
        return EXIT_USAGE, str(error), usage_hint
    return EXIT_FAILURE, f"{type(error).__name__}: {error}", DEBUG_HINT
