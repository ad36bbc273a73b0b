"""The main job: one report from an embedding (or distance tables) and word lists.

For each word list the report leads with a verdict from the control groups
(:mod:`bayesbias.verdicts`), then the words that drive it, the Bayesian fit (group means,
contrasts, parameters, forest plot, posterior predictive check, diagnostics), the
frequentist comparators (WEAT, MAC, null distributions) and the data; an overview of the
verdicts comes first, the model card and the settings last.

Layout
------
``settings.py``
    :class:`ReportSettings`: every choice that affects a number in the report.
``pipeline.py``
    :func:`run_report`: reads the tables, runs each section
    builder for every word list (then the next builder), writes the folder.
``sections.py``
    The section builders and :class:`~bayesbias.report.sections.WordListContext`, which
    computes each result (``fit``, ``verdict``, ``drivers``, ``ppc``, ``weats``, ``null``,
    ``embedding_metrics``, ``mac``) once, on first use. What needs only the table (WEAT,
    null distributions, embedding metrics) and the figures are jobs of a
    :class:`~bayesbias.parallel.JobPool`: with ``run_report(jobs=2)`` (the CLI's default on
    two or more cores) a worker process computes them while this one fits the models.
``document.py``
    :class:`Report` / :class:`Section` and the atomic, escaped HTML + Markdown writer.
``navigation.py``
    The first screen (a title naming the source, what was measured) and the page's
    navigation: contents with anchors, folding sections, long tables folded, wide tables
    scrolling inside the page.
``reproduce.py``
    Provenance (:mod:`bayesbias.provenance`) and "how to cite" (:mod:`bayesbias.citation`)
    sections, and the settings of an earlier report for ``bayesbias report --rerun``
    (:func:`~bayesbias.report.reproduce.settings_from_results`).

Adding a section
----------------
Write ``def my_section(ctx: WordListContext) -> None`` that reads ``ctx.table``,
``ctx.settings``, ``ctx.fit`` (or any other cached result), adds items to ``ctx.section``
(``heading``, ``text``, ``bullets``, ``table(df, name)``, ``figure(fig, name)``,
``figure_from(draw, name)``; for a costly figure, ``ctx.pool.submit`` a module-level function
returning PNG bytes, as ``bayes_section`` does) and plain-JSON data to ``ctx.results[...]``
(it lands in ``results.json`` under the word list). Name tables and figures
``f"{ctx.key}_..."``: ``key`` is the word list's sanitised, unique file stem. Register it
where it should appear::

    from bayesbias.report import sections
    sections.SECTIONS.insert(sections.SECTIONS.index(sections.comparators_section) + 1,
                             my_section)

(in the package, add it to the :data:`~bayesbias.report.sections.SECTIONS` list directly).
New settings go to :class:`ReportSettings` and ``cli/report.py``.
"""

from .._lazy import lazy_exports

# Imported on first use (PEP 562): `bayesbias report --help` and the CLI's argument checks do
# not load pandas and the section builders.
__getattr__, __dir__ = lazy_exports(__name__, {
    ".document": ("MARKER", "Report", "Section", "check_output", "check_replaceable",
                  "safe_name"),
    ".pipeline": ("run_report",),
    ".settings": ("DEFAULT_WORDLISTS", "ReportSettings"),
    ".sections": ("SECTIONS", "WordListContext"),
}, globals())

__all__ = [
    # running
    "ReportSettings",
    "run_report",
    "DEFAULT_WORDLISTS",
    # extending
    "SECTIONS",
    "WordListContext",
    # writing
    "Report",
    "Section",
    "MARKER",
    "check_output",
    "check_replaceable",
    "safe_name",
]
