"""What a study measures before any model: embeddings, word lists and distance tables.

- :mod:`.embeddings`: embedding files (word2vec, fastText, GloVe, gensim), read word by word.
- :mod:`.wordlists`: word lists (protected classes, stereotypes, control groups).
- :mod:`.distances`: the long table of cosine distances, its schema (the many-embedding
  columns too) and its files.
- :mod:`.datasets`: published data shipped with the package.
- :mod:`.corpora`: seeded synthetic corpora with a planted association.
- :mod:`.training`: many word2vec embeddings of one corpus (seeds, bootstraps).
- :mod:`.ensemble`: the distance table of many embeddings (one block of rows per embedding).
- :mod:`.debias`: hard debiasing of an embedding (a new embedding to measure).
- :mod:`.interop`: bridges from other toolkits' objects (WEFE queries).

A new input (a file format, a data set, a way to make embeddings) goes here. Nothing here
imports :mod:`bayesbias.models`, :mod:`bayesbias.verdicts` or :mod:`bayesbias.report`
(``tests/test_layers.py`` keeps that rule).
"""
