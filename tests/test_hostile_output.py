"""Hostile corpus, class 3: output targets (checked before any computation).

-o a folder, under a file, a symbolic link, a device, a FIFO, '' ; a folder without write
permission, a read-only or full file system; failures while writing. Every case: exit 2,
one line naming the target, nothing written, no temporary file left.
"""

from __future__ import annotations

import errno
import os
from types import SimpleNamespace

import pytest
from hostile import assert_clean_error, listing, run_main

from bayesbias import _atomic
from bayesbias._atomic import atomic_path, check_output
from bayesbias.errors import OutputPathError

# fit / report / compare runs here check plumbing: no refits of undecided verdicts
pytestmark = pytest.mark.usefixtures("quick_verdicts")


@pytest.fixture
def no_compute(monkeypatch):
    """Make any embedding load fail loudly: the output must be refused before it."""
    import importlib

    from bayesbias import embeddings

    def boom(*a, **k):
        raise AssertionError("computation started before the output was checked")

    # modules holding their own reference, imported before patching (a first import during
    # the test would keep `boom` for the rest of the session) and patched too
    users = [importlib.import_module(name) for name in (
        "bayesbias.cli.debias", "bayesbias.cli.mac", "bayesbias.cli.weat",
        "bayesbias.report.pipeline")]
    for module in [embeddings, *users]:
        monkeypatch.setattr(module, "load_embedding", boom)


def _targets(tmp_path):
    (tmp_path / "folder").mkdir()
    (tmp_path / "file.txt").write_text("x")
    (tmp_path / "real.csv").write_text("keep me")
    (tmp_path / "link.csv").symlink_to(tmp_path / "real.csv")
    os.mkfifo(tmp_path / "fifo.csv")
    return {
        "folder": (tmp_path / "folder", "folder"),
        "under-a-file": (tmp_path / "file.txt" / "t.csv", "is a file"),
        "symlink": (tmp_path / "link.csv", "symbolic link"),
        "fifo": (tmp_path / "fifo.csv", "named pipe"),
        "device": ("/dev/null", "device"),
        "empty": ("", "empty output path"),
        "dot": (".", "give a file"),
    }


@pytest.mark.parametrize("case", ["folder", "under-a-file", "symlink", "fifo", "device",
                                  "empty", "dot"])
@pytest.mark.parametrize("command", ["distances", "debias"])
def test_bad_output_refused_before_computation(tmp_path, capsys, monkeypatch, no_compute,
                                               case, command):
    monkeypatch.chdir(tmp_path)
    target, words = _targets(tmp_path)[case]
    before = listing(tmp_path)
    code, _, err = run_main(capsys, [command, "--embedding", "default", "-o", target])
    assert_clean_error(code, err, words)
    assert listing(tmp_path) == before
    assert (tmp_path / "real.csv").read_text() == "keep me"


def test_check_output_accepts_normal_targets(tmp_path):
    assert check_output(tmp_path / "new" / "deeper" / "t.csv").name == "t.csv"
    (tmp_path / "old.csv").write_text("x")
    check_output(tmp_path / "old.csv")
    check_output(tmp_path / "report", folder=True)
    assert listing(tmp_path) == ["old.csv"]  # nothing created by a check


def _statvfs(flag=0, bavail=10**6, bfree=10**6):
    return lambda p: SimpleNamespace(f_flag=flag, f_bavail=bavail, f_bfree=bfree,
                                     f_frsize=4096, f_blocks=10**7)


@pytest.mark.parametrize(("fake", "words"), [
    (_statvfs(flag=os.ST_RDONLY), "read-only file system"),
    (_statvfs(bavail=0, bfree=0), "no space left"),
], ids=["read-only", "full"])
def test_read_only_and_full_disk_refused_up_front(tmp_path, capsys, monkeypatch, no_compute,
                                                   fake, words):
    monkeypatch.setattr(_atomic.os, "statvfs", fake)
    code, _, err = run_main(capsys, ["distances", "-o", tmp_path / "t.csv"])
    assert_clean_error(code, err, words, str(tmp_path / "t.csv"))
    assert listing(tmp_path) == []


def test_no_write_permission_refused_up_front(tmp_path, capsys, monkeypatch, no_compute):
    real = os.access
    monkeypatch.setattr(_atomic.os, "access", lambda p, m, **k: False if str(p) ==
                        str(tmp_path) else real(p, m, **k))
    code, _, err = run_main(capsys, ["debias", "-o", tmp_path / "e.bin"])
    assert_clean_error(code, err, "no permission", str(tmp_path))


@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EROFS, errno.EDQUOT])
def test_disk_failure_while_writing_is_typed_and_cleaned(tmp_path, err):
    target = tmp_path / "t.csv"
    target.write_text("old")
    with pytest.raises(OutputPathError, match="cannot write"):
        with atomic_path(target) as tmp:
            tmp.write_text("partial")
            raise OSError(err, os.strerror(err), str(tmp))
    assert listing(tmp_path) == ["t.csv"] and target.read_text() == "old"


def test_interrupt_while_writing_leaves_target_and_no_temp(tmp_path):
    target = tmp_path / "t.csv"
    target.write_text("old")
    with pytest.raises(KeyboardInterrupt):
        with atomic_path(target) as tmp:
            tmp.write_text("partial")
            raise KeyboardInterrupt
    assert listing(tmp_path) == ["t.csv"] and target.read_text() == "old"


def test_unrelated_oserror_is_not_relabelled(tmp_path):
    with pytest.raises(FileNotFoundError):
        with atomic_path(tmp_path / "t.csv"):
            open(tmp_path / "missing-input.txt")  # noqa: SIM115
    assert listing(tmp_path) == []


@pytest.mark.parametrize(("argv", "words"), [
    (["fit", "--distances", "published:religion:reddit", "-o", "file.txt/fit.nc"], "is a file"),
    (["fit", "--distances", "published:religion:reddit", "--plot", "/dev/null"], "device"),
    (["simulate", "-o", "folder"], "folder"),
    (["report", "-o", "."], "give a file or folder name"),
    (["report", "-o", ""], "empty output path"),
    (["report", "-o", "file.txt"], "not a folder"),
    (["compare", "--a", "published:religion:reddit", "--b", "published:religion:glove",
      "-o", "link.csv"], "symbolic link"),
], ids=["fit-under-file", "fit-plot-device", "simulate-folder", "report-dot", "report-empty",
        "report-file", "compare-symlink"])
def test_every_command_checks_output_first(tmp_path, capsys, monkeypatch, argv, words):
    """The CLI checks -o / --plot of any command before running it."""
    from bayesbias import datasets

    monkeypatch.chdir(tmp_path)
    _targets(tmp_path)
    monkeypatch.setattr(datasets, "read_table", lambda *a, **k: pytest.fail("computed"))
    before = listing(tmp_path)
    code, _, err = run_main(capsys, argv)
    assert_clean_error(code, err, words)
    assert listing(tmp_path) == before


def test_plot_suffix_refused_before_computation(tmp_path, capsys, monkeypatch):
    from bayesbias import datasets

    def boom(*a, **k):
        raise AssertionError("computation started before --plot was checked")

    monkeypatch.setattr(datasets, "read_table", boom)
    monkeypatch.chdir(tmp_path)
    code, _, err = run_main(capsys, ["fit", "--distances", "published:religion:reddit",
                                     "--plot", "forest.gif"])
    assert_clean_error(code, err, "forest.gif", ".svg")
    assert listing(tmp_path) == []


@pytest.mark.parametrize("suffix", ["png", "svg", "pdf"])
def test_figure_written_in_the_format_its_suffix_names(tmp_path, suffix):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from bayesbias.models.plots import _save

    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    path = _save(fig, tmp_path / f"f.{suffix}")
    head = path.read_bytes()[:16]
    magic = {"png": b"\x89PNG", "svg": b"<?xml", "pdf": b"%PDF"}[suffix]
    assert head.startswith(magic), head


# -- issue 21: pseudo file systems and names near the length limit ------------------------
@pytest.mark.skipif(not os.path.isdir("/proc/self") or not os.path.isdir("/sys/kernel"),
                    reason="Linux /proc and /sys")
@pytest.mark.parametrize("target", ["/proc/x.csv", "/sys/kernel/x.csv",
                                    "/proc/sys/vm/drop_caches", "/sys/kernel/rep/t.csv"])
@pytest.mark.parametrize("command", ["distances", "report"])
def test_proc_and_sys_refused_before_computation(capsys, monkeypatch, no_compute, command,
                                                 target):
    """-o under /proc or /sys failed only after the analysis before issue 21."""
    if command == "report":
        target = os.path.dirname(target) + "/rep"
    code, _, err = run_main(capsys, [command, "--wordlist", "religion", "-o", target])
    assert_clean_error(code, err, target.split("/")[1])


@pytest.mark.parametrize("length", [250, 253, 255])
def test_names_up_to_255_bytes_are_written(tmp_path, length):
    """The temporary name was longer than the target's, so 250-255 bytes were refused."""
    for name in ("a" * (length - 4) + ".csv", "é" * ((length - 4) // 2) + ".csv"):
        target = tmp_path / name
        if len(os.fsencode(target.name)) > 255:
            continue
        with atomic_path(target) as tmp:
            tmp.write_text("x")
        assert target.read_text() == "x"
        assert listing(tmp_path) == [name]
        target.unlink()


def test_report_folder_name_of_255_bytes(tmp_path):
    from bayesbias.report import Report

    out = tmp_path / ("r" * 255)
    Report("t").write(out)
    Report("t").write(out)  # replaced: the aside folder's name fits too
    assert listing(tmp_path)[0] == out.name and (out / "index.html").exists()


def test_name_over_255_bytes_refused_up_front(tmp_path, capsys, no_compute):
    target = tmp_path / ("a" * 256 + ".csv")
    code, _, err = run_main(capsys, ["distances", "--wordlist", "religion", "-o", target])
    assert_clean_error(code, err, "longer than")
    assert listing(tmp_path) == []


def test_check_output_probe_leaves_nothing(tmp_path):
    check_output(tmp_path / "sub" / "t.csv")
    assert listing(tmp_path) == []
