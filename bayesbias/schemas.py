"""JSON schemas of the results: one per result type, the vocabulary of every ``--json``.

:data:`SCHEMAS` maps a result type to its JSON Schema (draft 2020-12); :data:`COMMANDS`
maps each command (``bayesbias CMD --json``) to the result type it prints. The schemas
name the keys a reader can rely on and their types; results may carry more keys (every
schema allows additional properties). :data:`VOCABULARY` lists the shared words.

``docs/json.md`` is generated from this module (``python -m bayesbias.schemas``); a test
checks that it is current and that each command's output follows its schema.
"""

from __future__ import annotations

import json

from .validation import CI_KINDS

__all__ = ["SCHEMAS", "COMMANDS", "VOCABULARY", "schema", "markdown"]

#: The words every result uses in one sense (Markdown).
VOCABULARY = """\
- `dropped_words`: the words dropped as not in the embedding, table or corpus, per word-list
  part (`{"protected:jew": ["rabbi"]}`); `{}` when none was dropped.
- `verdict`: a verdict object (`bayesbias.verdicts.Verdict.to_dict()`), the same shape in
  `fit`, `report` (`verdicts`: a list of them), `compare` (`verdicts.a`, `verdicts.b`) and
  `contexts --fit`.
- `summary`: in `compare` (and `Comparison.to_dict()`), the plain-language sentences that
  read the differences (`Comparison.summary`; `Comparison.verdict` is a deprecated alias).
- `fit` (in `contexts --fit`): `Fit.to_dict()`, the summary keys of `fit --json` (the
  context model is the family `context`, also fitted by `fit --model context`).
- `prob_below_zero`: the posterior probability that a contrast is below 0.
- `ci`, `ci_prob`, `ci_kind`: an interval `[lower, upper]`, its probability and its kind
  (one of """ + ", ".join(f"`{k}`" for k in CI_KINDS) + """).
- Numbers that are undefined (NaN, infinite) are `null`."""

_NUM = {"type": ["number", "null"]}
_INT = {"type": "integer"}
_STR = {"type": "string"}
_STR_OR_NULL = {"type": ["string", "null"]}
_BOOL = {"type": "boolean"}
_OBJ = {"type": "object"}
_LIST = {"type": "array"}
_INTERVAL = {"type": ["array", "null"], "items": _NUM, "minItems": 2, "maxItems": 2}
_CI_KIND = {"enum": [*CI_KINDS, None]}

DEFS = {
    "dropped_words": {
        "description": "words dropped as not in the embedding / table / corpus, per "
                       "word-list part",
        "type": "object", "additionalProperties": {"type": "array", "items": _STR}},
    "contrast_evidence": {
        "type": "object",
        "required": ["contrast", "mean", "lower", "upper", "prob_below_zero", "status"],
        "properties": {"contrast": _STR, "mean": _NUM, "lower": _NUM, "upper": _NUM,
                       "prob_below_zero": _NUM, "share_in_rope": _NUM, "status": _STR}},
    "verdict": {
        "description": "a control-group verdict (bayesbias.verdicts.Verdict.to_dict())",
        "type": "object",
        "required": ["name", "code", "headline", "details", "notes", "rule", "ci_prob",
                     "ci_kind", "rope", "contrasts"],
        "properties": {"name": _STR, "code": _STR, "headline": _STR,
                       "details": {"type": "array", "items": _STR},
                       "notes": {"type": "array", "items": _STR}, "rule": _STR,
                       "ci_prob": {"type": "number"}, "ci_kind": {"enum": ["hdi", "eti"]},
                       "rope": _NUM,
                       "contrasts": {"type": "array",
                                     "items": {"$ref": "#/$defs/contrast_evidence"}}}},
    "weat": {
        "type": "object",
        "required": ["effect_size", "statistic", "p_value", "p_text", "alternative",
                     "sd_convention", "permutation", "sizes", "names", "ci", "ci_prob",
                     "ci_kind", "dropped_words"],
        "properties": {"effect_size": _NUM, "statistic": _NUM, "p_value": _NUM,
                       "p_text": _STR, "alternative": {"enum": ["two-sided", "greater",
                                                                  "less"]},
                       "sd_convention": {"enum": ["sample", "population"]},
                       "permutation": _STR, "sizes": _OBJ, "names": _OBJ, "ci": _INTERVAL,
                       "ci_prob": _NUM, "ci_kind": _CI_KIND,
                       "dropped_words": {"$ref": "#/$defs/dropped_words"}}},
    "mac_result": {
        "type": "object",
        "required": ["mac", "targets", "n_targets", "attribute_classes", "scores",
                     "dropped_words"],
        "properties": {"mac": _NUM, "targets": {"enum": ["unique", "definite_sets"]},
                       "n_targets": _INT, "attribute_classes": _OBJ, "scores": _LIST,
                       "dropped_words": {"$ref": "#/$defs/dropped_words"}}},
    "mac_ttest": {
        "type": "object",
        "required": ["mac_a", "mac_b", "statistic", "p_value", "df", "n_pairs"],
        "properties": {"mac_a": _NUM, "mac_b": _NUM, "statistic": _NUM, "p_value": _NUM,
                       "df": _INT, "n_pairs": _INT}},
    "metric": {
        "type": "object",
        "required": ["metric", "value", "ci", "ci_prob", "ci_kind", "null", "sizes",
                     "names", "per_word", "dropped_words"],
        "properties": {"metric": _STR, "value": _NUM, "ci": _INTERVAL, "ci_prob": _NUM,
                       "ci_kind": _CI_KIND, "null": _OBJ, "sizes": _OBJ, "names": _OBJ,
                       "per_word": _LIST,
                       "dropped_words": {"$ref": "#/$defs/dropped_words"}}},
    "ensemble": {
        "description": "many embeddings: the corpus-level verdict beside each embedding "
                       "alone (bayesbias.ensemble.EnsembleSummary.to_dict())",
        "type": "object",
        "required": ["headline", "kind", "embeddings", "single_model", "corpus_level",
                     "disagree", "per_embedding", "variance_shares", "reliability",
                     "weat_per_embedding", "weat_spread"],
        "properties": {"headline": _STR,
                       "kind": {"enum": ["bootstrap", "seeds", "corpora", "mixed"]},
                       "embeddings": _INT, "single_model": _STR,
                       "corpus_level": {"$ref": "#/$defs/verdict"}, "disagree": _INT,
                       "per_embedding": _LIST, "variance_shares": _LIST,
                       "reliability": _OBJ, "weat_per_embedding": _LIST,
                       "weat_spread": _OBJ,
                       "factor": {"description": "contrasts per level of the ensemble's "
                                                 "factor and between levels "
                                                 "(bayesbias.ensemble.factor_contrasts), or "
                                                 "null without a factor_* column",
                                  "type": ["array", "null"]},
                       "factor_note": {"description": "why factor lacks each factor's "
                                                      "levels averaged over the others "
                                                      "(an incomplete cross), or \"\"",
                                       "type": "string"},
                       "caveat": {"description": "what the corpus-level intervals cannot "
                                                 "separate, or \"\" "
                                                 "(bayesbias.ensemble.ensemble_caveat)",
                                  "type": "string"}}},
    "fit_summary": {
        "description": "a fit's summary (bayesbias.models.Fit.to_dict()): the keys `fit "
                       "--json` shares",
        "type": "object",
        "required": ["model", "family", "spec_hash", "spec", "data", "ci_prob", "ci_kind",
                     "sampler", "diagnostics", "group_means", "contrasts", "word_means",
                     "parameters", "checks"],
        "properties": {"model": _STR, "family": _STR, "spec_hash": _STR, "spec": _OBJ,
                       "data": _OBJ, "ci_prob": {"type": "number"},
                       "ci_kind": {"enum": ["hdi", "eti"]}, "sampler": _STR_OR_NULL,
                       "diagnostics": _OBJ, "group_means": _LIST, "contrasts": _LIST,
                       "word_means": _LIST, "parameters": _LIST, "checks": _LIST}},
    "null_cell": {
        "type": "object",
        "required": ["quantiles", "mean", "std", "alpha"],
        "properties": {"quantiles": _OBJ, "mean": _OBJ, "std": _OBJ,
                       "alpha": {"type": "number"},
                       "fraction_abs_effect_at_least": _OBJ, "false_positive_rate": _OBJ}},
}


def _result(required: dict, optional: dict | None = None, description: str = "") -> dict:
    """Return an object schema: `required` keys with their schemas, `optional` ones."""
    out = {"type": "object", "required": list(required),
           "properties": {**required, **(optional or {})}}
    if description:
        out["description"] = description
    return out


def _ref(name: str) -> dict:
    return {"$ref": f"#/$defs/{name}"}


#: Result type -> JSON Schema (without the shared ``$defs``; see :func:`schema`).
SCHEMAS: dict[str, dict] = {
    "wordlists": _result({"wordlists": {"type": "array", "items": _result(
        {"name": _STR, "classes": _OBJ, "controls": _OBJ, "path": _STR})}},
        description="the shipped word lists with their counts"),
    "wordlist": _result({"name": _STR, "description": _STR, "path": _STR, "classes": _OBJ,
                         "controls": _OBJ, "words": _OBJ, "definite_sets": _LIST,
                         "provenance": _OBJ}, description="one word list in full"),
    "distance_table": _result({"rows": _INT, "protected_words": _INT, "attributes": _INT,
                               "dropped_words": _ref("dropped_words"),
                               "by_connection": _LIST, "output": _STR_OR_NULL},
                              description="summary of a distance table"),
    "weat": {**_ref("weat"), "description": "WeatResult.to_dict()"},
    "seat": {"allOf": [_ref("weat"), _result({"encoder": _OBJ, "units": _OBJ,
                                               "sentence_level": _OBJ})],
             "description": "SeatResult.to_dict() and the encoder (per-sentence "
                            "associations left out)"},
    "ceat": _result({"combined": _NUM, "ci": _INTERVAL, "word_ci": _INTERVAL,
                     "p_value": _NUM, "n_draws": _INT, "dropped_words": _ref("dropped_words"),
                     "encoder": _OBJ}, description="CeatResult.to_dict() and the encoder"),
    "contexts": _result({"output": _STR, "rows": _INT, "draws": _INT,
                         "contexts_per_word": _INT, "dropped_words": _ref("dropped_words"),
                         "source": _STR},
                        {"fit": _ref("fit_summary"), "verdict": _ref("verdict")},
                        description="the context distance table written, and with --fit "
                                    "the context model's fit and verdict"),
    "mac": _result({"a": _ref("mac_result")},
                   {"b": _ref("mac_result"), "paired_ttest": _ref("mac_ttest")},
                   description="MAC of one side (a), and with a second side b the paired "
                               "t-test"),
    "metric": {**_ref("metric"), "description": "MetricResult.to_dict()"},
    "metric_table": _result({"wordlist": _STR, "metrics": _OBJ,
                             "results": {"type": "array", "items": _ref("metric")}},
                            description="MetricTable.to_dict(): every metric per class pair"),
    "null_study": {"description": "a null-simulation study: one cell, or a grid of cells",
                   "type": "object", "required": ["study", "output"],
                   "properties": {"study": _OBJ, "output": _STR_OR_NULL,
                                  "cells": {"type": "array", "items": _ref("null_cell")},
                                  "grid": _OBJ, "weat_bound_abs_d": _NUM},
                   "anyOf": [{"required": ["cells", "grid"]},
                             {"allOf": [_ref("null_cell"),
                                        {"required": ["weat_bound_abs_d"]}]}]},
    "fit": _result({"verdict": _ref("verdict"), "model": _STR, "family": _STR,
                    "spec_hash": _STR, "parameters": _LIST, "checks": _LIST,
                    "ci_prob": {"type": "number"}, "ci_kind": {"enum": ["hdi", "eti"]},
                    "diagnostics": _OBJ, "group_means": _LIST, "contrasts": _LIST,
                    "ppc": _LIST, "ppc_rows_checked": {"type": "integer"},
                    "dropped_words": _ref("dropped_words"), "run": _OBJ,
                    "weat": _LIST, "weat_reconciliation": _STR,
                    "output": _STR_OR_NULL, "plot": _STR_OR_NULL},
                   {"loo": _OBJ, "sensitivity": _OBJ, "ensemble": _ref("ensemble")},
                   description="a Bayesian fit: its verdict, summaries, checks and run "
                               "(`ensemble`: on a table of several embeddings)"),
    "comparison": _result({"a": _STR, "b": _STR, "difference": _STR, "model": _STR,
                           "verdicts": _result({"a": _ref("verdict"), "b": _ref("verdict"),
                                                "changes": {"type": "array",
                                                            "items": _STR}}),
                           "summary": {"type": "array", "items": _STR},
                           "ci_prob": {"type": "number"}, "ci_kind": {"enum": ["hdi", "eti"]},
                           "group_means": _LIST, "contrasts": _LIST, "word_means": _LIST,
                           "moved": _OBJ, "only_neutral_moved": _BOOL, "diagnostics": _OBJ,
                           "dropped_words": _result({"a": _ref("dropped_words"),
                                                     "b": _ref("dropped_words")}),
                           "weat": {"type": ["array", "object"]},
                           "weat_reconciliation": _OBJ,
                           "mac_ttest": {"type": ["object", "null"]}},
                          description="posterior differences b - a of two fits"),
    "report": _result({"output": _STR, "elapsed_s": {"type": "number"},
                       "verdicts": {"type": "array", "items": _ref("verdict")},
                       "overview": _LIST},
                      {"ensembles": {"type": "object",
                                     "additionalProperties": _ref("ensemble")}},
                      description="where the report was written, and its verdicts "
                                  "(`ensembles`: per table of several embeddings)"),
    "debias": _result({"k": _INT, "passed": _BOOL, "changed_words": _LIST,
                       "dropped_words": _ref("dropped_words"), "output": _STR_OR_NULL,
                       "mean_cosine_distance": _LIST},
                      description="DebiasReport.to_dict() and the mean distances before "
                                  "and after"),
    "classifier_bias": _result({"model": _STR, "ci_prob": {"type": "number"},
                                "ci_kinds": _OBJ, "n": _INT, "groups": _OBJ,
                                "metrics": _OBJ, "rows": _LIST},
                               description="ClassifierBias.to_dict()"),
    "group_rates": _result({"ci_prob": {"type": "number"}, "ci_kind": {"enum": ["eti"]},
                            "structure": _STR, "spec": _OBJ, "spec_hash": _STR, "seed": _INT,
                            "features": _LIST, "levels": _LIST, "metrics": _LIST,
                            "rows": _INT, "weighting": _STR, "cells": _LIST,
                            "overall": _LIST, "marginals": _OBJ, "comparisons": _LIST,
                            "differential_fairness": _LIST, "interaction_share": _LIST,
                            "fit": _OBJ, "notes": _LIST, "written": _LIST},
                           {"feature_comparisons": _LIST, "against_reference": _LIST,
                            "labelling_plan": _OBJ, "term_column": _STR,
                            "term_weighting": _STR, "terms": _LIST, "term_sd": _LIST,
                            "term_gaps": _LIST},
                           description="GroupRates.to_dict(): every cell, group and gap "
                                       "with its interval (bayesbias groups)"),
    "bbu": _result({"confidence": {"type": "number"}, "gamma": {"type": "number"},
                    "C": {"type": "number"}, "variance": {"type": "number"},
                    "variance_is_worst_case": _BOOL},
                   {"min_n": _INT, "half_width": {"type": "number"}, "claimable": _BOOL},
                   description="Bernstein-bound planning: minimum n and / or half-width"),
    "design": {**_result({}, {"pilot": _OBJ, "settings": _OBJ, "complete": _BOOL,
                              "designs": _LIST, "smallest": _OBJ, "rule": _STR,
                              "kind": _STR, "pilot_embeddings": _INT, "needed": _OBJ,
                              "assurance": _LIST, "check": _LIST},
                         description="DesignResult.to_dict(): assurance per design; from "
                                     "an embedding_level pilot fit, EmbeddingsDesign."
                                     "to_dict(): assurance per number of embeddings"),
               "anyOf": [{"required": ["pilot", "settings", "complete", "designs",
                                       "smallest", "rule"]},
                         {"required": ["kind", "pilot_embeddings", "needed", "assurance",
                                       "check"]}]},
    "calibration": _result({"model": _STR, "settings": _OBJ, "complete": _BOOL,
                            "replications": _INT, "uniformity": _LIST, "min_p": _NUM},
                           {"ranks": _OBJ},
                           description="simulation-based calibration: uniformity tests "
                                       "(and the ranks, with -o)"),
    "train": _result({"manifest": _OBJ, "output": _STR},
                     description="the trained models' manifest"),
}

#: Command -> result type of its ``--json`` (``metric all`` prints ``metric_table``,
#: ``wordlists NAME`` a ``wordlist``, ``simulate`` a ``null_study`` cell or grid).
COMMANDS = {"wordlists": "wordlists", "distances": "distance_table", "weat": "weat",
            "seat": "seat", "ceat": "ceat", "contexts": "contexts", "mac": "mac",
            "metric": "metric", "simulate": "null_study", "fit": "fit",
            "compare": "comparison", "report": "report", "debias": "debias",
            "classifier": "classifier_bias", "groups": "group_rates", "bbu": "bbu",
            "design": "design", "calibrate": "calibration", "train": "train"}


def schema(result_type: str) -> dict:
    """Return the complete JSON Schema of `result_type` (with the shared definitions)."""
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": result_type, **SCHEMAS[result_type], "$defs": DEFS}


def _keys(s: dict) -> str:
    props = s.get("properties", {})
    required = set(s.get("required", []))

    def kind(v):
        if "$ref" in v:
            return v["$ref"].rsplit("/", 1)[-1]
        if "enum" in v:
            return " or ".join(f"`{json.dumps(e)}`" for e in v["enum"])
        t = v.get("type", "any")
        return " or ".join(t) if isinstance(t, list) else t

    return "\n".join(f"| `{k}` | {kind(v)} | {'yes' if k in required else 'no'} |"
                     for k, v in props.items())


def markdown() -> str:
    """``docs/json.md``: the vocabulary, then each result type's keys."""
    lines = ["# JSON output", "",
             "Generated from `bayesbias/schemas.py` (`python -m bayesbias.schemas > "
             "docs/json.md`); do not edit by hand. Every `bayesbias CMD --json` prints one "
             "result type; the full JSON Schemas are `bayesbias.schemas.schema(TYPE)`.",
             "", VOCABULARY, "",
             "| command | result type |", "| --- | --- |",
             *[f"| `{c}` | [{t}](#{t}) |" for c, t in COMMANDS.items()], ""]
    for name in DEFS:
        lines += [f"## {name} (shared)", "", "| key | type | always |", "| --- | --- | --- |",
                  _keys(DEFS[name]) or "| (per word-list part) | list of words | - |", ""]
    for name, s in SCHEMAS.items():
        lines += [f"## {name}", "", s.get("description", ""), ""]
        parts = [p for p in s.get("allOf", [])] + [s]
        for p in parts:
            if "$ref" in p:
                lines += [f"All keys of [{p['$ref'].rsplit('/', 1)[-1]}](#"
                          f"{p['$ref'].rsplit('/', 1)[-1]}-shared).", ""]
            elif p.get("properties"):
                lines += ["| key | type | always |", "| --- | --- | --- |", _keys(p), ""]
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":  # pragma: no cover - writes docs/json.md
    print(markdown(), end="")
