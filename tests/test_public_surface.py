"""The public surface of the release before the root split still works (issue 53).

``tests/data/public_surface.json`` froze, before the move into ``inputs/`` and
``verdicts/``, every name of ``bayesbias.__all__`` and every CLI command with its flags.
Each must still resolve; each module moved is importable at its old path (kept for one
release) as the same module object.
"""

import importlib
import json
from pathlib import Path

import pytest

import bayesbias
from bayesbias.cli import build_parser

SURFACE = json.loads((Path(__file__).parent / "data" / "public_surface.json").read_text())

#: Old module path -> new home (the thin re-exports at the old paths).
MOVED = {
    "embeddings": "inputs.embeddings",
    "wordlists": "inputs.wordlists",
    "distances": "inputs.distances",
    "datasets": "inputs.datasets",
    "corpora": "inputs.corpora",
    "training": "inputs.training",
    "interop": "inputs.interop",
    "debias": "inputs.debias",
    "reconcile": "verdicts.reconcile",
    "reliability": "verdicts.reliability",
    "recoverability": "verdicts.recoverability",
    "ensemble": "verdicts.ensemble",
    "groups": "classifier.groups",
}


@pytest.mark.parametrize("name", SURFACE["all"])
def test_every_public_name_of_the_old_root_still_resolves(name):
    assert name in bayesbias.__all__
    assert getattr(bayesbias, name) is not None


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_module_path_is_its_new_home(old):
    was = importlib.import_module(f"bayesbias.{old}")
    now = importlib.import_module(f"bayesbias.{MOVED[old]}")
    assert was is now  # one module object: a patch through either name reaches the code
    assert was.__all__ and all(hasattr(was, n) for n in was.__all__)


def test_names_that_moved_out_of_a_module_still_import_from_it():
    from bayesbias.display import fit_html, verdict_html
    from bayesbias.encoders.model import EncoderError
    from bayesbias.ensemble import manifest_table, simulate_ensemble_table, single_embedding
    from bayesbias.testing import simulate_ensemble_table as simulator
    from bayesbias.verdicts import UNSURE_MCSE, fit_for_verdict

    assert simulate_ensemble_table is simulator
    assert EncoderError is bayesbias.errors.EncoderError
    assert fit_for_verdict.__module__ == "bayesbias.verdicts.precision" and UNSURE_MCSE > 0
    assert callable(fit_html) and callable(verdict_html)
    assert manifest_table.__module__ == "bayesbias.inputs.ensemble"
    assert single_embedding.__module__ == "bayesbias.inputs.distances"


def _surface(parser, prefix=()):
    import argparse

    out = {" ".join(prefix): {s for a in parser._actions for s in a.option_strings}}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out.update(_surface(sub, (*prefix, name)))
    return out


def test_every_cli_command_and_flag_of_the_old_release_is_still_there():
    now = _surface(build_parser())
    missing = {cmd: sorted(set(flags) - now.get(cmd, set()))
               for cmd, flags in SURFACE["cli"].items()
               if cmd not in now or set(flags) - now[cmd]}
    assert not missing


@pytest.mark.parametrize("command", sorted(c for c in SURFACE["cli"] if c))
def test_every_cli_command_still_prints_its_help(command, capsys):
    with pytest.raises(SystemExit) as stop:
        build_parser([*command.split(), "--help"]).parse_args([*command.split(), "--help"])
    assert stop.value.code == 0
    assert command.split()[-1] in capsys.readouterr().out
