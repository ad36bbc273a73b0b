"""Provenance, "how to cite" and re-running a report from its ``results.json``.

``results.json`` holds the report's :class:`~bayesbias.report.ReportSettings` and a
provenance record (:func:`bayesbias.provenance.provenance`): :func:`settings_from_results`
turns it back into settings, and ``bayesbias report --rerun results.json`` writes the same
report again, after checking that every input file still has its recorded digest.
"""

from __future__ import annotations

import json
import logging
from dataclasses import fields
from pathlib import Path

from .. import provenance as _prov
from ..citation import cite_bayesbias, references
from ..errors import InputDataError
from .settings import ReportSettings

__all__ = ["back_matter", "report_inputs", "provenance_section", "cite_section",
           "settings_from_results",
           "check_inputs"]

log = logging.getLogger(__name__)


def report_inputs(settings) -> list[tuple[str, object]]:
    """Return the report's inputs as (role, what the user gave): embedding, lists, tables, model."""
    s = settings
    out: list[tuple[str, object]] = []
    if s.distances:
        out += [("distances", d) for d in s.distances]
    else:
        out.append(("embedding", s.embedding if s.embedding is not None else "default"))
        if hasattr(s.embedding, "to_dict"):  # a sentence encoder: its model folder, corpus
            d = s.embedding.to_dict()
            if Path(str(d.get("encoder"))).is_dir():
                out.append(("encoder model", d["encoder"]))
            if d.get("corpus") and Path(str(d["corpus"])).is_file():
                out.append(("corpus", d["corpus"]))
        from ..inputs.ensemble import manifest_path

        manifest = manifest_path(s.embedding)
        if manifest is not None:  # the embeddings of bayesbias train
            out.append(("manifest", str(manifest)))
        out += [("wordlist", w) for w in s.wordlists]
        out.append(("controls", "controls"))  # the shipped control groups
    out.append(("model", s.model))
    return out


def provenance_section(report, prov: dict, rerun: bool = True) -> None:
    """Add the provenance section (after the settings)."""
    sec = report.section("Provenance", last=True)
    sec.text("How this report was made: versions, date, the exact command line and the "
             "sha256 digest and size of every input file (also in `results.json` under "
             "`provenance`, and in each saved fit's attributes)."
             + (" Re-run it with `bayesbias report --rerun results.json -o NEW-FOLDER`."
                if rerun else " Re-run it with the command line above."))
    sec.bullets(_prov.provenance_lines(prov))


def cite_keys(settings, contexts) -> set[str]:
    """Which references the report's methods, data and software call for."""
    keys = {"bayesian", "mac", "pymc", "arviz"}
    if any("weats" in c.__dict__ and c.weats for c in contexts):
        keys.add("weat")
    if any(str(w).startswith("weat") for w in getattr(settings, "wordlists", ())):
        keys.add("weat")
    if any(c.__dict__.get("embedding_metrics") is not None for c in contexts):
        keys |= {"rnd", "rnsb", "ect", "ripa", "bolukbasi", "weat"}
    if not settings.distances and settings.embedding in (None, "default", "glove-6b-50d"):
        keys.add("glove")
    emb = settings.embedding
    if hasattr(emb, "to_dict") and emb.to_dict().get("how") == "templates":
        keys.add("seat")
    if any(getattr(c.fit, "checks", None) and any(
            getattr(k, "code", "") == "ppc_coverage" for k in c.fit.checks) for c in contexts):
        keys.add("loo")
    return keys


def cite_section(report, settings, contexts) -> None:
    """Add "How to cite": bayesbias itself and the papers whose methods the report used."""
    from .. import __version__

    sec = report.section("How to cite", last=True)
    sec.text("If you use these results, cite bayesbias (" + cite_bayesbias(__version__)
             + ") and the papers whose methods, data and software the report used:")
    sec.bullets([f"{ref} (for {what})" for what, ref in references(cite_keys(settings,
                                                                               contexts))])


def settings_from_results(path, output: str | None = None):
    """Return the :class:`~bayesbias.report.ReportSettings` recorded in a report's ``results.json``.

    Parameters
    ----------
    path : path-like
        ``results.json`` of a report, or the report folder.
    output : str, optional
        The new report folder (default: the recorded one).
    """
    path, data = _read_results(path)
    recorded = data["settings"]
    known = {f.name for f in fields(ReportSettings)}
    unknown = set(recorded) - known
    if unknown:
        raise InputDataError(f"{path}: settings this version does not know: "
                             f"{', '.join(sorted(unknown))}")
    kwargs = dict(recorded)
    for key in ("wordlists", "distances"):
        kwargs[key] = tuple(kwargs.get(key) or ())
    cwd = (data.get("provenance") or {}).get("cwd")
    if cwd:  # relative file names were given in the recorded run's folder
        kwargs["wordlists"] = tuple(_from(cwd, w) for w in kwargs["wordlists"])
        kwargs["distances"] = tuple(_from(cwd, d) for d in kwargs["distances"])
        if isinstance(kwargs.get("embedding"), str):
            kwargs["embedding"] = _from(cwd, kwargs["embedding"])
    if isinstance(kwargs.get("embedding"), dict):
        from ..encoders.words import EncoderSource

        d = kwargs["embedding"]
        kwargs["embedding"] = EncoderSource(
            d["encoder"], how=d["how"], corpus=d.get("corpus"),
            contexts=d.get("contexts") or 20, seed=d["seed"], cache=d.get("cache", True),
            backend=d.get("backend", "auto"))
    if output is not None:
        kwargs["output"] = output
    return ReportSettings(**kwargs)


def _from(cwd: str, name: str) -> str:
    """`name` as given, unless it is a relative path found only under the recorded `cwd`."""
    path = Path(name)
    if path.is_absolute() or path.exists() or not (Path(cwd) / path).exists():
        return name
    return str(Path(cwd) / path)


def _read_results(path) -> tuple[Path, dict]:
    path = Path(path)
    if path.is_dir():
        path = path / "results.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data.get("settings"), dict):
            raise ValueError("no settings")
    except (OSError, ValueError, AttributeError) as exc:
        raise InputDataError(f"{path}: not a bayesbias report's results.json ({exc})") from None
    return path, data


def check_inputs(path, settings) -> list[str]:
    """Return the inputs of `settings` whose digest differs from the report's record.

    The report is at `path` (``results.json`` or its folder); empty when all match or nothing
    was recorded.
    """
    recorded = _read_results(path)[1].get("provenance")
    if not recorded:
        return []
    now = [_prov.input_record(role, spec) for role, spec in report_inputs(settings)]
    return _prov.compare_inputs(recorded.get("inputs", []), json.loads(json.dumps(
        now, default=str)))


def back_matter(report, settings, contexts, prov: dict) -> None:
    """Return the sections after the settings: provenance, then how to cite."""
    provenance_section(report, prov)
    cite_section(report, settings, contexts)
