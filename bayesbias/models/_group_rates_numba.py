"""The group-rates kernel compiled with numba: log-density, gradient and expansion.

Imported by :func:`bayesbias.models.group_rates._numba_logp` and ``_numba_native`` on first
use (importing numba is slow). Every function is defined at module level, so numba's disk
cache hits across processes: functions defined inside a function close over the other
dispatchers, whose pickled form (part of the cache key) differs in every process, so they
were compiled anew in each (5-13 s).

``logp(x, *Kernel.numba_args(), grad)`` returns the log-density and fills `grad`;
``c_logp(dim, x, grad, logp, data)`` and ``c_expand(dim, expanded, x, out, data)`` are the
C functions nutpie's core calls, reading the kernel from :meth:`Kernel.native_data`.
"""

import math

import numba
import numpy as np
from numba import types

from ._group_rates_layout import _H, _HEAD

_N_HEAD = len(_HEAD)
# the header's slots, as constants numba compiles in
_S_TOTAL = _H["total"]
_S_NDIM = _H["ndim"]
_S_N_EXPANDED = _H["n_expanded"]
_S_M = _H["M"]
_S_C = _H["C"]
_S_T = _H["T"]
_S_N_ORD = _H["n_ord"]
_S_D_LOW = _H["D_low"]
_S_TOP_CELL = _H["top_cell"]
_S_HAS_TERMS = _H["has_terms"]
_S_NT = _H["NT"]
_S_OFF_TERM = _H["off_term"]
_S_K = _H["k"]
_S_N = _H["n"]
_S_B = _H["B"]
_S_B_OFF = _H["b_off"]
_S_T_SIZE = _H["t_size"]
_S_T_RANK = _H["t_rank"]
_S_T_COORD = _H["t_coord"]
_S_T_ORDER = _H["t_order"]
_S_INDEX = _H["index"]
_S_COL_ORDER = _H["col_order"]
_S_LOW_WEIGHT = _H["low_weight"]
_S_TOP_WEIGHT = _H["top_weight"]
_S_PRI_MU = _H["pri_mu"]
_S_PRI_SD = _H["pri_sd"]
_S_TERM_PTR = _H["term_ptr"]
_S_TERM_K = _H["term_k"]
_S_TERM_N = _H["term_n"]
_S_PRI_TERM = _H["pri_term"]
_S_W = _H["w"]
_S_B_LEN = _H["B_len"]
_S_BT = _H["BT"]
_S_T_FAC = _H["t_fac"]
_S_F = _H["F"]
_S_F_LEN = _H["F_len"]


@numba.njit(cache=True, fastmath=False, nogil=True)
def prior(code, a, b, v):
    if code == 0:
        z = (v - a) / b
        return -0.5 * z * z, -z / b
    if code == 1:
        return -0.5 * (v / a) ** 2, -v / (a * a)
    if code == 2:
        return -math.log1p((v / a) ** 2), -2.0 * v / (a * a + v * v)
    return -a * v, -a

@numba.njit(cache=True, fastmath=False, nogil=True)
def binomial_logit(k, n, eta):
    """Return the Binomial log-likelihood of `k` of `n` at logit `eta` and its derivative."""
    if n <= 0 and k == 0:
        return 0.0, 0.0
    if eta > 0:
        soft = eta + math.log1p(math.exp(-eta))
    else:
        soft = math.log1p(math.exp(eta))
    return k * eta - n * soft, k - n * math.exp(eta - soft)


@numba.njit(cache=True, fastmath=False, nogil=True)
def logp(x, k, n, B, BT, b_off, t_size, t_rank, t_coord, t_order, index, col_order,
         low_weight, top_weight, M, n_ord, D_low, top_cell, pri_mu, pri_sd, has_terms,
         term_ptr, term_k, term_n, pri_term, off_term, t_fac, F, grad):
    C = k.shape[1]
    NT = term_k.shape[1]
    D = D_low + (C if top_cell else 0)
    T = t_size.shape[0]
    lp = 0.0
    for i in range(grad.size):
        grad[i] = 0.0
    coef = np.empty(D_low)
    g_coef = np.empty(D_low)
    max_size = 1
    for t in range(T):
        max_size = max(max_size, t_size[t])
    tab = np.empty(max_size)
    max_tmp = 1
    for t in range(T):
        if t_fac[t, 0]:
            max_tmp = max(max_tmp, t_fac[t, 3] * t_fac[t, 5])
    tmpk = np.empty(max_tmp)
    lower = np.empty(C)
    g_lower = np.empty(C)
    sdo = np.empty(max(n_ord, 1))
    # Below, a weight of 0 (non-centred, the default) skips exp(0 * log sd) = 1, and the
    # effect tables' products run along contiguous rows (B for the gradient, its
    # transpose BT for the tables) with every sum in the same order as the plain loops:
    # the same numbers to the last bit, fewer exps and vectorisable loops.
    for m in range(M):
        mu = x[m]
        off_sd = M + m * n_ord
        off_z = M + M * n_ord + m * D
        for o in range(n_ord):
            sdo[o] = math.exp(x[off_sd + o])
        for j in range(D_low):
            o = col_order[j]
            wl = low_weight[m, j]
            if wl == 0.0:
                el = x[off_z + j]
                lp += -0.5 * el * el
            else:
                ls1 = x[off_sd + o]
                el = x[off_z + j] * math.exp(-wl * ls1)
                lp += -0.5 * el * el - wl * ls1
            coef[j] = sdo[o] * el
        for c in range(C):
            lower[c] = mu
        for t in range(T):
            sz = t_size[t]
            rk = t_rank[t]
            o0 = b_off[t]
            c0 = t_coord[t]
            for i in range(sz):
                tab[i] = 0.0
            if t_fac[t, 0]:
                # a two-way table from its two zero-sum bases (Kronecker factors):
                # tab = Ba @ coef.reshape(Ra, Rb) @ Bb.T, (Ra Rb Lb + La Ra Lb) products
                # instead of La Lb Ra Rb
                oa, La, Ra, ob, Lb, Rb = (t_fac[t, 1], t_fac[t, 2], t_fac[t, 3],
                                          t_fac[t, 4], t_fac[t, 5], t_fac[t, 6])
                for ra in range(Ra):
                    for lb in range(Lb):
                        acc = 0.0
                        for rb in range(Rb):
                            acc += coef[c0 + ra * Rb + rb] * F[ob + lb * Rb + rb]
                        tmpk[ra * Lb + lb] = acc
                for la in range(La):
                    for ra in range(Ra):
                        bar = F[oa + la * Ra + ra]
                        for lb in range(Lb):
                            tab[la * Lb + lb] += bar * tmpk[ra * Lb + lb]
            else:
                for r in range(rk):
                    cr = coef[c0 + r]
                    base = o0 + r * sz
                    for i in range(sz):
                        tab[i] += BT[base + i] * cr
            for c in range(C):
                lower[c] += tab[index[t, c]]
        g_mu = 0.0
        ls = 0.0
        s = 1.0
        e = 0.0
        w = 0.0
        sw = 1.0
        if top_cell:
            ls = x[off_sd + n_ord - 1]
            s = sdo[n_ord - 1]
        for c in range(C):
            if top_cell:
                zc = x[off_z + D_low + c]
                w = top_weight[m, c]
                sw = 1.0 if w == 0.0 else math.exp(w * ls)
                e = (zc - w * lower[c]) / sw
                eta = lower[c] + s * e
                lp += -0.5 * e * e - w * ls
            else:
                eta = lower[c]
            if has_terms:
                # the cell's terms carry its likelihood: logit = eta + sd_term * u
                r = 0.0
                st = math.exp(x[off_term + m])
                o_u = off_term + M + m * NT
                for j in range(term_ptr[c], term_ptr[c + 1]):
                    u = x[o_u + j]
                    et = eta + st * u
                    lp += -0.5 * u * u
                    lp_j, rt = binomial_logit(term_k[m, j], term_n[m, j], et)
                    lp += lp_j
                    grad[o_u + j] = rt * st - u
                    grad[off_term + m] += rt * st * u
                    r += rt
            else:
                lp_c, r = binomial_logit(k[m, c], n[m, c], eta)
                lp += lp_c
            if top_cell:
                grad[off_z + D_low + c] = (r * s - e) / sw
                g_lower[c] = r * (1.0 - w * s / sw) + w * e / sw
                grad[off_sd + n_ord - 1] += r * (1.0 - w) * s * e + w * (e * e - 1.0)
            else:
                g_lower[c] = r
            g_mu += g_lower[c]
        for t in range(T):
            sz = t_size[t]
            rk = t_rank[t]
            o0 = b_off[t]
            c0 = t_coord[t]
            for i in range(sz):
                tab[i] = 0.0
            for c in range(C):
                tab[index[t, c]] += g_lower[c]
            for r in range(rk):
                g_coef[c0 + r] = 0.0
            if t_fac[t, 0]:
                oa, La, Ra, ob, Lb, Rb = (t_fac[t, 1], t_fac[t, 2], t_fac[t, 3],
                                          t_fac[t, 4], t_fac[t, 5], t_fac[t, 6])
                for i in range(Ra * Lb):
                    tmpk[i] = 0.0
                for la in range(La):
                    for ra in range(Ra):
                        bar = F[oa + la * Ra + ra]
                        for lb in range(Lb):
                            tmpk[ra * Lb + lb] += bar * tab[la * Lb + lb]
                for ra in range(Ra):
                    for lb in range(Lb):
                        t2 = tmpk[ra * Lb + lb]
                        for rb in range(Rb):
                            g_coef[c0 + ra * Rb + rb] += t2 * F[ob + lb * Rb + rb]
            else:
                for i in range(sz):
                    ti = tab[i]
                    base = o0 + i * rk
                    for r in range(rk):
                        g_coef[c0 + r] += B[base + r] * ti
        for j in range(D_low):
            o = col_order[j]
            ls1 = x[off_sd + o]
            wl = low_weight[m, j]
            swl = 1.0 if wl == 0.0 else math.exp(wl * ls1)
            el = x[off_z + j] / swl
            grad[off_z + j] = (g_coef[j] * sdo[o] - el) / swl
            grad[off_sd + o] += g_coef[j] * (1.0 - wl) * coef[j] + wl * (el * el - 1.0)
        l0, g0 = prior(int(pri_mu[0]), pri_mu[1], pri_mu[2], mu)
        lp += l0
        grad[m] = g_mu + g0
        for o in range(n_ord):
            ls2 = x[off_sd + o]
            s3 = sdo[o]
            l1, g1 = prior(int(pri_sd[o, 0]), pri_sd[o, 1], pri_sd[o, 2], s3)
            lp += l1 + ls2
            grad[off_sd + o] += g1 * s3 + 1.0
        if has_terms:
            ls4 = x[off_term + m]
            s4 = math.exp(ls4)
            l4, g4 = prior(int(pri_term[0]), pri_term[1], pri_term[2], s4)
            lp += l4 + ls4
            grad[off_term + m] += g4 * s4 + 1.0
    return lp


@numba.njit(cache=True, nogil=True)
def expand(x, B, b_off, t_size, t_rank, t_coord, t_order, index, col_order, low_weight,
           top_weight, M, C, n_ord, D_low, top_cell, has_terms, term_ptr, NT, off_term, w,
           out):
    D = D_low + (C if top_cell else 0)
    T = t_size.shape[0]
    max_size = 1
    for t in range(T):
        max_size = max(max_size, t_size[t])
    tab = np.empty(max_size)
    coef = np.empty(D_low)
    parts = np.empty((max(n_ord, 1), C))
    eta = np.empty(C)
    pos_sd = M * C
    pos_osd = pos_sd + M * n_ord
    pos_mu = pos_osd + M * n_ord
    pos_pt = pos_mu + M
    pos_st = pos_pt + M * NT
    for m in range(M):
        mu = x[m]
        off_sd = M + m * n_ord
        off_z = M + M * n_ord + m * D
        parts[:, :] = 0.0
        for j in range(D_low):
            coef[j] = math.exp((1.0 - low_weight[m, j]) * x[off_sd + col_order[j]]) \
                * x[off_z + j]
        for t in range(T):
            sz = t_size[t]
            rk = t_rank[t]
            o0 = b_off[t]
            c0 = t_coord[t]
            for i in range(sz):
                acc = 0.0
                for r in range(rk):
                    acc += B[o0 + i * rk + r] * coef[c0 + r]
                tab[i] = acc
            o = t_order[t]
            for c in range(C):
                parts[o, c] += tab[index[t, c]]
        if top_cell:
            ls = x[off_sd + n_ord - 1]
            for c in range(C):
                lower = mu
                for o in range(n_ord - 1):
                    lower += parts[o, c]
                wt = top_weight[m, c]
                parts[n_ord - 1, c] = math.exp((1.0 - wt) * ls) * (
                    x[off_z + D_low + c] - wt * lower)
        for c in range(C):
            e = mu
            for o in range(n_ord):
                e += parts[o, c]
            eta[c] = e
            out[m * C + c] = 1.0 / (1.0 + math.exp(-e))
        for o in range(n_ord):
            out[pos_sd + m * n_ord + o] = math.exp(x[off_sd + o])
            mean = 0.0
            for c in range(C):
                mean += parts[o, c] * w[m, c]
            acc = 0.0
            for c in range(C):
                d = parts[o, c] - mean
                acc += d * d * w[m, c]
            out[pos_osd + m * n_ord + o] = math.sqrt(acc)
        out[pos_mu + m] = mu
        if has_terms:
            st = math.exp(x[off_term + m])
            out[pos_st + m] = st
            for c in range(C):
                for j in range(term_ptr[c], term_ptr[c + 1]):
                    et = eta[c] + st * x[off_term + M + m * NT + j]
                    out[pos_pt + m * NT + j] = 1.0 / (1.0 + math.exp(-et))

_PTR = types.CPointer(types.double)
_SIG_LOGP = types.int64(types.uint64, _PTR, _PTR, _PTR, _PTR)
_SIG_EXPAND = types.int64(types.uint64, types.uint64, _PTR, _PTR, _PTR)

@numba.njit(cache=True, nogil=True)
def _shared_views(f, iv, hd):
    """Return the arrays both C functions read from the buffer: effect layout and weights."""
    M, C, T, D_low = hd[_S_M], hd[_S_C], hd[_S_T], hd[_S_D_LOW]
    o = hd[_S_B]
    B = f[o:o + hd[_S_B_LEN]]
    o = hd[_S_B_OFF]
    b_off = iv[o:o + T + 1]
    o = hd[_S_T_SIZE]
    t_size = iv[o:o + T]
    o = hd[_S_T_RANK]
    t_rank = iv[o:o + T]
    o = hd[_S_T_COORD]
    t_coord = iv[o:o + T]
    o = hd[_S_T_ORDER]
    t_order = iv[o:o + T]
    o = hd[_S_INDEX]
    index = iv[o:o + T * C].reshape((T, C))
    o = hd[_S_COL_ORDER]
    col_order = iv[o:o + D_low]
    o = hd[_S_LOW_WEIGHT]
    low_weight = f[o:o + M * D_low].reshape((M, D_low))
    o = hd[_S_TOP_WEIGHT]
    top_weight = f[o:o + M * C].reshape((M, C))
    o = hd[_S_TERM_PTR]
    term_ptr = iv[o:o + C + 1]
    return (B, b_off, t_size, t_rank, t_coord, t_order, index, col_order, low_weight,
            top_weight, term_ptr)


@numba.cfunc(_SIG_LOGP, cache=True, nogil=True)
def c_logp(dim, x_, grad_, lp_, data_):
    hd = numba.carray(data_, (_N_HEAD,)).view(np.int64)
    if dim != hd[_S_NDIM]:
        return -1
    total = hd[_S_TOTAL]
    f = numba.carray(data_, (total,))
    iv = f.view(np.int64)
    M, C, T = hd[_S_M], hd[_S_C], hd[_S_T]
    n_ord, D_low, NT = hd[_S_N_ORD], hd[_S_D_LOW], hd[_S_NT]
    x = numba.carray(x_, (dim,))
    grad = numba.carray(grad_, (dim,))
    o = hd[_S_K]
    k = f[o:o + M * C].reshape((M, C))
    o = hd[_S_N]
    n = f[o:o + M * C].reshape((M, C))
    o = hd[_S_BT]
    BT = f[o:o + hd[_S_B_LEN]]
    o = hd[_S_PRI_MU]
    pri_mu = f[o:o + 3]
    o = hd[_S_PRI_SD]
    pri_sd = f[o:o + 3 * n_ord].reshape((n_ord, 3))
    o = hd[_S_TERM_K]
    term_k = f[o:o + M * NT].reshape((M, NT))
    o = hd[_S_TERM_N]
    term_n = f[o:o + M * NT].reshape((M, NT))
    o = hd[_S_PRI_TERM]
    pri_term = f[o:o + 3]
    o = hd[_S_T_FAC]
    t_fac = iv[o:o + 7 * T].reshape((T, 7))
    o = hd[_S_F]
    F = f[o:o + hd[_S_F_LEN]]
    (B, b_off, t_size, t_rank, t_coord, t_order, index, col_order, low_weight, top_weight,
     term_ptr) = _shared_views(f, iv, hd)
    val = logp(x, k, n, B, BT, b_off, t_size, t_rank, t_coord, t_order, index, col_order,
               low_weight, top_weight, M, n_ord, D_low, hd[_S_TOP_CELL], pri_mu, pri_sd,
               hd[_S_HAS_TERMS], term_ptr, term_k, term_n, pri_term, hd[_S_OFF_TERM],
               t_fac, F, grad)
    lp = numba.carray(lp_, (1,))
    lp[0] = val
    for i in range(dim):
        if not math.isfinite(grad[i]):
            return 3
    if not math.isfinite(val):
        return 4
    return 0

@numba.cfunc(_SIG_EXPAND, cache=True, nogil=True)
def c_expand(dim, expanded, x_, out_, data_):
    hd = numba.carray(data_, (_N_HEAD,)).view(np.int64)
    if dim != hd[_S_NDIM] or expanded != hd[_S_N_EXPANDED]:
        return -1
    total = hd[_S_TOTAL]
    f = numba.carray(data_, (total,))
    iv = f.view(np.int64)
    M, C = hd[_S_M], hd[_S_C]
    n_ord, D_low, NT = hd[_S_N_ORD], hd[_S_D_LOW], hd[_S_NT]
    x = numba.carray(x_, (dim,))
    out = numba.carray(out_, (expanded,))
    o = hd[_S_W]
    w = f[o:o + M * C].reshape((M, C))
    (B, b_off, t_size, t_rank, t_coord, t_order, index, col_order, low_weight, top_weight,
     term_ptr) = _shared_views(f, iv, hd)
    expand(x, B, b_off, t_size, t_rank, t_coord, t_order, index, col_order, low_weight,
           top_weight, M, C, n_ord, D_low, hd[_S_TOP_CELL], hd[_S_HAS_TERMS], term_ptr,
           NT, hd[_S_OFF_TERM], w, out)
    return 0
