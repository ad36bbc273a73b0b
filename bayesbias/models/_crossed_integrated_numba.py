"""Prototype compiled density of :mod:`.crossed_integrated` (numba; exploratory, issue 49).

The same value and gradient as :func:`.crossed_integrated.log_marginal_grad`, on the sparse
attribute x group counts (most attributes meet one group), so that one evaluation costs
O(entries x groups + groups^3) instead of O(attributes x groups^2): the per-evaluation cost a
C kernel in the style of :mod:`._native` would have. Exponential priors on the scales only.
"""

from __future__ import annotations

import numpy as np

__all__ = ["pack_sparse", "log_marginal_grad_sparse"]


def pack_sparse(data: dict) -> tuple:
    """Return the arrays the compiled density reads (CSR of ``kd`` by attribute, rates)."""
    lams = []
    for prior in data["priors"]:
        if prior.dist != "Exponential":
            raise ValueError("the prototype kernel takes Exponential scale priors")
        lams.append(float(dict(prior.params)["lam"]))
    kd = data["kd"]
    # attributes sharing (kind, rows per connection) share their diagonal precision
    key = np.column_stack([data["kind"], data["ksum"].T])
    pks, pat = np.unique(key, axis=0, return_inverse=True)
    mult = np.bincount(pat.ravel()).astype(float)
    kcount = np.bincount(data["kind"], minlength=data["nk"]).astype(float)
    ai, gi = np.nonzero(kd)
    ptr = np.zeros(kd.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(ai, minlength=kd.shape[0]), out=ptr[1:])
    # index arrays as float64 too (one flat block for the C-callable entry point)
    return (data["gc"].astype(float), data["gn"], data["gw"], data["ysum"], data["ysq"],
            ptr.astype(float), gi.astype(float), kd[ai, gi], data["ksum"], data["dsum"],
            data["ss"], data["kind"].astype(float), np.asarray(data["smap"], dtype=float),
            np.array([data["s0"], data["m0"], float(data["n_rows"])]),
            np.array(lams), int(data["ns"]), int(data["nk"]), pat.ravel().astype(float),
            pks[:, 0].astype(float), np.ascontiguousarray(pks[:, 1:].T, dtype=float), mult,
            kcount)


def _inv_logdet(m):
    """Gauss-Jordan with partial pivoting: inverse, log |det|, sign (small dense `m`)."""
    r = m.shape[0]
    a = m.copy()
    inv = np.eye(r)
    logdet = 0.0
    sign = 1.0
    for j in range(r):
        piv = j
        for i in range(j + 1, r):
            if abs(a[i, j]) > abs(a[piv, j]):
                piv = i
        if a[piv, j] == 0.0:
            return inv, -np.inf, 0.0
        if piv != j:
            sign = -sign
            for k in range(r):
                a[j, k], a[piv, k] = a[piv, k], a[j, k]
                inv[j, k], inv[piv, k] = inv[piv, k], inv[j, k]
        d = a[j, j]
        if d < 0:
            sign = -sign
        logdet += np.log(abs(d))
        for k in range(r):
            a[j, k] /= d
            inv[j, k] /= d
        for i in range(r):
            if i != j:
                f = a[i, j]
                if f != 0.0:
                    for k in range(r):
                        a[i, k] -= f * a[j, k]
                        inv[i, k] -= f * inv[j, k]
    return inv, logdet, sign


def _impl(theta, gc, gn, gw, ysum, ysq, ptr, kg, kv, ksum, dsum, ss, kind, smap, consts,
          lams, ns, nk, pat, pkind, pksum, mult, kcount):
    nc = 4  # connections (CONNECTIONS)
    ng = gc.size
    na = ptr.size - 1
    r = 2 * ng
    s0, m0, n_rows = consts[0], consts[1], consts[2]
    s02 = s0 * s0
    tau = np.exp(theta[:nc])
    sig = np.exp(theta[nc:nc + ns])
    om = np.exp(theta[nc + ns:nc + ns + nk])
    sigc = np.empty(nc)
    u = np.empty(nc)
    for c in range(nc):
        sigc[c] = sig[int(smap[c])]
        u[c] = 1.0 / (sigc[c] * sigc[c])
    p = 1.0 / (om * om)
    w2 = np.empty(ng)
    lam = np.empty(r)
    for g in range(ng):
        c = int(gc[g])
        w2[g] = 1.0 / (tau[c] ** 2 + sigc[c] ** 2 / gn[g])
        lam[g] = gw[g] * w2[g]
        lam[ng + g] = -gw[g] * u[c] / gn[g]
    npat = mult.size
    dpinv = np.empty(npat)
    logdet = -nc * np.log(s02)
    for j in range(npat):
        d = p[int(pkind[j])]
        for c in range(nc):
            d += u[c] * pksum[c, j]
        dpinv[j] = 1.0 / d
        logdet += mult[j] * np.log(d)
    dinv = np.empty(na)
    bv = np.zeros(na)
    for a in range(na):
        bb = 0.0
        for c in range(nc):
            bb += u[c] * dsum[c, a]
        for e in range(int(ptr[a]), int(ptr[a + 1])):
            g = int(kg[e])
            bb += kv[e] * w2[g] * ysum[g] / gn[g]
        bv[a] = bb
        dinv[a] = dpinv[int(pat[a])]
    bmu = np.full(nc, m0 / s02)
    cc = nc * m0 * m0 / s02
    for g in range(ng):
        bmu[int(gc[g])] += w2[g] * ysum[g]
        cc += w2[g] * ysq[g]
    for c in range(nc):
        cc += u[c] * ss[c]
    # Gm = kd' Dinv kd, kb = kd' Dinv b
    gm = np.zeros((ng, ng))
    kb = np.zeros(ng)
    for a in range(na):
        for e in range(int(ptr[a]), int(ptr[a + 1])):
            kb[int(kg[e])] += kv[e] * dinv[a] * bv[a]
            for f in range(int(ptr[a]), int(ptr[a + 1])):
                gm[int(kg[e]), int(kg[f])] += kv[e] * kv[f] * dinv[a]
    cm = np.empty((r, r))
    for g in range(ng):
        for h in range(ng):
            same = s02 if int(gc[g]) == int(gc[h]) else 0.0
            cm[g, h] = same + gm[g, h] / (gn[g] * gn[h])
            cm[g, ng + h] = gm[g, h] / gn[g]
            cm[ng + g, h] = gm[g, h] / gn[h]
            cm[ng + g, ng + h] = gm[g, h]
    mm = cm.copy()
    for j in range(r):
        mm[j, j] += 1.0 / lam[j]
    minv, ldm, sign = _inv_logdet(mm)
    sl = 1.0
    for j in range(r):
        logdet += np.log(abs(lam[j]))
        if lam[j] < 0:
            sl = -sl
    if sign * sl <= 0:
        return -np.inf, np.zeros(theta.size)
    logdet += ldm
    ytb = np.empty(r)
    for g in range(ng):
        ytb[g] = s02 * bmu[int(gc[g])] + kb[g] / gn[g]
        ytb[ng + g] = kb[g]
    t = np.zeros(r)
    for i in range(r):
        for j in range(r):
            t[i] += minv[i, j] * ytb[j]
    mmu = s02 * bmu
    for g in range(ng):
        mmu[int(gc[g])] -= s02 * t[g]
    mv = np.empty(na)
    for a in range(na):
        acc = bv[a]
        for e in range(int(ptr[a]), int(ptr[a + 1])):
            g = int(kg[e])
            acc -= kv[e] * (t[g] / gn[g] + t[ng + g])
        mv[a] = dinv[a] * acc
    quad = 0.0
    for c in range(nc):
        quad += bmu[c] * mmu[c]
    for a in range(na):
        quad += bv[a] * mv[a]
    # explicit terms and priors
    val = -0.5 * n_rows * np.log(2 * np.pi) - nc * np.log(s0)
    for k in range(nk):
        val -= kcount[k] * np.log(om[k])
    for g in range(ng):
        c = int(gc[g])
        val += gw[g] * (-(gn[g] - 1) * np.log(sigc[c]) + 0.5 * np.log(w2[g] / gn[g]))
    val += -0.5 * logdet - 0.5 * (cc - quad)
    grad = np.ones(theta.size)
    for i in range(theta.size):
        lm = lams[0] if i < nc else (lams[1] if i < nc + ns else lams[2])
        x = np.exp(theta[i])
        val += np.log(lm) - lm * x + theta[i]
        grad[i] -= lm * x
    # gradient: Q (groups x groups) for diag(P^-1) on the v block, diag(Y'P^-1 Y), Y'm
    q = np.empty((ng, ng))
    for g in range(ng):
        for h in range(ng):
            q[g, h] = (minv[g, h] / (gn[g] * gn[h]) + minv[g, ng + h] / gn[g]
                       + minv[ng + g, h] / gn[h] + minv[ng + g, ng + h])
    ell = np.empty(r)
    ym = np.zeros(r)
    for a in range(na):
        for e in range(int(ptr[a]), int(ptr[a + 1])):
            g = int(kg[e])
            ym[g] += kv[e] * mv[a] / gn[g]
            ym[ng + g] += kv[e] * mv[a]
    for g in range(ng):
        ym[g] += mmu[int(gc[g])]
    for j in range(r):
        # diag(C - C M^-1 C) with C = M - diag(1/lam): 1/lam - (M^-1)_jj / lam^2
        acc = 1.0 / lam[j] - minv[j, j] / lam[j] ** 2
        ell[j] = -0.5 * (acc + ym[j] ** 2)
    d_p = np.zeros(nk)
    d_u = np.zeros(nc)
    for a in range(na):
        quadq = 0.0
        for e in range(int(ptr[a]), int(ptr[a + 1])):
            for f in range(int(ptr[a]), int(ptr[a + 1])):
                quadq += kv[e] * kv[f] * q[int(kg[e]), int(kg[f])]
        h = -0.5 * (dinv[a] - dinv[a] * dinv[a] * quadq + mv[a] * mv[a])
        d_p[int(kind[a])] += h
        for c in range(nc):
            d_u[c] += ksum[c, a] * h + dsum[c, a] * mv[a]
    for c in range(nc):
        d_u[c] -= 0.5 * ss[c]
    for g in range(ng):
        d_u[int(gc[g])] += ell[ng + g] * (-gw[g] / gn[g])
    for g in range(ng):
        c = int(gc[g])
        dw = ell[g] * gw[g] - 0.5 * ysq[g] + ysum[g] * ym[g] + 0.5 * gw[g] / w2[g]
        grad[c] += dw * (-2.0 * tau[c] ** 2 * w2[g] ** 2)
        grad[nc + int(smap[c])] += (dw * (-2.0 * sigc[c] ** 2 * w2[g] ** 2 / gn[g])
                                    - gw[g] * (gn[g] - 1))
    for c in range(nc):
        grad[nc + int(smap[c])] += d_u[c] * (-2.0 * u[c])
    for k in range(nk):
        grad[nc + ns + k] += d_p[k] * (-2.0 * p[k])
    for k in range(nk):
        grad[nc + ns + k] -= kcount[k]
    return val, grad


def _impl_schur(theta, gc, gn, gw, ysum, ysq, ptr, kg, kv, ksum, dsum, ss, kind, smap,
                consts, lams, ns, nk, pat, pkind, pksum, mult, kcount):
    """:func:`.crossed_integrated.log_marginal_schur_grad` on the sparse counts (same args)."""
    nc = 4  # connections (CONNECTIONS)
    ng = gc.size
    na = ptr.size - 1
    s0, m0, n_rows = consts[0], consts[1], consts[2]
    s02 = s0 * s0
    tau = np.exp(theta[:nc])
    sig = np.exp(theta[nc:nc + ns])
    om = np.exp(theta[nc + ns:nc + ns + nk])
    sigc = np.empty(nc)
    u = np.empty(nc)
    for c in range(nc):
        sigc[c] = sig[int(smap[c])]
        u[c] = 1.0 / (sigc[c] * sigc[c])
    p = 1.0 / (om * om)
    w2 = np.empty(ng)
    xg = np.empty(ng)
    cg = np.empty(ng)
    rc = np.empty(ng)
    fg = np.empty(ng)
    a4 = np.full(nc, 1.0 / s02)
    bmu = np.full(nc, m0 / s02)
    cc = nc * m0 * m0 / s02
    for g in range(ng):
        c = int(gc[g])
        w2[g] = 1.0 / (tau[c] ** 2 + sigc[c] ** 2 / gn[g])
        xg[g] = tau[c] ** 2 * u[c]
        cg[g] = gw[g] * u[c] * xg[g] / (1.0 + gn[g] * xg[g])
        rc[g] = np.sqrt(cg[g])
        fg[g] = gw[g] * w2[g] / gn[g]
        a4[c] += gw[g] * w2[g]
        bmu[c] += w2[g] * ysum[g]
        cc += w2[g] * ysq[g]
    for c in range(nc):
        cc += u[c] * ss[c]
    npat = mult.size
    dpinv = np.empty(npat)
    logdet = 0.0  # log det P = log det P_vv + log det T (T holds mu_bar's prior)
    for j in range(npat):
        d = p[int(pkind[j])]
        for c in range(nc):
            d += u[c] * pksum[c, j]
        dpinv[j] = 1.0 / d
        logdet += mult[j] * np.log(d)
    dinv = np.empty(na)
    bv = np.empty(na)
    gm = np.zeros((ng, ng))
    kb = np.zeros(ng)
    for a in range(na):
        bb = 0.0
        for c in range(nc):
            bb += u[c] * dsum[c, a]
        for e in range(int(ptr[a]), int(ptr[a + 1])):
            g = int(kg[e])
            bb += kv[e] * w2[g] * ysum[g] / gn[g]
        bv[a] = bb
        di = dpinv[int(pat[a])]
        dinv[a] = di
        for e in range(int(ptr[a]), int(ptr[a + 1])):
            ge = int(kg[e])
            kb[ge] += kv[e] * di * bb
            for f in range(int(ptr[a]), int(ptr[a + 1])):
                gm[ge, int(kg[f])] += kv[e] * kv[f] * di
    # S = I - rc Gm rc: Cholesky, inverse, rg = rc S^-1 rc
    el = np.zeros((ng, ng))
    for i in range(ng):
        for j in range(i + 1):
            acc = (1.0 if i == j else 0.0) - rc[i] * gm[i, j] * rc[j]
            for k in range(j):
                acc -= el[i, k] * el[j, k]
            if i == j:
                if acc <= 0.0:
                    return -np.inf, np.zeros(theta.size)
                el[i, i] = np.sqrt(acc)
                logdet += np.log(acc)
            else:
                el[i, j] = acc / el[j, j]
    linv = np.zeros((ng, ng))
    for j in range(ng):
        linv[j, j] = 1.0 / el[j, j]
        for i in range(j + 1, ng):
            acc = 0.0
            for k in range(j, i):
                acc -= el[i, k] * linv[k, j]
            linv[i, j] = acc / el[i, i]
    rg = np.empty((ng, ng))
    for i in range(ng):
        for j in range(ng):
            acc = 0.0
            for k in range(max(i, j), ng):
                acc += linv[k, i] * linv[k, j]
            rg[i, j] = rc[i] * acc * rc[j]
    # W = F + rg Gm F (groups x 4); K'tb = Gm W; K'tv = kb + Gm rg kb
    gmf = np.zeros((ng, nc))
    for g in range(ng):
        for h in range(ng):
            gmf[g, int(gc[h])] += gm[g, h] * fg[h]
    wm = np.zeros((ng, nc))
    rkb = np.zeros(ng)
    for g in range(ng):
        wm[g, int(gc[g])] += fg[g]
        for h in range(ng):
            rkb[g] += rg[g, h] * kb[h]
            for c in range(nc):
                wm[g, c] += rg[g, h] * gmf[h, c]
    ktb = np.zeros((ng, nc))
    ktv = kb.copy()
    for g in range(ng):
        for h in range(ng):
            ktv[g] += gm[g, h] * rkb[h]
            for c in range(nc):
                ktb[g, c] += gm[g, h] * wm[h, c]
    # Schur complement T = A4 - F'K'tb (4 x 4), r = bmu - F'K'tv
    tm = np.zeros((nc, nc))
    rr = bmu.copy()
    for c in range(nc):
        tm[c, c] = a4[c]
    for g in range(ng):
        cgi = int(gc[g])
        rr[cgi] -= fg[g] * ktv[g]
        for c in range(nc):
            tm[cgi, c] -= fg[g] * ktb[g, c]
    for i in range(nc):  # symmetrise (rounding)
        for j in range(i):
            tm[i, j] = tm[j, i] = 0.5 * (tm[i, j] + tm[j, i])
    tinv, ldt, sgn = _inv_logdet(tm)
    if sgn <= 0:
        return -np.inf, np.zeros(theta.size)
    logdet += ldt
    m_mu = tinv @ rr
    # m_v[a] = dinv_a (bv_a + K_a z), z = rg kb - F m_mu - rg Gm F m_mu = rkb - W m_mu
    z = rkb.copy()
    for g in range(ng):
        for c in range(nc):
            z[g] -= wm[g, c] * m_mu[c]
    m_v = np.empty(na)
    km = np.zeros(ng)
    quad = 0.0
    for c in range(nc):
        quad += bmu[c] * m_mu[c]
    for a in range(na):
        acc = bv[a]
        for e in range(int(ptr[a]), int(ptr[a + 1])):
            acc += kv[e] * z[int(kg[e])]
        m_v[a] = dinv[a] * acc
        quad += bv[a] * m_v[a]
        for e in range(int(ptr[a]), int(ptr[a + 1])):
            km[int(kg[e])] += kv[e] * m_v[a]
    val = -0.5 * n_rows * np.log(2 * np.pi) - nc * np.log(s0)
    for k in range(nk):
        val -= kcount[k] * np.log(om[k])
    for g in range(ng):
        c = int(gc[g])
        val += gw[g] * (-(gn[g] - 1) * np.log(sigc[c]) + 0.5 * np.log(w2[g] / gn[g]))
    val += -0.5 * logdet - 0.5 * (cc - quad)
    grad = np.ones(theta.size)
    for i in range(theta.size):
        lm = lams[0] if i < nc else (lams[1] if i < nc + ns else lams[2])
        x = np.exp(theta[i])
        val += np.log(lm) - lm * x + theta[i]
        grad[i] -= lm * x
    # Q = rg + W T^-1 W' (diag of Sigma_vv through rows of K)
    wt = wm @ tinv
    q = rg.copy()
    for g in range(ng):
        for h in range(ng):
            for c in range(nc):
                q[g, h] += wt[g, c] * wm[h, c]
    d_p = np.zeros(nk)
    d_u = np.zeros(nc)
    for a in range(na):
        quadq = 0.0
        for e in range(int(ptr[a]), int(ptr[a + 1])):
            for f in range(int(ptr[a]), int(ptr[a + 1])):
                quadq += kv[e] * kv[f] * q[int(kg[e]), int(kg[f])]
        h = -0.5 * (dinv[a] + dinv[a] * dinv[a] * quadq + m_v[a] * m_v[a])
        d_p[int(kind[a])] += h
        for c in range(nc):
            d_u[c] += ksum[c, a] * h + dsum[c, a] * m_v[a]
    for c in range(nc):
        d_u[c] -= 0.5 * ss[c]
    # per group: K'Sigma_vv K diagonal, K'Sigma_vm = -(ktb T^-1)
    grg = gm @ rg
    kt = ktb @ tinv
    for g in range(ng):
        c = int(gc[g])
        kvk = gm[g, g]
        for h in range(ng):
            kvk += grg[g, h] * gm[h, g]
        for k in range(nc):
            kvk += kt[g, k] * ktb[g, k]
        d_c = 0.5 * (kvk + km[g] ** 2)
        d_f = kt[g, c] - m_mu[c] * km[g]
        h4 = -0.5 * (tinv[c, c] + m_mu[c] ** 2)
        dw = (gw[g] * h4 + d_f * gw[g] / gn[g] + ysum[g] * (m_mu[c] + km[g] / gn[g])
              - 0.5 * ysq[g] + 0.5 * gw[g] / w2[g])
        x1 = 1.0 + gn[g] * xg[g]
        dc_dlt = gw[g] * u[c] * 2.0 * xg[g] / (x1 * x1)
        dc_dls = -2.0 * gw[g] * u[c] * xg[g] / x1 - 2.0 * gw[g] * u[c] * xg[g] / (x1 * x1)
        grad[c] += dw * (-2.0 * tau[c] ** 2 * w2[g] ** 2) + d_c * dc_dlt
        grad[nc + int(smap[c])] += (dw * (-2.0 * sigc[c] ** 2 * w2[g] ** 2 / gn[g])
                                    + d_c * dc_dls - gw[g] * (gn[g] - 1))
    for c in range(nc):
        grad[nc + int(smap[c])] += d_u[c] * (-2.0 * u[c])
    for k in range(nk):
        grad[nc + ns + k] += d_p[k] * (-2.0 * p[k]) - kcount[k]
    return val, grad


def pack_types(data: dict, types: dict) -> tuple:
    """Return the arrays :func:`_impl_types` reads (index arrays as float64)."""
    lams = []
    for prior in data["priors"]:
        if prior.dist != "Exponential":
            raise ValueError("the prototype kernel takes Exponential scale priors")
        lams.append(float(dict(prior.params)["lam"]))
    return (data["gc"].astype(float), data["gn"], data["gw"], data["ysum"], data["ysq"],
            data["ss"], np.asarray(data["smap"], dtype=float),
            np.array([data["s0"], data["m0"], float(data["n_rows"])]), np.array(lams),
            int(data["ns"]), int(data["nk"]), types["count"], types["kind"].astype(float),
            np.ascontiguousarray(types["ksum"], dtype=float),
            np.ascontiguousarray(types["k"], dtype=float), types["d1"],
            np.ascontiguousarray(types["d2"].reshape(-1, 16)))


def _chol_inv(a):
    """Cholesky of a small positive-definite `a`: (inverse, log det), or log det -inf."""
    n = a.shape[0]
    el = np.zeros((n, n))
    logdet = 0.0
    for i in range(n):
        for j in range(i + 1):
            acc = a[i, j]
            for k in range(j):
                acc -= el[i, k] * el[j, k]
            if i == j:
                if acc <= 0.0:
                    return el, -np.inf
                el[i, i] = np.sqrt(acc)
                logdet += np.log(acc)
            else:
                el[i, j] = acc / el[j, j]
    linv = np.zeros((n, n))
    for j in range(n):
        linv[j, j] = 1.0 / el[j, j]
        for i in range(j + 1, n):
            acc = 0.0
            for k in range(j, i):
                acc -= el[i, k] * linv[k, j]
            linv[i, j] = acc / el[i, i]
    inv = np.empty((n, n))
    for i in range(n):
        for j in range(i + 1):
            acc = 0.0
            for k in range(i, n):
                acc += linv[k, i] * linv[k, j]
            inv[i, j] = acc
            inv[j, i] = acc
    return inv, logdet


def _impl_types(theta, gc, gn, gw, ysum, ysq, ss, smap, consts, lams, ns, nk, tn, tkind,
                tksum, tk, d1, d2):
    """:func:`.crossed_integrated.log_marginal_types_grad` compiled (same formulas).

    Returns the value, the gradient, and mu_bar's conditional mean and covariance.
    """
    nc = 4  # connections (CONNECTIONS)
    ng = gc.size
    nt = tn.size
    s0, m0, n_rows = consts[0], consts[1], consts[2]
    s02 = s0 * s0
    tau = np.exp(theta[:nc])
    sig = np.exp(theta[nc:nc + ns])
    om = np.exp(theta[nc + ns:nc + ns + nk])
    sigc = np.empty(nc)
    u = np.empty(nc)
    for c in range(nc):
        sigc[c] = sig[int(smap[c])]
        u[c] = 1.0 / (sigc[c] * sigc[c])
    p = 1.0 / (om * om)
    w2 = np.empty(ng)
    xg = np.empty(ng)
    rc = np.empty(ng)
    fg = np.empty(ng)
    a4 = np.full(nc, 1.0 / s02)
    bmu = np.full(nc, m0 / s02)
    cc = nc * m0 * m0 / s02
    val = -0.5 * n_rows * np.log(2 * np.pi) - nc * np.log(s0)
    for g in range(ng):
        c = int(gc[g])
        w2[g] = 1.0 / (tau[c] ** 2 + sigc[c] ** 2 / gn[g])
        xg[g] = tau[c] ** 2 * u[c]
        rc[g] = np.sqrt(gw[g] * u[c] * xg[g] / (1.0 + gn[g] * xg[g]))
        fg[g] = gw[g] * w2[g] / gn[g]
        a4[c] += gw[g] * w2[g]
        bmu[c] += w2[g] * ysum[g]
        cc += w2[g] * ysq[g]
        val += gw[g] * (-(gn[g] - 1) * np.log(sigc[c]) + 0.5 * np.log(w2[g] / gn[g]))
    for c in range(nc):
        cc += u[c] * ss[c]
    # per type
    dinv = np.empty(nt)
    beta = np.empty(nt)
    b1 = np.empty(nt)
    b2 = np.empty(nt)
    du2 = np.empty((nt, nc))  # d2 u
    logdet = 0.0
    gm = np.zeros((ng, ng))
    kb = np.zeros(ng)
    for t in range(nt):
        d = p[int(tkind[t])]
        for c in range(nc):
            d += tksum[t, c] * u[c]
        dinv[t] = 1.0 / d
        logdet += tn[t] * np.log(d)
        val -= tn[t] * np.log(om[int(tkind[t])])
        bt = 0.0
        for g in range(ng):
            bt += tk[t, g] * w2[g] * ysum[g] / gn[g]
        beta[t] = bt
        du = 0.0
        q2 = 0.0
        for i in range(nc):
            du += d1[t, i] * u[i]
            acc = 0.0
            for j in range(nc):
                acc += d2[t, i * nc + j] * u[j]
            du2[t, i] = acc
            q2 += u[i] * acc
        b1[t] = du + tn[t] * bt
        b2[t] = q2 + 2 * bt * du + tn[t] * bt * bt
        for g in range(ng):
            if tk[t, g] != 0.0:
                kb[g] += tk[t, g] * dinv[t] * b1[t]
                for h in range(ng):
                    gm[g, h] += tn[t] * dinv[t] * tk[t, g] * tk[t, h]
    sm_ = np.empty((ng, ng))
    for i in range(ng):
        for j in range(ng):
            sm_[i, j] = (1.0 if i == j else 0.0) - rc[i] * gm[i, j] * rc[j]
    sinv, lds = _chol_inv(sm_)
    if not np.isfinite(lds):
        return -np.inf, np.zeros(theta.size), np.zeros(nc), np.zeros((nc, nc))
    logdet += lds
    rg = np.empty((ng, ng))
    for i in range(ng):
        for j in range(ng):
            rg[i, j] = rc[i] * sinv[i, j] * rc[j]
    gmf = np.zeros((ng, nc))
    for g in range(ng):
        for h in range(ng):
            gmf[g, int(gc[h])] += gm[g, h] * fg[h]
    wm = np.zeros((ng, nc))
    rkb = np.zeros(ng)
    for g in range(ng):
        wm[g, int(gc[g])] += fg[g]
        for h in range(ng):
            rkb[g] += rg[g, h] * kb[h]
            for c in range(nc):
                wm[g, c] += rg[g, h] * gmf[h, c]
    ktb = np.zeros((ng, nc))
    ktv = kb.copy()
    grg = np.zeros((ng, ng))
    for g in range(ng):
        for h in range(ng):
            ktv[g] += gm[g, h] * rkb[h]
            for c in range(nc):
                ktb[g, c] += gm[g, h] * wm[h, c]
            for k in range(ng):
                grg[g, h] += gm[g, k] * rg[k, h]
    tm = np.zeros((nc, nc))
    rr = bmu.copy()
    for c in range(nc):
        tm[c, c] = a4[c]
    for g in range(ng):
        cgi = int(gc[g])
        rr[cgi] -= fg[g] * ktv[g]
        for c in range(nc):
            tm[cgi, c] -= fg[g] * ktb[g, c]
    for i in range(nc):
        for j in range(i):
            tm[i, j] = tm[j, i] = 0.5 * (tm[i, j] + tm[j, i])
    tinv, ldt = _chol_inv(tm)
    if not np.isfinite(ldt):
        return -np.inf, np.zeros(theta.size), np.zeros(nc), np.zeros((nc, nc))
    logdet += ldt
    m_mu = np.zeros(nc)
    quad = 0.0
    for i in range(nc):
        for j in range(nc):
            m_mu[i] += tinv[i, j] * rr[j]
    for c in range(nc):
        quad += bmu[c] * m_mu[c]
    z = rkb.copy()
    for g in range(ng):
        for c in range(nc):
            z[g] -= wm[g, c] * m_mu[c]
    wt = np.zeros((ng, nc))
    for g in range(ng):
        for c in range(nc):
            for k in range(nc):
                wt[g, c] += wm[g, k] * tinv[k, c]
    q = rg.copy()
    for g in range(ng):
        for h in range(ng):
            for c in range(nc):
                q[g, h] += wt[g, c] * wm[h, c]
    km = np.zeros(ng)
    d_p = np.zeros(nk)
    d_u = np.zeros(nc)
    for t in range(nt):
        kz = 0.0
        kqk = 0.0
        for g in range(ng):
            if tk[t, g] != 0.0:
                kz += tk[t, g] * z[g]
                for h in range(ng):
                    kqk += tk[t, g] * q[g, h] * tk[t, h]
        quad += dinv[t] * (b2[t] + kz * b1[t])
        sm = dinv[t] * (b1[t] + tn[t] * kz)
        sm2 = dinv[t] ** 2 * (b2[t] + 2 * kz * b1[t] + tn[t] * kz * kz)
        hs = -0.5 * (tn[t] * (dinv[t] + dinv[t] ** 2 * kqk) + sm2)
        d_p[int(tkind[t])] += hs
        for c in range(nc):
            d_u[c] += tksum[t, c] * hs + dinv[t] * (du2[t, c] + (beta[t] + kz) * d1[t, c])
        for g in range(ng):
            km[g] += tk[t, g] * sm
    val += -0.5 * logdet - 0.5 * (cc - quad)
    grad = np.ones(theta.size)
    for i in range(theta.size):
        lm = lams[0] if i < nc else (lams[1] if i < nc + ns else lams[2])
        x = np.exp(theta[i])
        val += np.log(lm) - lm * x + theta[i]
        grad[i] -= lm * x
    for c in range(nc):
        d_u[c] -= 0.5 * ss[c]
    kt_ = np.zeros(nc)
    for g in range(ng):
        c = int(gc[g])
        kvk = gm[g, g]
        for h in range(ng):
            kvk += grg[g, h] * gm[h, g]
        for k in range(nc):
            kt_[k] = 0.0
            for j in range(nc):
                kt_[k] += ktb[g, j] * tinv[j, k]
        for k in range(nc):
            kvk += kt_[k] * ktb[g, k]
        ksv = kt_[c]
        d_c = 0.5 * (kvk + km[g] ** 2)
        d_f = ksv - m_mu[c] * km[g]
        h4 = -0.5 * (tinv[c, c] + m_mu[c] ** 2)
        dw = (gw[g] * h4 + d_f * gw[g] / gn[g] + ysum[g] * (m_mu[c] + km[g] / gn[g])
              - 0.5 * ysq[g] + 0.5 * gw[g] / w2[g])
        x1 = 1.0 + gn[g] * xg[g]
        dc_dlt = gw[g] * u[c] * 2.0 * xg[g] / (x1 * x1)
        dc_dls = -2.0 * gw[g] * u[c] * xg[g] / x1 - 2.0 * gw[g] * u[c] * xg[g] / (x1 * x1)
        grad[c] += dw * (-2.0 * tau[c] ** 2 * w2[g] ** 2) + d_c * dc_dlt
        grad[nc + int(smap[c])] += (dw * (-2.0 * sigc[c] ** 2 * w2[g] ** 2 / gn[g])
                                    + d_c * dc_dls - gw[g] * (gn[g] - 1))
    for c in range(nc):
        grad[nc + int(smap[c])] += d_u[c] * (-2.0 * u[c])
    for k in range(nk):
        grad[nc + ns + k] += d_p[k] * (-2.0 * p[k])
    for t in range(nt):
        grad[nc + ns + int(tkind[t])] -= tn[t]
    return val, grad, m_mu, tinv


def pack_types_flat(packed: tuple) -> np.ndarray:
    """One float64 block of :func:`pack_types`'s arrays: header ``[length, ng, nt, ns, nk]``."""
    (gc, gn, gw, ysum, ysq, ss, smap, consts, lams, ns, nk, tn, tkind, tksum, tk, d1,
     d2) = packed
    body = np.concatenate([gc, gn, gw, ysum, ysq, ss, smap, consts, lams, tn, tkind,
                           tksum.ravel(), tk.ravel(), d1.ravel(), d2.ravel()])
    head = [0.0, gc.size, tn.size, ns, nk]
    head[0] = len(head) + body.size
    return np.ascontiguousarray(np.concatenate([head, body]), dtype=np.float64)


def _flat_types(x, grad, lp, data):
    ng, nt, ns, nk = int(data[1]), int(data[2]), int(data[3]), int(data[4])
    o = 5
    sizes = (ng, ng, ng, ng, ng, 4, 4, 3, 3, nt, nt, 4 * nt, ng * nt, 4 * nt, 16 * nt)
    parts = []
    for sz in sizes:
        parts.append(data[o:o + sz])
        o += sz
    val, g, _, _ = _impl_types(x, parts[0], parts[1], parts[2], parts[3], parts[4], parts[5],
                         parts[6], parts[7], parts[8], ns, nk, parts[9], parts[10],
                         parts[11].reshape((nt, 4)), parts[12].reshape((nt, ng)),
                         parts[13].reshape((nt, 4)), parts[14].reshape((nt, 16)))
    lp[0] = val
    for i in range(x.size):
        grad[i] = g[i]
    return 0 if np.isfinite(val) else 1


def _mu_bar_draws(thetas, normals, gc, gn, gw, ysum, ysq, ss, smap, consts, lams, ns, nk,
                  tn, tkind, tksum, tk, d1, d2):
    """One draw of mu_bar per row of `thetas` from its conditional Normal (`normals`: N(0,1))."""
    out = np.empty((thetas.shape[0], 4))
    for s in range(thetas.shape[0]):
        _, _, m, cov = _impl_types(thetas[s], gc, gn, gw, ysum, ysq, ss, smap, consts, lams,
                                   ns, nk, tn, tkind, tksum, tk, d1, d2)
        el = np.linalg.cholesky(cov)
        out[s] = m + el @ normals[s]
    return out


def mu_bar_draws(thetas: np.ndarray, packed: tuple, seed: int = 0) -> np.ndarray:
    """mu_bar drawn from its conditional Normal at each row of `thetas` (compiled loop)."""
    _jit()
    rng = np.random.default_rng(seed)
    thetas = np.ascontiguousarray(thetas, dtype=np.float64)
    return _mu_bar_draws(thetas, rng.standard_normal((thetas.shape[0], 4)), *packed)


def _jit():
    """Compile the module's kernels with numba once (module globals become dispatchers)."""
    global _inv_logdet, _impl, _impl_schur, _flat_logp, _chol_inv, _impl_types, _flat_types
    global _mu_bar_draws
    import numba

    if not hasattr(_impl, "py_func"):
        _inv_logdet = numba.njit(_inv_logdet)
        _impl = numba.njit(_impl)
        _impl_schur = numba.njit(_impl_schur)
        _flat_logp = numba.njit(_flat_logp)
        _chol_inv = numba.njit(_chol_inv)
        _impl_types = numba.njit(_impl_types)
        _flat_types = numba.njit(_flat_types)
        _mu_bar_draws = numba.njit(_mu_bar_draws)


def log_marginal_grad_sparse(theta, packed: tuple,
                             schur: bool = False) -> tuple[float, np.ndarray]:
    """:func:`.crossed_integrated.log_marginal_grad` compiled (numba), on :func:`pack_sparse`.

    `schur`: through the rank-G Cholesky factorisation
    (:func:`.crossed_integrated.log_marginal_schur_grad`) instead of the indefinite Woodbury.
    """
    _jit()
    fn = _impl_schur if schur else _impl
    return fn(np.asarray(theta, dtype=np.float64), *packed)


def pack_flat(packed: tuple, schur: bool = False) -> np.ndarray:
    """One float64 block of :func:`pack_sparse`'s arrays: what the C-callable kernel reads.

    Header ``[length, ng, na, nnz, npat, ns, nk, schur]``, then the arrays in :func:`pack_sparse`'s
    order (``ksum``, ``dsum``, ``pksum`` row-major, 4 rows).
    """
    (gc, gn, gw, ysum, ysq, ptr, kg, kv, ksum, dsum, ss, kind, smap, consts, lams, ns, nk,
     pat, pkind, pksum, mult, kcount) = packed
    body = np.concatenate([gc, gn, gw, ysum, ysq, ptr, kg, kv, ksum.ravel(), dsum.ravel(), ss,
                           kind, smap, consts, lams, pat, pkind, pksum.ravel(), mult, kcount])
    head = [0.0, gc.size, kind.size, kg.size, mult.size, ns, nk, float(schur)]
    head[0] = len(head) + body.size
    return np.ascontiguousarray(np.concatenate([head, body]), dtype=np.float64)


def _flat_logp(x, grad, lp, data):
    h = data[:8]
    ng, na, nnz, npat, ns, nk = (int(h[1]), int(h[2]), int(h[3]), int(h[4]), int(h[5]),
                                 int(h[6]))
    o = 8
    sizes = (ng, ng, ng, ng, ng, na + 1, nnz, nnz, 4 * na, 4 * na, 4, na, 4, 3, 3, na, npat,
             4 * npat, npat, nk)
    parts = []
    for sz in sizes:
        parts.append(data[o:o + sz])
        o += sz
    args = (parts[0], parts[1], parts[2], parts[3], parts[4], parts[5], parts[6],
            parts[7], parts[8].reshape((4, na)), parts[9].reshape((4, na)), parts[10],
            parts[11], parts[12], parts[13], parts[14], ns, nk, parts[15], parts[16],
            parts[17].reshape((4, npat)), parts[18], parts[19])
    if h[7] != 0.0:
        val, g = _impl_schur(x, *args)
    else:
        val, g = _impl(x, *args)
    lp[0] = val
    for i in range(x.size):
        grad[i] = g[i]
    return 0 if np.isfinite(val) else 1


_cfuncs = None
_cfuncs_types = None


def c_entry_points_types():
    """``(logp, expand)`` C-callable entry points of the type-collapsed density.

    As :func:`c_entry_points`, on :func:`pack_types_flat`'s block.
    """
    global _cfuncs_types
    if _cfuncs_types is None:
        import numba
        from numba import types

        _jit()
        flat = _flat_types
        ptr = types.CPointer(types.float64)

        @numba.cfunc(types.int64(types.uint64, ptr, ptr, ptr, ptr))
        def logp(n, x, grad, lp, data):
            length = int(numba.carray(data, 1)[0])
            return flat(numba.carray(x, n), numba.carray(grad, n), numba.carray(lp, 1),
                        numba.carray(data, length))

        _cfuncs_types = (_entry(logp, 1), c_entry_points(0)[1])
    return _cfuncs_types


def c_entry_points(dim: int):
    """``(logp, expand)`` C-callable entry points (numba ``cfunc``), as :class:`._native.CFunc`.

    The signatures of :mod:`._native`'s kernels: ``logp(dim, x, grad, logp, data)`` and
    ``expand(dim, expanded, x, out, data)`` (``out = x``), on :func:`pack_flat`'s block.
    """
    global _cfuncs
    if _cfuncs is None:
        import numba
        from numba import types

        _jit()
        flat = _flat_logp
        ptr = types.CPointer(types.float64)

        @numba.cfunc(types.int64(types.uint64, ptr, ptr, ptr, ptr))
        def logp(n, x, grad, lp, data):
            length = int(numba.carray(data, 1)[0])
            return flat(numba.carray(x, n), numba.carray(grad, n), numba.carray(lp, 1),
                        numba.carray(data, length))

        @numba.cfunc(types.int64(types.uint64, types.uint64, ptr, ptr, ptr))
        def expand(n, m, x, out, data):
            xs, os_ = numba.carray(x, n), numba.carray(out, m)
            for i in range(n):
                os_[i] = xs[i]
            return 0

        _cfuncs = (_entry(logp, 1), _entry(expand, 2))
    return _cfuncs


class _entry:  # noqa: N801
    """A numba ``cfunc`` as :class:`._native.CFunc`: its ``address`` and ``ctypes``."""

    def __init__(self, cf, n_sizes: int):
        import ctypes

        dp = ctypes.POINTER(ctypes.c_double)
        args = [ctypes.c_uint64] * n_sizes + [dp] * (5 - n_sizes)
        self.address = cf.address
        self.ctypes = ctypes.CFUNCTYPE(ctypes.c_int64, *args)(cf.address)
        self._keep = cf
