"""Progress lines: on stderr while a user waits, none under --json or --quiet (issue 49)."""

import json
import logging
from types import SimpleNamespace

import pytest

from bayesbias.cli import main
from bayesbias.progress import TrainProgress, chain_callback

FIT = ["fit", "--distances", "published:religion:reddit", "--model", "hierarchical",
       "--draws", "30", "--tune", "30", "--chains", "2"]


class _Keep(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.msgs = []

    def emit(self, record):
        self.msgs.append(record.getMessage())


@pytest.fixture
def shown():
    """Messages of the progress logger, at INFO, whatever the CLI left set."""
    logger = logging.getLogger("bayesbias.progress")
    level = logger.level
    keep = _Keep()
    logger.addHandler(keep)
    logger.setLevel(logging.INFO)
    yield keep.msgs
    logger.removeHandler(keep)
    logger.setLevel(level)


def _progress_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("[")]


def test_fit_progress_on_stderr_and_silent_under_json(capsys):
    assert main(FIT) == 0
    out, err = capsys.readouterr()
    lines = _progress_lines(err)
    assert any("fitting the hierarchical model (2 chains x 30 draws)" in ln for ln in lines)
    assert any("draws per chain" in ln and "/60" in ln for ln in lines), lines
    assert any("posterior predictive check" in ln for ln in lines)
    assert not _progress_lines(out) and "draws per chain" not in out  # never on stdout
    assert main([*FIT, "--json"]) == 0
    out, err = capsys.readouterr()
    json.loads(out)  # stdout is the JSON alone
    assert not _progress_lines(err) and "draws per chain" not in err


@pytest.mark.parametrize("flags, on", [([], True), (["--json"], False), (["--quiet"], False)])
def test_progress_switched_by_json_and_quiet(flags, on, capsys):
    logger = logging.getLogger("bayesbias.progress")
    args = ["wordlists", *[f for f in flags if f == "--json"]]
    assert main([*[f for f in flags if f == "--quiet"], *args]) == 0
    assert logger.isEnabledFor(logging.INFO) is on
    capsys.readouterr()


def test_chain_callback_logs_draws_per_chain(shown):
    report = chain_callback("sampling embedding_level")
    chains = [SimpleNamespace(finished_draws=5, total_draws=20),
              SimpleNamespace(finished_draws=7, total_draws=20)]
    report(chains)
    report([object()])  # another nutpie's objects: no line, no error
    msgs = shown
    assert len(msgs) == 1
    assert msgs[0].startswith("sampling embedding_level: draws per chain 5/20, 7/20 (incl. "
                              "tuning)")


def test_train_progress_plan_and_k_of_n(shown):
    hook = TrainProgress()
    hook.plan(4, 3, 300, 5000, "runs")
    for name in ("b", "a", "c"):  # in the order they finish, not the plan's
        hook.trained(name, 100, 0.5)
    msgs = shown
    assert msgs[0] == ("training 4 models of 300 documents (5000 tokens) into runs: "
                       "1 already trained, 3 to train")
    assert [m.split(": ")[1].split(",")[0] for m in msgs[1:]] == \
        ["model 1 of 3", "model 2 of 3", "model 3 of 3"]
    assert msgs[1].startswith("trained b: model 1 of 3")


def test_report_help_imports_no_pandas():
    """``bayesbias report --help`` and argument errors answer without the report's imports."""
    import subprocess
    import sys

    from bayesbias.cli.report import DEFAULT_WORDLISTS
    from bayesbias.report.pipeline import DEFAULT_WORDLISTS as PIPELINE_LISTS

    assert DEFAULT_WORDLISTS == PIPELINE_LISTS
    code = ("import sys\nfrom bayesbias.cli import main\ntry:\n    main(['report', '--help'])\n"
            "except SystemExit:\n    pass\nprint('pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip().splitlines()[-1] == "False"
