r"""Issue 49 check (run by hand): the report's cheaper robustness refits against the full ones.

The report's robustness line (:func:`bayesbias.studies.sensitivity.sensitivity`: every word
left out in turn, 200 word lists resampled within class) drew 4,000 posterior draws per refit
in batches of 25 refits. This script runs, per shipped word list on the embedded default and
per seed, the reference (``--ref-draws`` 4000, batches of 25, sample HDI of the draws) and
each candidate ``DRAWS:BATCH[:ESTIMATOR]`` (``draws``: sample HDI; ``mixture``: the
Rao-Blackwellised Normal mixture over the scale draws; common random numbers as always; the
same batches give the same resampled lists) and reports how they agree:

- the share of resampled lists under which each verdict contrast holds (its difference
  from the reference against the share's own Monte Carlo se over 200 lists, and against the
  reference's own spread over seeds);
- whether the baseline verdicts agree; the (word, contrast) pairs whose removal flips a
  verdict; the overlap of the 10 most influential words.

    PYTHONPATH=$PWD python benchmarks/robustness_draws_agreement.py --seeds 1,2 \
        --candidates 1000:25,2000:25,250:25:mixture,1000:25:mixture \
        --out benchmarks/results/robustness_draws_agreement.json
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np

LISTS = ("religion", "race", "gender", "weat1", "weat6", "weat7", "madlibs_identity")


def summary(sens) -> dict:
    from bayesbias.studies.design import VERDICTS

    lo = sens.leave_one_out
    flips = lo.loc[lo["contrast"].isin(VERDICTS) & lo["flips"], ["word", "contrast"]]
    return {"share": sens.resampled.set_index("contrast")["share_holds"].to_dict(),
            "holds": sens.baseline.set_index("contrast")["holds"].astype(bool).to_dict(),
            "flips": sorted(f"{w}|{c}" for w, c in flips.itertuples(index=False)),
            "top10": sens.influential(10)["word"].astype(str).tolist()}


def parse(spec: str) -> tuple:
    """``"1000:25"`` -> (1000, 25, "draws"); ``"250:25:mixture"`` -> (250, 25, "mixture")."""
    parts = spec.split(":")
    return int(parts[0]), int(parts[1]), parts[2] if len(parts) > 2 else "draws"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="1,2")
    ap.add_argument("--lists", default=",".join(LISTS))
    ap.add_argument("--ref-draws", type=int, default=4000)
    ap.add_argument("--ref-chunk", type=int, default=25)
    ap.add_argument("--candidates", default="1000:100,2000:100,4000:100")
    ap.add_argument("--out", default="benchmarks/results/robustness_draws_agreement.json")
    args = ap.parse_args(argv)
    from bayesbias.distances import distance_table
    from bayesbias.embeddings import load_embedding
    from bayesbias.studies.sensitivity import sensitivity
    from bayesbias.wordlists import load_wordlist

    warnings.simplefilter("ignore")
    wls = [load_wordlist(n) for n in args.lists.split(",")]
    emb = load_embedding("default", list(dict.fromkeys(w for wl in wls for w in wl.all_words)))
    configs = [(args.ref_draws, args.ref_chunk, "draws")] + [
        parse(c) for c in args.candidates.split(",") if c]
    out_path = Path(args.out)
    done = json.loads(out_path.read_text()) if out_path.exists() else {}
    for wl in wls:
        table = distance_table(emb, wl, on_missing="drop")
        for seed in (int(s) for s in args.seeds.split(",")):
            for draws, chunk, est in configs:
                key = f"{wl.name}|{seed}|{draws}|{chunk}" + ("" if est == "draws" else f"|{est}")
                if key in done:
                    continue
                t, c = time.perf_counter(), time.process_time()
                sens = sensitivity(table, "crossed", n_draws=draws, chunk_size=chunk, seed=seed,
                                   estimator=est)
                done[key] = dict(summary(sens), wall=time.perf_counter() - t,
                                 cpu=time.process_time() - c)
                out_path.parent.mkdir(parents=True, exist_ok=True)
                out_path.write_text(json.dumps(done, indent=1))
                print(key, f"{done[key]['cpu']:.2f} CPU-s",
                      {k: round(v, 3) for k, v in done[key]["share"].items()}, flush=True)
    report(done, configs)
    return 0


def report(done: dict, configs) -> None:
    """Print each candidate's agreement with the reference and with the mixture of 1,000."""
    exact = (1000, 25, "mixture")
    for ref in [configs[0]] + ([exact] if exact in configs[1:] else []):
        _report(done, ref, [c for c in configs if c != ref])


def _report(done: dict, ref, candidates) -> None:
    rows = {}
    for key, rec in done.items():
        name, seed, *conf = key.split("|")
        rows.setdefault((name, int(seed)), {})[parse(":".join(conf))] = rec
    n_lists = 200
    for cand in candidates:
        diffs, z, flips_same, holds_same, overlap, cpu_ratio = [], [], 0, 0, [], []
        n = 0
        for _key, recs in sorted(rows.items()):
            if ref not in recs or cand not in recs:
                continue
            r, c = recs[ref], recs[cand]
            n += 1
            for k in r["share"]:
                if k == "human - none":
                    continue
                d = c["share"][k] - r["share"][k]
                p = r["share"][k]
                se = np.sqrt(max(p * (1 - p), 1 / n_lists) / n_lists)
                diffs.append(d)
                z.append(d / se)
            flips_same += r["flips"] == c["flips"]
            holds_same += r["holds"] == c["holds"]
            overlap.append(len(set(r["top10"]) & set(c["top10"])) / 10)
            cpu_ratio.append(c["cpu"] / r["cpu"])
        if not n:
            continue
        diffs, z = np.array(diffs), np.array(z)
        print(f"{cand[0]} draws ({cand[2]}), batches of {cand[1]} vs {ref[0]}/{ref[1]} ({ref[2]}): "
              f"{n} (list, seed); "
              f"verdict shares: max |diff| {np.abs(diffs).max():.3f}, mean diff "
              f"{diffs.mean():+.4f}, max |z| {np.abs(z).max():.2f} (se of a share over "
              f"{n_lists} lists); baseline verdicts equal {holds_same}/{n}; flip sets equal "
              f"{flips_same}/{n}; top-10 overlap median {np.median(overlap):.2f} (min "
              f"{min(overlap):.2f}); CPU ratio median {np.median(cpu_ratio):.2f}")
    # the reference's own spread over seeds (the noise the candidates are judged against)
    by_name = {}
    for (name, _seed), recs in rows.items():
        if ref in recs:
            by_name.setdefault(name, []).append(recs[ref]["share"])
    spreads = [abs(a[k] - b[k]) for v in by_name.values() if len(v) >= 2
               for a, b in [v[:2]] for k in a if k != "human - none"]
    if spreads:
        print(f"reference over two seeds: max |diff| of a share {max(spreads):.3f}")


if __name__ == "__main__":
    main()
