r"""Calibration of the embedding-level model on trained embeddings of synthetic corpora.

Each replication writes a fresh synthetic corpus (:mod:`bayesbias.corpora`, a planted
association of strength ``--planted``; 0 is the null), trains word2vec on it
(:func:`bayesbias.training.train_models`, one gensim thread per model; 800 documents of 40
tokens, 24 dimensions, 20 epochs, 4 models per ensemble) and fits

- ``bootstrap``: ``embedding_level`` on B document-bootstrap resamples (the corpus-level
  claim this tool recommends),
- ``seeds``: ``embedding_level`` on K seeds of the corpus itself (a seed-only ensemble;
  ``--seeds 1`` skips it),
- ``single``: ``crossed`` on the first seed alone (one embedding, what a usual study fits),

plus WEAT (permutation p) on each seed. Every fit uses the package defaults (4 chains x
1,000 draws after 1,000 tuning steps, nutpie).

**The target.** ``planted`` is a co-occurrence probability, not a cosine distance, so the
value a 90% interval of ``associated - none`` should cover is the contrast the training
pipeline gives on average over corpora of the generator (the "language"): for bootstrap
ensembles the mean over corpora and resamples of an embedding's raw contrast (mean
distance of its ``associated`` rows minus that of its ``none`` rows), for seeds and single
embeddings the same mean over models of the corpora themselves (word2vec puts resampled,
duplicated documents' words further apart, so the two pipelines differ). Words of a kind are
exchangeable in the generator (with ``--word-sd`` each corpus draws its words' weights
afresh: a new sample of words from one population), so this equals the population
contrast the model's ``mu_bar`` describes. It is estimated from the *other* replications
(leave one out), whose corpora are independent of the one being scored; its Monte Carlo
error is reported.

Usage::

    python benchmarks/embedding_level_corpus_coverage.py run --planted 0.5 --reps 100 \\
        --out runs/corpus_cov_p05.jsonl [--start 0] [--deadline 19:10] [--bootstrap 8]
        [--seeds-within 2] [--word-sd 0.5] [--corpora 4 --seeds-within 2]
    python benchmarks/embedding_level_corpus_coverage.py summary runs/corpus_cov_p05*.jsonl
    python benchmarks/embedding_level_corpus_coverage.py paired --reference A.jsonl -- B.jsonl

``run`` appends one JSON line per replication and skips replications already in the file.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import warnings
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

CONTRASTS = {"associated - none": ("associated", "none"),
             "associated - different": ("associated", "different"),
             "associated - human": ("associated", "human")}
DOCS = 800
MODELS = 4
CI = 0.9


def raw_contrasts(table) -> dict:
    """Each embedding's raw contrasts (difference of mean distances by connection)."""
    out = {name: [] for name in CONTRASTS}
    for _, t in table.groupby("embedding", sort=True):
        m = t.groupby("connection")["cosine_distance"].mean()
        for name, (a, b) in CONTRASTS.items():
            out[name].append(float(m[a] - m[b]))
    return out


def intervals(fit) -> dict:
    c = fit.contrasts(ci_prob=CI, ci_kind="eti").set_index("contrast")
    return {name: [float(c.loc[name, "lower"]), float(c.loc[name, "upper"]),
                   float(c.loc[name, "mean"])] for name in CONTRASTS}


def replication(rep: int, planted: float, work: Path, seeds: int = MODELS,
                boot: int = MODELS, within: int = 1, word_sd: float = 0.0,
                strength_sd: float = 0.0) -> dict:
    from bayesbias.corpora import SyntheticDesign, synthetic_wordlist_toml, write_synthetic_corpus
    from bayesbias.ensemble import manifest_table, single_embedding, weat_per_embedding
    from bayesbias.models import fit_model
    from bayesbias.training import TrainSettings, train_models
    from bayesbias.verdicts import verdict_from_fit

    settings = TrainSettings(vector_size=24, min_count=2, epochs=20)
    t0 = time.time()
    corpus = write_synthetic_corpus(work / "corpus.txt.gz", n_docs=DOCS, planted=planted,
                                    seed=10_000 + rep,
                                    design=SyntheticDesign(word_sd=word_sd,
                                                           strength_sd=strength_sd))
    wordlist = work / "synthetic.toml"
    synthetic_wordlist_toml(wordlist)
    train_models(corpus, work / "seeds", seeds=seeds, settings=settings, first_seed=1)
    train_models(corpus, work / "boot", seeds=within if within > 1 else 0, bootstrap=boot,
                 seeds_within=within > 1, settings=settings, bootstrap_seed=rep)
    tables = {"seeds": manifest_table(work / "seeds", wordlist),
              "bootstrap": manifest_table(work / "boot", wordlist)}
    row = {"rep": rep, "planted": planted, "docs": DOCS, "models": boot * within,
           "resamples": boot, "seeds_within": within, "n_seeds": seeds, "word_sd": word_sd,
           "strength_sd": strength_sd,
           "train_s": round(time.time() - t0, 1)}
    first = sorted(tables["seeds"]["embedding"].unique())[0]
    one = single_embedding(tables["seeds"][tables["seeds"]["embedding"] == first], "crossed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fits = {"bootstrap": fit_model(tables["bootstrap"], "embedding_level", seed=rep),
                "single": fit_model(one, "crossed", seed=rep)}
        if seeds >= 2:
            fits["seeds"] = fit_model(tables["seeds"], "embedding_level", seed=rep)
        for name, fit in fits.items():
            d = fit.diagnostics()
            row[name] = {"interval": intervals(fit), "verdict": verdict_from_fit(fit).code,
                         "rhat_ok": bool(d.ok), "divergences": int(d.divergences)}
        weat = weat_per_embedding(tables["seeds"], seed=rep, n_permutations=10_000)
    row["raw"] = {k: raw_contrasts(t) for k, t in tables.items()}
    row["weat_p"] = [float(p) for p in weat["p_value"]]
    row["weat_d"] = [float(d) for d in weat["effect_size"]]
    row["seconds"] = round(time.time() - t0, 1)
    return row


def _variant(**priors):
    """Return the ``embedding_level`` spec with `priors` replaced (None: left out)."""
    from bayesbias.models import load_spec
    from bayesbias.models.spec import ModelSpec

    d = load_spec("embedding_level").to_dict()
    for name, prior in priors.items():
        if prior is None:
            d["priors"].pop(name)
        else:
            d["priors"][name] = prior
    return ModelSpec.from_dict(d)


def corpora_replication(rep: int, planted: float, work: Path, n_corpora: int,
                        within: int = 2, word_sd: float = 0.0,
                        strength_sd: float = 0.0, without_strength: bool = False,
                        training_seeds: str = "fixed", seed_ensemble: int = 0,
                        gamma_lam: float | None = None, variants_only: bool = False) -> dict:
    """Fit ``embedding_level`` on R independent corpora of the generator (``within`` seeds each).

    The corpus-level interval then describes the population of corpora directly, with no
    resampling of one corpus: a check of the model on trained embeddings by itself.

    `training_seeds`: "fixed" trains every corpus of every replication from seed 1 (gensim's
    default; gensim 4 draws the initial vectors row by row of the vocabulary, sorted by
    frequency, from the seed, and the generator's words keep nearly the same frequency ranks
    in every corpus, so a word's training accident repeats across corpora and replications,
    and the target contains it);
    "replication" from one seed per replication, shared by its corpora (the accident repeats
    within a replication, as for a user who trains every corpus with the default seed, but is
    a new draw in each); "corpus" from a seed of its own per corpus. `seed_ensemble` >= 2
    also trains that many seeds on the first corpus alone and fits them as one ensemble
    ("seeds": a seed-only ensemble, scored against the same language-level target).
    `gamma_lam` also fits the model with ``gamma ~ Exponential(gamma_lam)`` on the same table
    ("corpora_gamma"). `variants_only` leaves out the default model and the single embedding's
    fit (for replications whose tables and default fits another file already holds: the same
    seeds give the same tables and draws).
    """
    from bayesbias.corpora import SyntheticDesign, synthetic_wordlist_toml, write_synthetic_corpus
    from bayesbias.ensemble import manifest_table, single_embedding, weat_per_embedding
    from bayesbias.models import fit_model
    from bayesbias.training import TrainSettings, train_models
    from bayesbias.verdicts import verdict_from_fit

    settings = TrainSettings(vector_size=24, min_count=2, epochs=20)
    # one language per replication: its corpora share the words' weights
    design = SyntheticDesign(word_sd=word_sd, strength_sd=strength_sd,
                             word_seed=2_000_000 + rep)
    t0 = time.time()
    wordlist = work / "synthetic.toml"
    synthetic_wordlist_toml(wordlist)
    for j in range(n_corpora):  # corpora of every replication are distinct draws
        corpus = write_synthetic_corpus(work / f"c{j}.txt.gz", n_docs=DOCS, planted=planted,
                                        seed=1_000_000 + 100 * rep + j, design=design)
        seed0 = {"fixed": 1, "replication": 1 + 1000 * rep,
                 "corpus": 1 + 1000 * rep + within * j}[training_seeds]
        train_models(corpus, work / "corpora" / f"c{j}", seeds=within, settings=settings,
                     first_seed=seed0)
        if j == 0 and seed_ensemble >= 2:  # K seeds of the first corpus alone
            train_models(corpus, work / "seeds", seeds=seed_ensemble, settings=settings,
                         first_seed=seed0 + 500)
    table = manifest_table(work / "corpora", wordlist)
    row = {"rep": rep, "planted": planted, "docs": DOCS, "models": n_corpora * within,
           "n_corpora": n_corpora, "seeds_within": within, "kind": "corpora",
           "word_sd": word_sd, "strength_sd": strength_sd, "training_seeds": training_seeds,
           "train_s": round(time.time() - t0, 1)}
    first = sorted(table["embedding"].unique())[0]
    one = single_embedding(table[table["embedding"] == first], "crossed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fits = {} if variants_only else {
            "corpora": fit_model(table, "embedding_level", seed=rep),
            "single": fit_model(one, "crossed", seed=rep)}
        if seed_ensemble >= 2:
            seeds_table = manifest_table(work / "seeds", wordlist)
            fits["seeds"] = fit_model(seeds_table, "embedding_level", seed=rep)
        if without_strength:  # the same table, the model without the stereotype strengths
            fits["corpora_no_strength"] = fit_model(table, _variant(gamma=None), seed=rep)
        if gamma_lam is not None:  # the same table, another prior on the strengths' sd
            fits["corpora_gamma"] = fit_model(
                table, _variant(gamma={"dist": "Exponential", "lam": float(gamma_lam)}),
                seed=rep)
        for name, fit in fits.items():
            d = fit.diagnostics()
            row[name] = {"interval": intervals(fit), "verdict": verdict_from_fit(fit).code,
                         "rhat_ok": bool(d.ok), "divergences": int(d.divergences)}
        weat = weat_per_embedding(table, seed=rep, n_permutations=10_000)
    row["raw"] = {"corpora": raw_contrasts(table)}
    row["weat_p"] = [float(p) for p in weat["p_value"]]
    row["weat_d"] = [float(d) for d in weat["effect_size"]]
    row["seconds"] = round(time.time() - t0, 1)
    return row


def run(args) -> None:
    out = Path(args.out)
    done = set()
    if out.exists():
        done = {json.loads(line)["rep"] for line in out.read_text().splitlines() if line}
    deadline = None
    if args.deadline:
        hh, mm = map(int, args.deadline.split(":"))
        now = datetime.now(timezone.utc)
        deadline = now.replace(hour=hh, minute=mm, second=0, microsecond=0)
        if deadline <= now:  # a time past midnight
            deadline += timedelta(days=1)
    for rep in range(args.start, args.start + args.reps):
        if rep in done:
            continue
        if deadline and datetime.now(timezone.utc) >= deadline:
            print(f"deadline {args.deadline} reached before replication {rep}", flush=True)
            break
        with tempfile.TemporaryDirectory(prefix="bb-cov-") as tmp:
            if args.corpora:
                row = corpora_replication(rep, args.planted, Path(tmp), args.corpora,
                                          args.seeds_within, args.word_sd, args.strength_sd,
                                          args.without_strength, args.training_seeds,
                                          args.seed_ensemble, args.gamma_lam,
                                          args.variants_only)
            else:
                row = replication(rep, args.planted, Path(tmp), args.seeds, args.bootstrap,
                                  args.seeds_within, args.word_sd, args.strength_sd)
        with out.open("a") as fh:
            fh.write(json.dumps(row) + "\n")
        print(json.dumps({k: row[k] for k in ("rep", "seconds", "train_s")}
                         | {k: row[k]["verdict"] for k in ("bootstrap", "seeds", "corpora",
                                                            "corpora_gamma",
                                                            "corpora_no_strength", "single")
                            if k in row}),
              flush=True)


def summary(args) -> None:
    by_rep = _rows(args.file)  # several files of one study (replication ranges run in parallel)
    rows = [by_rep[k] for k in sorted(by_rep)]
    n = len(rows)
    planted = sorted({r["planted"] for r in rows})
    print(f"{', '.join(args.file)}: {n} replications, planted {planted}, "
          f"{rows[0]['docs']} documents, {rows[0]['models']} models per ensemble")
    kinds = [p for p in ("bootstrap", "seeds", "corpora") if p in rows[0]["raw"]]
    pipeline = {"bootstrap": "bootstrap", "seeds": "seeds" if "seeds" in kinds else "corpora",
                "corpora": "corpora",
                "corpora_no_strength": "corpora", "corpora_gamma": "corpora",
                "single": "corpora" if "corpora" in kinds else "seeds"}
    for name in CONTRASTS:
        per_rep = {p: np.array([np.mean(r["raw"][p][name]) for r in rows]) for p in kinds}
        for p, v in per_rep.items():
            print(f"  target {name:24s} {p:9s} {v.mean():+.4f} (Monte Carlo se "
                  f"{v.std(ddof=1) / np.sqrt(n):.4f}; sd between corpora {v.std(ddof=1):.4f})")
        for fit_name, p in pipeline.items():
            has = np.array([fit_name in r for r in rows])  # a fit some runs skipped
            if not has.any():
                continue
            v = per_rep[p]
            loo = ((v.sum() - v) / (n - 1))[has]
            iv = np.array([r[fit_name]["interval"][name] for r in rows if fit_name in r])
            cov = (iv[:, 0] <= loo) & (loo <= iv[:, 1])
            se = np.sqrt(cov.mean() * (1 - cov.mean()) / has.sum())
            width = iv[:, 1] - iv[:, 0]
            err = iv[:, 2] - loo  # a calibrated interval: sd(err) ~ width / (2 * 1.645)
            print(f"  {fit_name:9s} {name:24s} 90% coverage {cov.mean():.3f} (se {se:.3f}; "
                  f"{cov.sum()}/{has.sum()}) mean width {width.mean():.4f}; sd of mean - target "
                  f"{err.std(ddof=1):.4f}, width / 3.29 {width.mean() / 3.29:.4f}")
    for fit_name in ("bootstrap", "seeds", "corpora", "corpora_no_strength", "corpora_gamma",
                     "single"):
        fits = [r[fit_name] for r in rows if fit_name in r]
        if not fits:
            continue
        m = len(fits)
        codes = [f["verdict"] for f in fits]
        ss = sum(c == "stereotype-specific" for c in codes)
        ok = sum(f["rhat_ok"] for f in fits)
        div = sum(f["divergences"] > 0 for f in fits)
        tally = {c: codes.count(c) for c in sorted(set(codes))}
        print(f"  {fit_name:9s} stereotype-specific in {ss}/{m} ({ss / m:.3f}); diagnostics ok "
              f"{ok}/{m}; fits with divergences {div}; verdicts {tally}")
    within = rows[0].get("seeds_within", 1)
    if within >= 2 and "corpora" in kinds:  # several corpora, several seeds each
        c = rows[0]["models"] // within
        print(f"  where a model's raw contrast varies ({c} corpora x {within} seeds):")
        for name in CONTRASTS:
            x = np.array([r["raw"]["corpora"][name] for r in rows]).reshape(n, c, within)
            train = x.var(axis=2, ddof=1).mean()
            corpus = x.mean(axis=2).var(axis=1, ddof=1).mean() - train / within
            print(f"    {name:24s} training sd {np.sqrt(train):.4f}; corpus around the "
                  f"language {np.sqrt(max(corpus, 0.0)):.4f} (directly, between corpora)")
    if within >= 2 and "bootstrap" in kinds:  # resamples with several seeds: split the variance
        b = rows[0]["resamples"]
        print(f"  where a bootstrap model's raw contrast varies ({b} resamples x {within} seeds):")
        for name in CONTRASTS:
            x = np.array([r["raw"]["bootstrap"][name] for r in rows]).reshape(n, b, within)
            train = x.var(axis=2, ddof=1).mean()  # seeds of one resample
            boot = x.mean(axis=2).var(axis=1, ddof=1).mean() - train / within
            between = x.mean(axis=(1, 2)).var(ddof=1)  # the ensemble mean, corpus to corpus
            corpus = between - (boot + train / within) / b
            print(f"    {name:24s} training sd {np.sqrt(train):.4f}; resample around its "
                  f"corpus {np.sqrt(max(boot, 0.0)):.4f}; corpus around the language "
                  f"{np.sqrt(max(corpus, 0.0)):.4f} (from the sd of the ensemble mean between "
                  f"corpora, {np.sqrt(between):.4f})")
    p = np.array([r["weat_p"] for r in rows])
    print(f"  WEAT p < 0.05: first seed {np.mean(p[:, 0] < 0.05):.3f}, any of the "
          f"{p.shape[1]} seeds {np.mean((p < 0.05).any(axis=1)):.3f}, all seeds' d of one sign "
          f"{np.mean([abs(np.sign(r['weat_d']).sum()) == len(r['weat_d']) for r in rows]):.3f}")
    print(f"  seconds per replication: median {np.median([r['seconds'] for r in rows]):.0f}")


def _rows(files) -> dict:
    """{rep: row} of the JSON lines of `files` (the first row of a replication wins)."""
    rows = {}
    for f in files:
        for line in Path(f).read_text().splitlines():
            if line:
                row = json.loads(line)
                rows.setdefault(row["rep"], row)
    return rows


def _covered(files, fit: str, target_files=None) -> dict:
    """{rep: {contrast: (covered, width)}} of `fit` in `files`.

    The target of a replication is the mean over the other replications of `target_files`
    (default `files`) of their corpora's raw contrasts (leave one out).
    """
    rows, ref = _rows(files), _rows(target_files or files)
    reps = sorted(ref)
    out: dict = {}
    for name in CONTRASTS:
        v = np.array([np.mean(ref[k]["raw"]["corpora"][name]) for k in reps])
        loo = dict(zip(reps, (v.sum() - v) / (len(reps) - 1), strict=True))
        total = v.mean()
        for k, row in rows.items():
            if fit in row:
                lo, hi, _ = row[fit]["interval"][name]
                target = loo.get(k, total)
                out.setdefault(k, {})[name] = (bool(lo <= target <= hi), hi - lo)
    return out


def paired(args) -> None:
    """Coverage and width of each fit beside a reference study's, on the same replications.

    Every fit is scored against the reference study's target (its replications' mean).
    """
    ref = _covered(args.reference, "corpora")
    new = {f: _covered(args.file, f, args.reference)
           for f in ("corpora", "corpora_gamma", "corpora_no_strength", "seeds", "single")}
    reps = sorted(k for k in set().union(*new.values()) if k in ref)
    print(f"{len(reps)} paired replications; reference {', '.join(args.reference)}")
    for name in CONTRASTS:
        line = (f"  {name:24s} reference: {sum(ref[k][name][0] for k in reps)}/{len(reps)} width "
                f"{np.mean([ref[k][name][1] for k in reps]):.4f}")
        for f, got in new.items():
            ks = [k for k in reps if k in got]
            if ks:
                line += (f" | {f} {sum(got[k][name][0] for k in ks)}/{len(ks)} width "
                         f"{np.mean([got[k][name][1] for k in ks]):.4f}")
        print(line)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--planted", type=float, required=True)
    r.add_argument("--reps", type=int, default=100)
    r.add_argument("--start", type=int, default=0)
    r.add_argument("--seeds", type=int, default=MODELS,
                   help="seed models of the corpus (1: no seed-only ensemble, WEAT on one)")
    r.add_argument("--bootstrap", type=int, default=MODELS,
                   help="bootstrap resamples of the corpus per ensemble (default 4)")
    r.add_argument("--seeds-within", type=int, default=1,
                   help="training seeds per bootstrap resample (default 1; >= 2 lets the model "
                        "tell training noise from corpus-sampling noise)")
    r.add_argument("--word-sd", type=float, default=0.0,
                   help="sd of the list words' log frequency weights within their kind "
                        "(SyntheticDesign.word_sd; 0: exchangeable words)")
    r.add_argument("--strength-sd", type=float, default=0.0,
                   help="sd of the stereotypes' own association strengths around --planted "
                        "(SyntheticDesign.strength_sd; 0: one strength)")
    r.add_argument("--corpora", type=int, default=0,
                   help="instead: R independent corpora per replication, --seeds-within "
                        "seeds each, one embedding_level fit (the model without resampling)")
    r.add_argument("--without-strength", action="store_true",
                   help="with --corpora: also fit the model without the stereotype strengths "
                        "(no gamma prior) on the same table ('corpora_no_strength')")
    r.add_argument("--training-seeds", choices=("fixed", "replication", "corpus"),
                   default="fixed",
                   help="with --corpora: seed 1 for every corpus (default), one seed per "
                        "replication shared by its corpora, or one per corpus")
    r.add_argument("--seed-ensemble", type=int, default=0,
                   help="with --corpora: also K seeds of the first corpus as one ensemble")
    r.add_argument("--gamma-lam", type=float, default=None,
                   help="with --corpora: also fit gamma ~ Exponential(LAM) ('corpora_gamma')")
    r.add_argument("--variants-only", action="store_true",
                   help="with --corpora: fit only the variants asked for (--gamma-lam, "
                        "--without-strength, --seed-ensemble), not the default model and "
                        "the single embedding (compare with 'paired --reference')")
    r.add_argument("--out", required=True)
    r.add_argument("--deadline", help="HH:MM UTC: start no replication after it")
    s = sub.add_parser("summary")
    s.add_argument("file", nargs="+")
    pr = sub.add_parser("paired", help="corpora studies of the same replications side by side")
    pr.add_argument("--reference", nargs="+", required=True)
    pr.add_argument("file", nargs="+")
    args = ap.parse_args(argv)
    {"run": run, "summary": summary, "paired": paired}[args.command](args)


if __name__ == "__main__":
    main()
