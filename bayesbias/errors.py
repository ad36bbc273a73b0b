"""Named exceptions for the failures a user can cause.

Every error raised for bad input derives from :class:`BayesbiasError`, so the CLI can
print it without a traceback and exit with a meaningful code.
"""

from __future__ import annotations

__all__ = [
    "BayesbiasError",
    "WordListError",
    "EmbeddingFormatError",
    "UntrustedPickleError",
    "OutOfVocabularyError",
    "DistanceTableError",
    "InputDataError",
    "InvalidArgumentError",
    "OutputPathError",
    "ModelSpecError",
    "DiagnosticsError",
    "EncoderError",
    "MissingExtraError",
    "UnsupportedModelError",
]


class BayesbiasError(Exception):
    """Base class of every error bayesbias raises for bad input or failed checks."""

    exit_code = 2


class WordListError(BayesbiasError, ValueError):
    """A word-list file is malformed or inconsistent."""


class EmbeddingFormatError(BayesbiasError, ValueError):
    """An embedding file is malformed; the message names the file and line."""

    def __init__(self, path, message: str, line: int | None = None):
        self.path = str(path)
        self.line = line
        where = f"{self.path}, line {line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")


class UntrustedPickleError(BayesbiasError, PermissionError):
    """A pickle-based file was given without explicit trust."""


class OutOfVocabularyError(BayesbiasError, KeyError):
    """Words of a study are missing from the embedding.

    Parameters
    ----------
    missing : dict of {str: list of str}
        Missing words per word-list part (e.g. ``{"protected:jew": ["rabbi"]}``).
    source : str
        The embedding the words were looked up in.
    """

    def __init__(self, missing: dict[str, list[str]], source: str = "embedding"):
        self.missing = {k: list(v) for k, v in missing.items() if v}
        self.source = source
        parts = "; ".join(f"{k}: {', '.join(v)}" for k, v in self.missing.items())
        super().__init__(
            f"{sum(map(len, self.missing.values()))} word(s) not in {source} ({parts}). "
            "Use on_missing='drop' (CLI: --on-missing drop) to drop them with a report."
        )

    def __str__(self) -> str:  # KeyError would quote the message
        return self.args[0]


class DistanceTableError(BayesbiasError, ValueError):
    """A distance table is malformed (missing columns, bad values, conflicting repeats)."""


class InputDataError(BayesbiasError, ValueError):
    """A data table (e.g. classifier scores) is malformed for the requested metric."""


class InvalidArgumentError(BayesbiasError, ValueError):
    """An argument (Python keyword or CLI flag) has a value outside what it accepts.

    The message names the argument, the value given and what is valid.
    """


class OutputPathError(BayesbiasError, OSError):
    """An output target cannot be written (not a regular file, no permission, no space).

    Raised before any computation when the target can be checked up front.
    """


class ModelSpecError(BayesbiasError, ValueError):
    """A model spec is invalid, or a saved fit does not match its spec."""


class DiagnosticsError(BayesbiasError, RuntimeError):
    """Sampler diagnostics failed and strict checking was requested."""

    exit_code = 3


class EncoderError(BayesbiasError, RuntimeError):
    """An encoder cannot be loaded or used (not on disk, not a model folder, bad text)."""


class MissingExtraError(EncoderError, ImportError):
    """The encoder libraries are not installed; the message names the extra to install."""


class UnsupportedModelError(EncoderError):
    """The light route cannot reproduce a model exactly; the message names the reason."""
