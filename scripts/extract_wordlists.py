"""Recover the shipped word lists exactly from the published distance tables.

The tables of Dobrzeniecka & Urbaniak (``shared/data/cosine-distances``) are the source of
truth for the Manzini et al. (2019) lists, the WEAT 1 / WEAT 7 lists and the two control
groups. Run from the repository root::

    python scripts/extract_wordlists.py ../shared/data/cosine-distances

It rewrites ``wordlists/{controls,religion,race,gender,weat1,weat7}.toml``.
``weat6.toml`` is written by hand from Caliskan et al. (2017), as no table exists for it.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "wordlists"
DATA_REPO = ("Dobrzeniecka & Urbaniak, 'A Bayesian approach to uncertainty in word embedding "
             "bias estimation', Computational Linguistics 50(2), 2024; public repository, "
             "folder datasets/macWeatDatasets/ (MIT licence)")
MANZINI = ("Manzini, Lim, Tsvetkov & Black (2019), 'Black is to Criminal as Caucasian is to "
           "Police: Detecting and Removing Multiclass Bias in Word Embeddings', NAACL")
CALISKAN = ("Caliskan, Bryson & Narayanan (2017), 'Semantics derived automatically from language "
            "corpora contain human-like biases', Science 356(6334)")

# Manzini et al.'s definite sets (their vocabulary files); the race table repeats protected
# words because it was built per definite set.
DEFINITE_SETS = {
    "religion": [["judaism", "christianity", "islam"], ["jew", "christian", "muslim"],
                 ["synagogue", "church", "mosque"], ["torah", "bible", "quran"],
                 ["rabbi", "priest", "imam"]],
    "race": [["black", "caucasian", "asian"], ["african", "caucasian", "asian"],
             ["black", "white", "asian"], ["africa", "america", "asia"],
             ["africa", "america", "china"], ["africa", "europe", "asia"]],
    "gender": [["he", "she"], ["his", "hers"], ["son", "daughter"], ["father", "mother"],
               ["male", "female"], ["boy", "girl"], ["uncle", "aunt"]],
}
TOPICS = {
    "religion": ("religion_group_reddit_dataset.csv", MANZINI,
                 "Religion: Jewish, Christian and Muslim protected words and stereotypes."),
    "race": ("race_group_reddit_dataset.csv", MANZINI,
             "Race: Black, Caucasian and Asian protected words and stereotypes."),
    "gender": ("gender_group_reddit_dataset.csv", MANZINI,
               "Gender: male and female protected words and occupational stereotypes."),
    "weat1": ("weat_1_reddit.csv", CALISKAN,
              "WEAT 1: flowers vs insects (targets), pleasant vs unpleasant (attributes)."),
    "weat7": ("weat_7_reddit.csv", CALISKAN,
              "WEAT 7: math vs arts (targets), male vs female terms (attributes)."),
}
LABELS = {"weat1": {"flowers": "pleasant", "insects": "unpleasant"},
          "weat7": {"math": "male terms", "arts": "female terms"}}


def _list(words, indent="    "):
    lines, line = [], indent
    for w in words:
        item = f'"{w}", '
        if len(line) + len(item) > 96:
            lines.append(line.rstrip())
            line = indent
        line += item
    lines.append(line.rstrip().rstrip(","))
    return "[\n" + "\n".join(lines) + ",\n]"


def _read(path):
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def main(data_dir):
    data_dir = Path(data_dir)
    rows = _read(data_dir / "religion_group_reddit_dataset.csv")
    controls = {"human": [], "none": []}
    for r in rows:
        group = "human" if r["word_class"] == "human" else "none"
        if r["word_class"] in ("human", "neutral") and r["word_to_compare"] not in controls[group]:
            controls[group].append(r["word_to_compare"])
    (OUT / "controls.toml").write_text(
        "# Control groups of Dobrzeniecka & Urbaniak: neutral words ('none') and human\n"
        "# attributes ('human'), recovered from the published distance tables.\n"
        f'source = "{DATA_REPO}"\n\n'
        f"human = {_list(controls['human'])}\n\nnone = {_list(controls['none'])}\n",
        encoding="utf-8",
    )
    for name, (fname, source, description) in TOPICS.items():
        rows = _read(data_dir / fname)
        protected = list(dict.fromkeys(r["protected_word"] for r in rows))
        stereotypes: dict[str, list[str]] = {}
        klass: dict[str, str] = {}
        for r in rows:
            wc = r["word_class"]
            if wc in ("human", "neutral"):
                continue
            cname = wc.removesuffix("_stereotype")
            stereotypes.setdefault(cname, [])
            if r["word_to_compare"] not in stereotypes[cname]:
                stereotypes[cname].append(r["word_to_compare"])
            if r["connection"] == "associated":
                klass[r["protected_word"]] = cname
        order = list(dict.fromkeys(klass[w] for w in protected))
        text = [f'name = "{name}"', f'description = "{description}"']
        if name in DEFINITE_SETS:
            text.append("definite_sets = [\n" + "\n".join(
                "    [" + ", ".join(f'"{w}"' for w in s) + "]," for s in DEFINITE_SETS[name]
            ) + "\n]")
        text.append(f'\n[provenance]\nsource = "{source}"\nrecovered_from = "{DATA_REPO}, '
                    f'file {fname}"')
        for cname in order:
            text.append(f"\n[classes.{cname}]")
            if name in LABELS:
                text.append(f'attribute_label = "{LABELS[name][cname]}"')
            text.append(f"protected_words = {_list([w for w in protected if klass[w] == cname])}")
            text.append(f"stereotypes = {_list(stereotypes[cname])}")
        text.append('\n[controls]\nhuman = "default"\nnone = "default"\n')
        (OUT / f"{name}.toml").write_text("\n".join(text), encoding="utf-8")
        print(f"wrote {name}.toml")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "../shared/data/cosine-distances")
