"""The papers behind each method, data set and piece of software, for a "how to cite" block.

:func:`references` picks the entries a result used (by key); the report names them with
bayesbias itself (``CITATION.cff`` at the top of the repository).
"""

from __future__ import annotations

__all__ = ["REFERENCES", "references", "cite_bayesbias"]

#: key -> (what it is cited for, reference).
REFERENCES = {
    "bayesian": (
        "the hierarchical Bayesian model of cosine distances with control groups, the control "
        "word lists and the published distance tables",
        "Dobrzeniecka, A. & Urbaniak, R. (2024). A Bayesian approach to uncertainty in word "
        "embedding bias estimation. Computational Linguistics, 50(2)."),
    "weat": (
        "WEAT (effect size and permutation test); the WEAT 1/6/7 word lists",
        "Caliskan, A., Bryson, J. J. & Narayanan, A. (2017). Semantics derived automatically "
        "from language corpora contain human-like biases. Science, 356(6334), 183-186. "
        "doi:10.1126/science.aal4230"),
    "mac": (
        "MAC (mean average cosine distance) and its paired t-test; the religion, race and "
        "gender word lists; hard debiasing for several classes",
        "Manzini, T., Lim, Y. C., Tsvetkov, Y. & Black, A. W. (2019). Black is to criminal as "
        "Caucasian is to police: detecting and removing multiclass bias in word embeddings. "
        "NAACL-HLT 2019, 615-621. doi:10.18653/v1/N19-1062"),
    "rnd": ("RND (relative norm distance)",
            "Garg, N., Schiebinger, L., Jurafsky, D. & Zou, J. (2018). Word embeddings quantify "
            "100 years of gender and ethnic stereotypes. PNAS, 115(16), E3635-E3644. "
            "doi:10.1073/pnas.1720347115"),
    "rnsb": ("RNSB (relative negative sentiment bias)",
             "Sweeney, C. & Najafian, M. (2019). A transparent framework for evaluating "
             "unintended demographic bias in word embeddings. ACL 2019, 1662-1667."),
    "ect": ("ECT (embedding coherence test)",
            "Dev, S. & Phillips, J. (2019). Attenuating bias in word vectors. AISTATS 2019, "
            "879-887."),
    "ripa": ("RIPA (relational inner product association)",
             "Ethayarajh, K., Duvenaud, D. & Hirst, G. (2019). Understanding undesirable word "
             "embedding associations. ACL 2019, 1696-1705."),
    "bolukbasi": ("direct and indirect bias; the bias direction and hard debiasing",
                  "Bolukbasi, T., Chang, K.-W., Zou, J., Saligrama, V. & Kalai, A. (2016). Man "
                  "is to computer programmer as woman is to homemaker? Debiasing word "
                  "embeddings. NeurIPS 2016. arXiv:1607.06520"),
    "seat": ("SEAT and its template sentences",
             "May, C., Wang, A., Bordia, S., Bowman, S. R. & Rudinger, R. (2019). On measuring "
             "social biases in sentence encoders. NAACL-HLT 2019, 622-628. "
             "doi:10.18653/v1/N19-1063"),
    "glove": ("the GloVe vectors (the shipped 6B 50-d subset)",
              "Pennington, J., Socher, R. & Manning, C. D. (2014). GloVe: global vectors for "
              "word representation. EMNLP 2014, 1532-1543."),
    "loo": ("the leave-one-out (PSIS-LOO-PIT) coverage check",
            "Vehtari, A., Gelman, A. & Gabry, J. (2017). Practical Bayesian model evaluation "
            "using leave-one-out cross-validation and WAIC. Statistics and Computing, 27, "
            "1413-1432. doi:10.1007/s11222-016-9696-4"),
    "pymc": ("the model language and samplers",
             "Abril-Pla, O. et al. (2023). PyMC: a modern, and comprehensive probabilistic "
             "programming framework in Python. PeerJ Computer Science, 9, e1516. "
             "doi:10.7717/peerj-cs.1516"),
    "arviz": ("intervals and sampler diagnostics",
              "Kumar, R., Carroll, C., Hartikainen, A. & Martin, O. (2019). ArviZ a unified "
              "library for exploratory analysis of Bayesian models in Python. Journal of Open "
              "Source Software, 4(33), 1143. doi:10.21105/joss.01143"),
}


def cite_bayesbias(version: str) -> str:
    """Return the reference for bayesbias itself (the same as ``CITATION.cff``)."""
    return (f"bayesbias contributors. bayesbias: bias in NLP with honest uncertainty "
            f"(version {version}) [software]. See CITATION.cff.")


def references(keys) -> list[tuple[str, str]]:
    """Return (what it is cited for, reference) of each known key in `keys`, in order."""
    keys = set(keys)
    unknown = keys - set(REFERENCES)
    if unknown:
        raise KeyError(f"no reference for {sorted(unknown)}; known: {', '.join(REFERENCES)}")
    return [REFERENCES[k] for k in REFERENCES if k in keys]
