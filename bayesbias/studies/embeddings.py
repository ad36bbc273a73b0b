"""How many embeddings a claim needs, from a fitted ``embedding_level`` posterior.

For K embeddings (and the pilot's words and attributes) the corpus-level estimate of a
contrast ``a - b`` of the ``embedding_level`` model, given its variance components, is Normal
around the truth with variance (balanced layout; ``n_w`` protected words, ``A_c`` attribute
words and ``N_c`` rows of connection ``c`` per embedding)::

    V(K) = (tau_a^2 + tau_b^2) / n_w             which words were chosen
         + (eta_a^2 + eta_b^2) / (n_w K)          each word's variation between embeddings
         + (xi_a^2 + xi_b^2) / (n_w K)            ... shared by a sample's runs (if a level)
         + (kappa_a^2 + lambda_a^2) / K           corpus samples and training runs
                                                  (each only if the pilot has that level)
         + psi^2 (1 / A_a + 1 / A_b) / K          attributes' deviations in one sample
                                                  (0 for associated - different)
         + omega^2 (1 / A_a + 1 / A_b)            which attribute words were chosen
                                                  (0 for associated - different: both
                                                  average over the same stereotypes)
         + f (gamma^2 / S + phi^2 / (S K))        how strongly the S chosen stereotypes
                                                  are stereotypes, and their deviations in
                                                  one sample (f: 1 for associated -
                                                  different, 1/4 with one of them, else 0)
         + (sigma_a^2 / N_a + sigma_b^2 / N_b) / K   single distances
         + kappa_a^2                              bootstrap only: the corpus is one more draw

(``kappa0`` and ``lambda0`` shift every connection alike and cancel; ``none`` has no
``kappa`` or ``lambda`` of its own). With a flat prior the posterior of the contrast is
Normal(estimate, V), so its central interval lies wholly below 0 with probability
``Phi(-delta / sqrt(V) - z)``, ``z`` the interval's Normal quantile. The assurance of K is
that probability averaged over the posterior draws of the pilot (truth ``delta`` and the
scales). It plugs in each draw's scales: the uncertainty about the scales of a new study
is left out, so it is optimistic for small K. :attr:`EmbeddingsDesign.check` compares
``sqrt(V)`` at the pilot's own K with the fit's posterior sd of the contrast.

What more embeddings buy depends on the ensemble: seeds shrink run noise only (the claim
stays about this corpus); bootstrap resamples never shrink the corpus's own draw (a
plateau); independent corpora shrink everything but the word and attribute parts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..config import CONNECTIONS, defaults
from ..errors import InputDataError, InvalidArgumentError
from ..models import embedding_level
from ..models.families import family
from ..models.plots import _save, new_figure
from ..plain import to_plain
from ..verdicts.ensemble import ensemble_kind

__all__ = ["embeddings_needed", "EmbeddingsDesign", "contrast_variance"]

#: The contrasts of the verdict with stereotypes.
CONTRASTS = ("associated - none", "associated - human", "associated - different")


def _flat(post, name) -> np.ndarray:
    return post[name].values.reshape(-1, *post[name].shape[2:])


def contrast_variance(scales: dict, contrast: str, k: int, *, words: int, attributes: dict,
                      rows_per_embedding: dict, kind: str,
                      levels: tuple[bool, bool] = (True, False),
                      interactions: tuple[bool, bool] = (False, False),
                      stereotypes: int = 0) -> np.ndarray:
    """Return V(K) of the module docstring per draw.

    Parameters
    ----------
    scales : dict
        Draws of ``tau``, ``eta``, ``sigma`` ``(draws, 4)``; ``kappa``, ``lambda`` ``(draws,
        3)``; ``omega`` ``(draws,)``; with `interactions`, ``psi`` ``(draws,)`` and ``xi``
        ``(draws, 4)``.
    attributes : dict
        Attribute words per connection.
    rows_per_embedding : dict
        Rows per connection in one embedding.
    kind : {"bootstrap", "seeds", "corpora"}
    levels : (bool, bool)
        Whether the pilot has the corpus-sample and the training-run level (a level it
        lacks has only its prior: left out). A new embedding is a new sample (bootstrap,
        corpora) and a new run (with a run level), so both parts shrink like 1/K.
    interactions : (bool, bool)
        Whether the pilot has the attribute x sample (``psi``) and the word x sample
        (``xi``) level.
    stereotypes : int
        Stereotypes with an own-class strength (``gamma`` in `scales`); 0: no such level.
    """
    a, b = contrast.split(" - ")
    ia, ib = CONNECTIONS.index(a), CONNECTIONS.index(b)
    t, e, s = scales["tau"], scales["eta"], scales["sigma"]
    v = (t[:, ia] ** 2 + t[:, ib] ** 2) / words + (e[:, ia] ** 2 + e[:, ib] ** 2) / (words * k)
    if interactions[1]:
        x = scales["xi"]
        v = v + (x[:, ia] ** 2 + x[:, ib] ** 2) / (words * k)
    if not {a, b} <= {"associated", "different"}:  # both average over all stereotypes
        per_attribute = 1.0 / attributes[a] + 1.0 / attributes[b]
        v = v + scales["omega"] ** 2 * per_attribute
        if interactions[0]:
            v = v + scales["psi"] ** 2 * per_attribute / k
    # +-q/2 on associated / different rows: the mean q counts fully in associated -
    # different, by half in a contrast of one of them with a control
    share = {0: 0.0, 1: 0.25, 2: 1.0}[len({a, b} & {"associated", "different"})]
    if stereotypes and "gamma" in scales and share:
        v = v + share * scales["gamma"] ** 2 / stereotypes
        if interactions[0] and "phi" in scales:  # its deviations per corpus sample
            v = v + share * scales["phi"] ** 2 / (stereotypes * k)
    v = v + s[:, ia] ** 2 / (rows_per_embedding[a] * k) \
        + s[:, ib] ** 2 / (rows_per_embedding[b] * k)

    def own(x, c):  # the vs-none scale of connection c (none has none)
        return x[:, CONNECTIONS.index(c)] ** 2 if c != "none" else 0.0

    sample = own(scales["kappa"], a) + own(scales["kappa"], b) if levels[0] else 0.0
    run = own(scales["lambda"], a) + own(scales["lambda"], b) if levels[1] else 0.0
    v = v + (sample + run) / k
    if kind == "bootstrap":
        v = v + sample
    return v


@dataclass
class EmbeddingsDesign:
    """Assurance of each verdict contrast per number of embeddings.

    Attributes
    ----------
    frame : DataFrame
        ``embeddings, contrast, assurance, mc_se, sd`` (sd: the mean posterior sd of the
        contrast expected with that many embeddings).
    check : DataFrame
        Per contrast the expected sd at the pilot's K and the fit's posterior sd.
    kind, pilot_embeddings, ci_prob, target
    """

    frame: pd.DataFrame
    check: pd.DataFrame
    kind: str
    pilot_embeddings: int
    ci_prob: float
    target: float

    def needed(self) -> dict:
        """Return the fewest embeddings reaching the target, per contrast (None: none)."""
        out = {}
        for c, rows in self.frame.groupby("contrast", sort=False):
            ok = rows.loc[rows["assurance"] >= self.target, "embeddings"]
            out[c] = int(ok.min()) if len(ok) else None
        return out

    def to_frame(self) -> pd.DataFrame:
        """Return the assurance table."""
        return self.frame.copy()

    def to_dict(self) -> dict:
        """Plain JSON data."""
        return {"kind": self.kind, "pilot_embeddings": self.pilot_embeddings,
                "ci_prob": self.ci_prob, "target": self.target, "needed": self.needed(),
                "assurance": to_plain(self.frame), "check": to_plain(self.check),
                "method": "plug-in Normal approximation from the pilot's posterior draws "
                          "(bayesbias.studies.embeddings)"}

    def plot(self, path=None):
        """Assurance against the number of embeddings, one line per contrast.

        Returns the figure, or writes it to `path` (.png, .svg, .pdf) and returns the path.
        """
        fig = new_figure(figsize=(6, 3.6), layout="constrained")
        ax = fig.subplots()
        for c, rows in self.frame.groupby("contrast", sort=False):
            ax.errorbar(rows["embeddings"], rows["assurance"], yerr=2 * rows["mc_se"],
                        marker="o", capsize=2, label=c)
        ax.axhline(self.target, color="k", lw=0.8, ls="--")
        ax.set_xscale("log", base=2)
        ax.set_xlabel(f"embeddings ({self.kind})")
        ax.set_ylabel(f"assurance ({self.ci_prob:.0%} interval below 0)")
        ax.set_ylim(0, 1)
        ax.legend(fontsize=8)
        return _save(fig, path) if path is not None else fig

    def __str__(self) -> str:
        wide = self.frame.pivot(index="embeddings", columns="contrast", values="assurance")
        lines = [f"assurance of each contrast's {self.ci_prob:.0%} interval lying below 0, by "
                 f"number of embeddings ({self.kind}; pilot: {self.pilot_embeddings}):",
                 wide.round(3).to_string()]
        for c, k in self.needed().items():
            lines.append(f"  `{c}`: " + (f"{k} embeddings reach {self.target:.0%}" if k
                                         else f"no count tried reaches {self.target:.0%}"))
        if self.kind == "bootstrap":
            lines.append("  bootstrap resamples: the corpus itself is one draw of the "
                         "language, so the assurance levels off; a bigger corpus or more "
                         "corpora, not more resamples, would raise it")
        elif self.kind == "seeds":
            lines.append("  seeds of one corpus: more seeds average out training noise only; "
                         "the claim stays about this corpus")
        c = self.check
        lines.append("  check at the pilot's K: expected sd " + "; ".join(
            f"`{r.contrast}` {r.expected_sd:.4f} vs fit {r.posterior_sd:.4f}"
            for r in c.itertuples()))
        return "\n".join(lines)


def embeddings_needed(fit, counts=(2, 4, 8, 16, 32), *, ci_prob: float | None = None,
                      target: float = 0.8, contrasts=CONTRASTS) -> EmbeddingsDesign:
    """Assurance of each contrast's interval lying below 0 with K embeddings, K in `counts`.

    Parameters
    ----------
    fit : Fit
        An ``embedding_level`` fit (the pilot), e.g. ``load_fit("fit.nc")``.
    counts : sequence of int
        Numbers of embeddings (each >= 2).
    ci_prob : float
        Interval probability (default the package's).
    target : float
        Assurance sought; :meth:`EmbeddingsDesign.needed` gives the fewest K reaching it.
    """
    from scipy.special import ndtr, ndtri

    if not family(fit.spec.family).EMBEDDINGS:
        raise InputDataError(f"how many embeddings a claim needs is read from an "
                             f"embedding_level fit; this one is {fit.spec.family!r}")
    counts = [int(k) for k in counts]
    if not counts or min(counts) < 2:
        raise InvalidArgumentError(f"numbers of embeddings must be 2 or more, got {counts}")
    ci_prob = defaults.ci_prob if ci_prob is None else float(ci_prob)
    cells = fit.cells
    st = embedding_level.structure(cells)
    samples = pd.DataFrame({"corpus_sample": cells.embedding_sample})
    kind = ensemble_kind(samples)
    if kind == "mixed":
        raise InputDataError("the pilot mixes bootstrap resamples with other corpus samples: "
                             "no one rule for what more embeddings give")
    post = fit.posterior
    scales = {k: _flat(post, k) for k in ("tau", "eta", "sigma", "kappa", "lambda", "omega")
              + tuple(x for x in ("psi", "xi", "gamma", "phi") if x in post)}
    n_strength = embedding_level.strength_stereotypes(cells).size if "gamma" in post else 0
    mu = _flat(post, "mu_bar")
    words = st["words"].size
    levels = (bool(st["sample_level"]), bool(st["run_level"]))
    interactions = (bool(st["attribute_sample_level"]) and "psi" in post,
                    bool(st["word_sample_level"]) and "xi" in post)
    attributes = embedding_level.attributes_per_connection(cells)
    k0 = st["embeddings"].size
    rows = {c: cells.n[:, CONNECTIONS.index(c)].sum() / k0 for c in CONNECTIONS}
    z = float(ndtri(0.5 + ci_prob / 2))
    out, check = [], []
    for c in contrasts:
        a, b = c.split(" - ")
        delta = mu[:, CONNECTIONS.index(a)] - mu[:, CONNECTIONS.index(b)]
        for k in counts:
            v = contrast_variance(scales, c, k, words=words, attributes=attributes,
                                  rows_per_embedding=rows, kind=kind, levels=levels,
                                  interactions=interactions, stereotypes=n_strength)
            p = ndtr(-delta / np.sqrt(v) - z)
            out.append({"embeddings": k, "contrast": c, "assurance": float(p.mean()),
                        "mc_se": float(p.std(ddof=1) / np.sqrt(p.size)),
                        "sd": float(np.sqrt(v).mean())})
        v0 = contrast_variance(scales, c, k0, words=words, attributes=attributes,
                               rows_per_embedding=rows, kind=kind, levels=levels,
                               interactions=interactions, stereotypes=n_strength)
        check.append({"contrast": c, "expected_sd": float(np.sqrt(v0).mean()),
                      "posterior_sd": float(delta.std(ddof=1))})
    return EmbeddingsDesign(frame=pd.DataFrame(out), check=pd.DataFrame(check), kind=kind,
                            pilot_embeddings=k0, ci_prob=ci_prob, target=float(target))
