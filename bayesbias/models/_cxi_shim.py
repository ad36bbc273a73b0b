"""TEMPORARY (lead's scratch, deleted before commit): the helper's C API, in numpy/numba."""
import numpy as np

from . import _crossed_integrated_numba as nb
from . import crossed_integrated as ci

_EXP = None


def entry_points():
    global _EXP
    logp, _ = nb.c_entry_points_types()
    if _EXP is None:
        import numba
        from numba import types
        ptr = types.CPointer(types.float64)

        @numba.cfunc(types.int64(types.uint64, types.uint64, ptr, ptr, ptr))
        def expand(n, m, x, out, data):
            xs, os_ = numba.carray(x, n), numba.carray(out, m)
            for i in range(n):
                os_[i] = np.exp(xs[i])
            return 0
        _EXP = nb._entry(expand, 2)
    return logp, _EXP


def pack_types_c(data, types=None):
    return nb.pack_types_flat(nb.pack_types(data, ci.attribute_types(data) if types is None
                                            else types))


def pack_draws_c(data):
    return data


def conditional_moments_c(thetas, data):
    flat = thetas.reshape(-1, thetas.shape[-1])
    mean = np.empty((flat.shape[0], 4))
    cov = np.empty((flat.shape[0], 4, 4))
    for i, t in enumerate(flat):
        mean[i], cov[i] = ci.conditional_mu_bar(t, data)
    lead = thetas.shape[:-1]
    return mean.reshape(lead + (4,)), cov.reshape(lead + (4, 4))


def draw_c(thetas, data, rng):
    flat = thetas.reshape(-1, thetas.shape[-1])
    x = np.array([ci.draw_gaussian(t, data, rng) for t in flat])
    lead = thetas.shape[:-1]
    return x[:, :4].reshape(lead + (4,)), x[:, 4:].reshape(lead + (-1,))
