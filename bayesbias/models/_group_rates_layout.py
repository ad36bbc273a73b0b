"""The header layout of the group-rates kernel's flat int64 buffer.

Shared by :mod:`.group_rates` (which packs the buffer) and :mod:`._group_rates_numba` (which
reads it), so that neither imports the other at module level.
"""

#: Slots of the header of :meth:`~.group_rates.Kernel.native_data` (int64 words at the
#: buffer's start): sizes, then the word offset of every array.
_HEAD = ("total", "ndim", "n_expanded", "M", "C", "T", "n_ord", "D_low", "top_cell",
         "has_terms", "NT", "off_term", "k", "n", "B", "b_off", "t_size", "t_rank", "t_coord",
         "t_order", "index", "col_order", "low_weight", "top_weight", "pri_mu", "pri_sd",
         "term_ptr", "term_k", "term_n", "pri_term", "w", "B_len", "BT", "t_fac", "F",
         "F_len")
_H = {name: i for i, name in enumerate(_HEAD)}
