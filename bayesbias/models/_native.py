"""The compiled kernels: the cell-marginal log-densities and gradients, as C.

Compiled once per machine with the system C compiler, without FMA contraction or fast-math
(so the same IEEE operations run wherever it is built). The priors' part, ``prior()``, is
generated from the table in :mod:`bayesbias.models.priors`; the rest is written here.
Checked against PyMC's log density of the same models and closed forms in
``tests/test_models_likelihood.py`` (the integrated crossed kernel ``cxi_*`` against its
numpy reference in ``tests/test_crossed_integrated.py``). Why C: ``cc`` builds this file in a
fraction of a second and ``ctypes`` loads it in milliseconds, while a PyTensor graph compiles
again in every process and for every table shape (10-30 s each).

Without a working C compiler (or with ``BAYESBIAS_KERNEL=pymc``) :func:`library` returns
None and :func:`bayesbias.models.fit_model` samples the PyMC model through nutpie's public
API instead (same posterior, within Monte Carlo error; ``tests/test_models_sampling.py``).

The library is cached as ``<cache>/kernels/cellmarginal-<hash>.so`` (``$BAYESBIAS_CACHE``,
else ``$XDG_CACHE_HOME`` or ``~/.cache`` + ``bayesbias``), keyed by the source, the
compiler and its flags; it is written to a temporary file and renamed into place.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from ..config import cache_dir as _cache_dir
from .priors import c_source, kernel_row

__all__ = ["source", "FLAGS", "library", "cache_dir", "entry_points", "prior_logp",
           "pack_cells", "pack_additive"]

#: No fast-math and no FMA contraction: the same IEEE operations wherever it is built.
FLAGS = ("-O2", "-fPIC", "-shared", "-ffp-contract=off", "-fno-fast-math")

_TEMPLATE = r"""
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

static const double LOG_2PI = 1.8378770664093453;  /* math.log(2 * math.pi) */
static const double PI = 3.141592653589793;

/*@PRIOR@*/
/* the generated prior() itself, for the tests */
double bb_prior(int64_t code, double p1, double p2, double p3, double v, double *g) {
    return prior((int)code, p1, p2, p3, v, g);
}

/* ---- hierarchical-type families (layout of pack_cells) ---- */
/* the group-level means m, between-cell sds t and residual sds s of the four connections
 * from the sampled parameters x (v: the parameters on their natural scale) */
static void hier_params(int64_t k, const double *x, const double *priors, const double *maps,
                        const double *offsets, double *v, double *m, double *t, double *s) {
    int64_t j, c;
    for (j = 0; j < k; j++) v[j] = priors[5 * j + 1] > 0.5 ? exp(x[j]) : x[j];
    for (c = 0; c < 4; c++) {
        m[c] = offsets[c];
        t[c] = offsets[4 + c];
        s[c] = 0.0;
        for (j = 0; j < k; j++) {
            m[c] += maps[c * k + j] * v[j];
            t[c] += maps[4 * k + c * k + j] * v[j];
            s[c] += maps[8 * k + c * k + j] * v[j];
        }
    }
}

/* add the priors and log-Jacobians to the likelihood lp, and map the gradients with respect
 * to (m, t, s) back to x */
static int64_t hier_finish(int64_t k, const double *x, const double *priors,
                           const double *maps, const double *v, const double *gm,
                           const double *gt, const double *gs, double lp, double *out,
                           double *logp_) {
    int64_t j, c;
    for (j = 0; j < k; j++) {
        double gv = 0.0, pl, pg;
        for (c = 0; c < 4; c++)
            gv += maps[c * k + j] * gm[c] + maps[4 * k + c * k + j] * gt[c]
                  + maps[8 * k + c * k + j] * gs[c];
        pl = prior((int)priors[5 * j], priors[5 * j + 2], priors[5 * j + 3], priors[5 * j + 4],
                   v[j], &pg);
        lp += pl;
        gv += pg;
        if (priors[5 * j + 1] > 0.5) {
            lp += x[j];
            out[j] = gv * v[j] + 1.0;
        } else {
            out[j] = gv;
        }
        if (!isfinite(out[j])) return 3;
    }
    logp_[0] = lp;
    if (!isfinite(lp)) return 4;
    return 0;
}

int64_t cm_logp(uint64_t dim, const double *x, double *out, double *logp_, const double *data) {
    int64_t k = (int64_t)data[0], ncell = (int64_t)data[1], i;
    const double *priors = data + 2, *maps = priors + 5 * k, *offsets = maps + 12 * k;
    const double *cells = offsets + 8;
    double v[64], m[4], t[4], s[4], gm[4] = {0, 0, 0, 0}, gt[4] = {0, 0, 0, 0};
    double gs[4] = {0, 0, 0, 0}, lp = 0.0;
    if ((int64_t)dim != k || k > 64) return -1;
    hier_params(k, x, priors, maps, offsets, v, m, t, s);
    for (i = 0; i < ncell; i++) {
        int64_t cc = (int64_t)cells[i];
        double n = cells[ncell + i], ybar = cells[2 * ncell + i], ss = cells[3 * ncell + i];
        double sc = s[cc], tc = t[cc];
        double var = tc * tc + sc * sc / n;
        double r = ybar - m[cc];
        double dv;
        lp += (-0.5 * n * LOG_2PI - (n - 1.0) * log(sc) - ss / (2.0 * sc * sc)
               - 0.5 * log(n) - 0.5 * log(var) - r * r / (2.0 * var));
        dv = -0.5 / var + 0.5 * r * r / (var * var);
        gm[cc] += r / var;
        gt[cc] += dv * 2.0 * tc;
        gs[cc] += -(n - 1.0) / sc + ss / (sc * sc * sc) + dv * 2.0 * sc / n;
    }
    return hier_finish(k, x, priors, maps, v, gm, gt, gs, lp, out, logp_);
}

/* ---- the same density on groups of cells that share (connection, n) (pack_cells layout,
 * six rows: connection, n, cells k, mean of the cell means c, sum of squares of the cell
 * means about c Q, summed within-cell sums of squares SS): sum over the group's cells of
 * the cell terms, with sum_i (ybar_i - M)^2 = Q + k (c - M)^2 ---- */
int64_t cmg_logp(uint64_t dim, const double *x, double *out, double *logp_, const double *data) {
    int64_t k = (int64_t)data[0], ng = (int64_t)data[1], i;
    const double *priors = data + 2, *maps = priors + 5 * k, *offsets = maps + 12 * k;
    const double *g = offsets + 8;
    double v[64], m[4], t[4], s[4], gm[4] = {0, 0, 0, 0}, gt[4] = {0, 0, 0, 0};
    double gs[4] = {0, 0, 0, 0}, lp = 0.0;
    if ((int64_t)dim != k || k > 64) return -1;
    hier_params(k, x, priors, maps, offsets, v, m, t, s);
    for (i = 0; i < ng; i++) {
        int64_t cc = (int64_t)g[i];
        double n = g[ng + i], w = g[2 * ng + i], cbar = g[3 * ng + i], q = g[4 * ng + i];
        double ss = g[5 * ng + i];
        double sc = s[cc], tc = t[cc];
        double var = tc * tc + sc * sc / n;
        double r = cbar - m[cc];
        double dev = q + w * r * r, dv;
        lp += (w * (-0.5 * n * LOG_2PI - (n - 1.0) * log(sc) - 0.5 * log(n) - 0.5 * log(var))
               - ss / (2.0 * sc * sc) - dev / (2.0 * var));
        dv = -0.5 * w / var + 0.5 * dev / (var * var);
        gm[cc] += w * r / var;
        gt[cc] += dv * 2.0 * tc;
        gs[cc] += -w * (n - 1.0) / sc + ss / (sc * sc * sc) + dv * 2.0 * sc / n;
    }
    return hier_finish(k, x, priors, maps, v, gm, gt, gs, lp, out, logp_);
}

int64_t cm_expand(uint64_t dim, uint64_t expanded, const double *x, double *out,
                  const double *data) {
    int64_t k = (int64_t)data[0], j;
    const double *priors = data + 2;
    if ((int64_t)dim != k || (int64_t)expanded != k) return -1;
    for (j = 0; j < k; j++) out[j] = priors[5 * j + 1] > 0.5 ? exp(x[j]) : x[j];
    return 0;
}

/* ---- the additive family (layout of pack_additive) ---- */
int64_t add_logp(uint64_t dim, const double *x, double *out, double *logp_,
                 const double *data) {
    int64_t k = (int64_t)data[0], ncell = (int64_t)data[1], n_u = (int64_t)data[2];
    int64_t nc = (int64_t)data[3], i, u, c, d, j;
    const double *priors = data + 4, *smap = priors + 5 * k, *mu0 = smap + nc;
    const double *s0 = mu0 + n_u + nc, *cells = s0 + n_u + nc;
    double v[4], s[4], e[4], bc[4], schur[16], rhs[4], low[16], linv[16], ginv[16], dc[4];
    double gs[4], gv[4], grad[4];
    double lp = 0.0, rwr = 0.0, logdet = 0.0, quad;
    double *a, *bu, *bmat, *du;
    int64_t rc = 0;
    if ((int64_t)dim != k || k > 4 || nc != 4) return -1;
    a = (double *)malloc(sizeof(double) * (size_t)n_u * 7);
    if (a == NULL) return -2;
    bu = a + n_u;
    du = bu + n_u;
    bmat = du + n_u;
    for (j = 0; j < k; j++) v[j] = exp(x[j]);
    for (c = 0; c < nc; c++) s[c] = v[(int64_t)smap[c]];
    for (u = 0; u < n_u; u++) {
        bu[u] = 0.0;
        for (c = 0; c < nc; c++) bmat[u * nc + c] = 0.0;
    }
    for (c = 0; c < nc; c++) {
        bc[c] = 0.0;
        gs[c] = 0.0;
        for (d = 0; d < nc; d++) {
            schur[c * nc + d] = 0.0;
            low[c * nc + d] = 0.0;
            linv[c * nc + d] = 0.0;
            ginv[c * nc + d] = 0.0;
        }
    }
    for (u = 0; u < n_u; u++) {
        a[u] = 1.0 / (s0[u] * s0[u]);
        lp -= log(s0[u]);
    }
    for (c = 0; c < nc; c++) {
        e[c] = 1.0 / (s0[n_u + c] * s0[n_u + c]);
        lp -= log(s0[n_u + c]);
    }
    for (i = 0; i < ncell; i++) {
        double n = cells[2 * ncell + i], sc, w, r;
        u = (int64_t)cells[i];
        c = (int64_t)cells[ncell + i];
        sc = s[c];
        w = n / (sc * sc);
        r = cells[3 * ncell + i] - mu0[u] - mu0[n_u + c];
        lp += -0.5 * n * LOG_2PI - n * log(sc) - cells[4 * ncell + i] / (2.0 * sc * sc);
        a[u] += w;
        e[c] += w;
        bmat[u * nc + c] = w;
        bu[u] += w * r;
        bc[c] += w * r;
        rwr += w * r * r;
    }
    for (c = 0; c < nc; c++) rhs[c] = bc[c];
    for (u = 0; u < n_u; u++) {
        logdet += log(a[u]);
        for (c = 0; c < nc; c++) {
            double g = bmat[u * nc + c] / a[u];
            rhs[c] -= g * bu[u];
            for (d = 0; d < nc; d++) schur[c * nc + d] -= g * bmat[u * nc + d];
        }
    }
    for (c = 0; c < nc; c++) schur[c * nc + c] += e[c];
    for (c = 0; c < nc; c++) {
        for (d = 0; d <= c; d++) {
            double t = schur[c * nc + d];
            for (j = 0; j < d; j++) t -= low[c * nc + j] * low[d * nc + j];
            if (c == d) {
                if (t <= 0.0) { rc = 4; goto done; }
                low[c * nc + c] = sqrt(t);
            } else {
                low[c * nc + d] = t / low[d * nc + d];
            }
        }
        logdet += 2.0 * log(low[c * nc + c]);
    }
    for (c = 0; c < nc; c++) {
        linv[c * nc + c] = 1.0 / low[c * nc + c];
        for (d = 0; d < c; d++) {
            double t = 0.0;
            for (j = d; j < c; j++) t -= low[c * nc + j] * linv[j * nc + d];
            linv[c * nc + d] = t / low[c * nc + c];
        }
    }
    for (c = 0; c < nc; c++)
        for (d = 0; d < nc; d++) {
            double t = 0.0;
            for (j = (c > d ? c : d); j < nc; j++) t += linv[j * nc + c] * linv[j * nc + d];
            ginv[c * nc + d] = t;
        }
    for (c = 0; c < nc; c++) {
        dc[c] = 0.0;
        for (d = 0; d < nc; d++) dc[c] += ginv[c * nc + d] * rhs[d];
    }
    quad = rwr;
    for (c = 0; c < nc; c++) quad -= bc[c] * dc[c];
    for (u = 0; u < n_u; u++) {
        double t = bu[u];
        for (c = 0; c < nc; c++) t -= bmat[u * nc + c] * dc[c];
        du[u] = t / a[u];
        quad -= bu[u] * du[u];
    }
    lp += -0.5 * logdet - 0.5 * quad;
    for (i = 0; i < ncell; i++) {
        double n = cells[2 * ncell + i], sc, w, res, var;
        u = (int64_t)cells[i];
        c = (int64_t)cells[ncell + i];
        sc = s[c];
        w = n / (sc * sc);
        res = cells[3 * ncell + i] - mu0[u] - mu0[n_u + c] - du[u] - dc[c];
        for (d = 0; d < nc; d++) gv[d] = bmat[u * nc + d] / a[u] - (d == c ? 1.0 : 0.0);
        var = 1.0 / a[u];
        for (d = 0; d < nc; d++)
            for (j = 0; j < nc; j++) var += gv[d] * ginv[d * nc + j] * gv[j];
        gs[c] += -n / sc + cells[4 * ncell + i] / (sc * sc * sc) + w / sc * (var + res * res);
    }
    for (j = 0; j < k; j++) grad[j] = 0.0;
    for (c = 0; c < nc; c++) grad[(int64_t)smap[c]] += gs[c];
    for (j = 0; j < k; j++) {
        double pg, pl = prior((int)priors[5 * j], priors[5 * j + 2], priors[5 * j + 3],
                              priors[5 * j + 4], v[j], &pg);
        lp += pl + x[j];
        grad[j] = (grad[j] + pg) * v[j] + 1.0;
    }
    for (j = 0; j < k; j++) {
        if (!isfinite(grad[j])) { rc = 3; goto done; }
        out[j] = grad[j];
    }
    logp_[0] = lp;
    if (!isfinite(lp)) rc = 4;
done:
    free(a);
    return rc;
}

int64_t add_expand(uint64_t dim, uint64_t expanded, const double *x, double *out,
                   const double *data) {
    int64_t k = (int64_t)data[0], j;
    if ((int64_t)dim != k || (int64_t)expanded != k) return -1;
    for (j = 0; j < k; j++) out[j] = exp(x[j]);
    return 0;
}
/* ---- the crossed family (layout of crossed.pack) ----
 * x = (A[4], log T[4], log S[ns], log O[no], zb[3], a[n_attr]). The attribute effects are
 * v[a] = b[g] + a[a] - abar[g] for the attributes of group g (stereotype, human, none), with
 * b[g] = O / sqrt(n_g) zb[g], zb ~ Normal(0, 1), and the deviations a - abar distributed as
 * those of n_g draws from Normal(0, O) (so v ~ Normal(0, O)); M[c] = A[c] - b[g(c)]. The data
 * pin A and the deviations, not M or b: these coordinates remove the ridge between M and the
 * mean effect of a group (linear maps, unit Jacobian). b never meets the rows, so it is
 * always non-centred. nonc: bit g set if group g's raw effects are non-centred, a = O z.
 * Centred: abar meets neither the rows nor v, so any proper
 * density independent of the rest leaves the posterior unchanged; it gets Normal(0, h[g]), h
 * a data constant near the deviations' posterior sd (an O-scaled prior made it a ridge of
 * sd O / sqrt(n_g) against the deviations' h, correlated with O: poor mixing of O when the
 * attributes are few and the rows many).
 * The cell means are integrated out given v: the rows of cell q minus their attributes'
 * effects have n, mean rbar and sum of squares ss, and the cell-marginal density of the
 * hierarchical kernel applies. The rows come sorted by cell (stably: a cell's rows in table
 * order), with int32 attribute indices and each cell's first row, so that a cell's sums stay
 * in registers: two passes over each cell's rows, no allocation for up to 1024 attributes.
 * Sums by group or sd are kept in scalars, and log(sd) / log(var) computed once per value;
 * every sum adds the same terms in the same order as the row-order kernel it replaced, so
 * log-density, gradient and draws are bitwise the same (benchmarks/bench_crossed.py). */
/* The cell terms of the crossed density summed over groups of cells that share the
 * connection, the count n and the multiset of attributes (k_e rows of attribute a_e per cell,
 * entries e of the group). Within a group the mean effect vbar = sum_e k_e v[a_e] / n is
 * common, so with w cells, cbar the mean and Q the sum of squares (about cbar) of their cell
 * means, SS0 their summed within-cell sums of squares and D_e the summed deviations
 * y_i - ybar_q of the rows with attribute a_e:
 *   sum_q (rbar_q - M)^2 = Q + w (cbar - vbar - M)^2,
 *   sum_q ss_q = SS0 - 2 sum_e v[a_e] D_e + w sum_e k_e (v[a_e] - vbar)^2,
 * O(entries) per group instead of O(rows). Adds to lp and the gradients gv, gm, gt, gs. */
static void cx_groups(int64_t ng, const double *gconn, const double *gn, const double *gw,
                      const double *gcbar, const double *gq, const double *gss,
                      const double *glogn, const double *ek, const double *ed,
                      const int32_t *gstart, const int32_t *eattr, const double *m,
                      const double *t, const double *s, const double *ls, const double *v,
                      double *gv, double *gm, double *gt, double *gs, double *lp) {
    int64_t q, e;
    for (q = 0; q < ng; q++) {
        int64_t cc = (int64_t)gconn[q], lo = gstart[q], hi = gstart[q + 1];
        double n = gn[q], w = gw[q], sc = s[cc], tc = t[cc], var = tc * tc + sc * sc / n;
        double vbar = 0.0, cross = 0.0, spread = 0.0, r, ss, dev, dr, dq, dv;
        for (e = lo; e < hi; e++) vbar += ek[e] * v[eattr[e]];
        vbar /= n;
        for (e = lo; e < hi; e++) {
            double d = v[eattr[e]] - vbar;
            cross += v[eattr[e]] * ed[e];
            spread += ek[e] * d * d;
        }
        ss = gss[q] - 2.0 * cross + w * spread;
        r = gcbar[q] - vbar - m[cc];
        dev = gq[q] + w * r * r;
        dr = 1.0 / (sc * sc);
        dq = w * r / (var * n);
        for (e = lo; e < hi; e++) {
            int32_t a = eattr[e];
            gv[a] += (ed[e] - w * ek[e] * (v[a] - vbar)) * dr + ek[e] * dq;
        }
        *lp += (w * (-0.5 * n * LOG_2PI - (n - 1.0) * ls[cc] - 0.5 * glogn[q] - 0.5 * log(var))
                - ss / (2.0 * sc * sc) - dev / (2.0 * var));
        dv = -0.5 * w / var + 0.5 * dev / (var * var);
        gm[cc] += w * r / var;
        gt[cc] += dv * 2.0 * tc;
        gs[cc] += -w * (n - 1.0) / sc + ss / (sc * sc * sc) + dv * 2.0 * sc / n;
    }
}

/* The cell terms of the crossed density summed over classes of cells that share only the
 * connection and the count n (tables whose cells meet different attributes: cx_groups would
 * have a group per cell). With w cells, cbar the mean and Q the sum of squares (about cbar)
 * of their cell means, SS0 their summed within-cell sums of squares, and per attribute a of
 * the class K_a its rows, D_a the summed deviations y_i - ybar_q of those rows, E_a =
 * sum_q (ybar_q - cbar) k_qa, and G = sum_q k_q k_q' (k_q: cell q's rows per attribute):
 *   sum_q ss_q = SS0 - 2 D.v + K.v^2 - v'Gv / n,
 *   sum_q (rbar_q - M)^2 = Q + w (cbar - M)^2 - 2 (E.v + (cbar - M) K.v) / n + v'Gv / n^2,
 * O(attributes^2) per class instead of O(rows). G is dense per class, row-major. */
static void cx_classes(int64_t ncl, const double *cconn, const double *cn, const double *cw,
                       const double *ccbar, const double *cq, const double *css,
                       const double *clogn, const double *ek, const double *ed,
                       const double *ee, const double *gmat, const int32_t *cstart,
                       const int32_t *eattr, const double *m, const double *t,
                       const double *s, const double *ls, const double *v, double *gv,
                       double *gm, double *gt, double *gs, double *lp) {
    int64_t q, i, j, off = 0;
    for (q = 0; q < ncl; q++) {
        int64_t cc = (int64_t)cconn[q], lo = cstart[q], hi = cstart[q + 1], k = hi - lo;
        double n = cn[q], w = cw[q], sc = s[cc], tc = t[cc], var = tc * tc + sc * sc / n;
        double c = ccbar[q] - m[cc], kv = 0.0, dv = 0.0, ev = 0.0, kvv = 0.0, vgv = 0.0;
        double sumss, dev, dr = 1.0 / (sc * sc), dq = 1.0 / (n * var), dvar;
        const double *g = gmat + off;
        for (i = 0; i < k; i++) {
            int64_t e = lo + i;
            double va = v[eattr[e]], row = 0.0;
            for (j = 0; j < k; j++) row += g[i * k + j] * v[eattr[lo + j]];
            kv += ek[e] * va;
            dv += ed[e] * va;
            ev += ee[e] * va;
            kvv += ek[e] * va * va;
            vgv += va * row;
            gv[eattr[e]] += (ed[e] - ek[e] * va + row / n) * dr
                            + (ee[e] + c * ek[e] - row / n) * dq;
        }
        off += k * k;
        sumss = css[q] - 2.0 * dv + kvv - vgv / n;
        dev = cq[q] + w * c * c - 2.0 * (ev + c * kv) / n + vgv / (n * n);
        *lp += (w * (-0.5 * n * LOG_2PI - (n - 1.0) * ls[cc] - 0.5 * clogn[q] - 0.5 * log(var))
                - sumss / (2.0 * sc * sc) - dev / (2.0 * var));
        dvar = -0.5 * w / var + 0.5 * dev / (var * var);
        gm[cc] += (w * c - kv / n) / var;
        gt[cc] += dvar * 2.0 * tc;
        gs[cc] += -w * (n - 1.0) / sc + sumss / (sc * sc * sc) + dvar * 2.0 * sc / n;
    }
}

static int64_t cx_core(uint64_t dim, const double *x, double *out, double *logp_,
                       const double *data, int grouped) {
    int64_t ns = (int64_t)data[0], no = (int64_t)data[1], na = (int64_t)data[2];
    int64_t ncell = (int64_t)data[3], nrow = (int64_t)data[4], nonc = (int64_t)data[5];
    int64_t kh = 8 + ns + no, j, c, q, i, a, g;
    const double *priors = data + 6, *smap = priors + 5 * kh, *cconn = smap + 4;
    const double *cn = cconn + ncell, *akind = cn + ncell, *agrp = akind + na;
    const double *gkind = agrp + na, *anch = gkind + 3, *ry = NULL, *logn = NULL;
    const double *gw = NULL, *gcbar = NULL, *gq = NULL, *gss = NULL, *glogn = NULL;
    const double *ek = NULL, *ed = NULL, *ee = NULL, *gmat = NULL;
    const int32_t *cstart = NULL, *rattr = NULL, *gstart = NULL, *eattr = NULL;
    double h[16], gh[16], m[4], t[4], s[4], ls[4], gm[4] = {0, 0, 0, 0}, gt[4] = {0, 0, 0, 0};
    double gs[4] = {0, 0, 0, 0}, o[4], lp = 0.0, cnt[3] = {0, 0, 0}, abar[3] = {0, 0, 0};
    double b[3], ob[3], gb[3] = {0, 0, 0}, gsum[3] = {0, 0, 0}, gmean[3] = {0, 0, 0};
    double lastn[4] = {-1, -1, -1, -1};
    double lo[4], lastlv[4] = {0, 0, 0, 0}, s0 = 0.0, s1 = 0.0, s2 = 0.0, k0, k1, k2, k3;
    int64_t n0 = 0, n1 = 0, n2 = 0;
    double stack[2048], *v, *gv;
    int64_t rc = 0;
    if ((int64_t)dim != kh + 3 + na || ns > 4 || no > 4) return -1;
    if (grouped) {  /* pack_grouped (1) or pack_classes (2); ncell: groups, nrow: entries */
        gw = anch + (grouped == 2 ? 4 : 3);  /* classes: anch[3], the size of the G blocks */
        gcbar = gw + ncell;
        gq = gcbar + ncell;
        gss = gq + ncell;
        glogn = gss + ncell;
        ek = glogn + ncell;
        ed = ek + nrow;
        if (grouped == 2) {
            ee = ed + nrow;
            gmat = ee + nrow;
            gstart = (const int32_t *)(gmat + (int64_t)anch[3]);
        } else {
            gstart = (const int32_t *)(ed + nrow);
        }
        eattr = gstart + ncell + 1;
    } else {  /* crossed.pack: rows sorted by cell */
        ry = anch + 3;
        logn = ry + nrow;
        cstart = (const int32_t *)(logn + ncell);
        rattr = cstart + ncell + 1;
    }
    v = 2 * na <= 2048 ? stack : (double *)malloc(sizeof(double) * (size_t)(2 * na));
    if (v == NULL) return -2;
    gv = v + na;
    for (j = 0; j < kh; j++) {
        h[j] = priors[5 * j + 1] > 0.5 ? exp(x[j]) : x[j];
        gh[j] = 0.0;
    }
    for (j = 0; j < no; j++) {
        o[j] = h[8 + ns + j];
        lo[j] = log(o[j]);  /* once per sd, not per attribute */
    }
    /* sums by group in scalars (not through memory): the same additions in the same order */
    for (a = 0; a < na; a++) {
        g = (int64_t)agrp[a];
        if (g == 0) n0++;
        else if (g == 1) n1++;
        else n2++;
    }
    cnt[0] = (double)n0;
    cnt[1] = (double)n1;
    cnt[2] = (double)n2;
    for (g = 0; g < 3; g++) {
        double og = gkind[g] >= 0 ? o[(int64_t)gkind[g]] : 1.0;
        ob[g] = cnt[g] > 0 ? og / sqrt(cnt[g]) : 1.0;  /* prior sd of b[g] */
        b[g] = ob[g] * x[kh + g];
    }
    for (a = 0; a < na; a++) {
        double ok = o[(int64_t)akind[a]], z = x[kh + 3 + a];
        g = (int64_t)agrp[a];
        v[a] = (nonc >> g) & 1 ? ok * z : z;  /* a[a] for now */
        if (g == 0) s0 += v[a];
        else if (g == 1) s1 += v[a];
        else s2 += v[a];
    }
    abar[0] = s0;
    abar[1] = s1;
    abar[2] = s2;
    for (g = 0; g < 3; g++) abar[g] = cnt[g] > 0 ? abar[g] / cnt[g] : 0.0;
    for (a = 0; a < na; a++) {
        g = (int64_t)agrp[a];
        v[a] = b[g] + v[a] - abar[g];
        gv[a] = 0.0;
    }
    for (c = 0; c < 4; c++) {
        g = c < 2 ? 0 : c - 1;
        m[c] = h[c] - (cnt[g] > 0 ? b[g] : 0.0);
        t[c] = h[4 + c];
        s[c] = h[8 + (int64_t)smap[c]];
        ls[c] = log(s[c]);
    }
    if (grouped == 2) {
        cx_classes(ncell, cconn, cn, gw, gcbar, gq, gss, glogn, ek, ed, ee, gmat, gstart, eattr,
                   m, t, s, ls, v, gv, gm, gt, gs, &lp);
        ncell = 0;  /* the per-cell loop below is not run */
    } else if (grouped) {
        cx_groups(ncell, cconn, cn, gw, gcbar, gq, gss, glogn, ek, ed, gstart, eattr, m, t, s,
                  ls, v, gv, gm, gt, gs, &lp);
        ncell = 0;  /* the per-cell loop below is not run */
    }
    for (q = 0; q < ncell; q++) {
        int64_t cc = (int64_t)cconn[q], lo = cstart[q], hi = cstart[q + 1];
        double n = cn[q], sc = s[cc], tc = t[cc], var = tc * tc + sc * sc / n;
        double rbar = 0.0, ss = 0.0, r, dv, dr, dq, lv;
        for (i = lo; i < hi; i++) rbar += ry[i] - v[rattr[i]];
        rbar /= n;
        r = rbar - m[cc];
        dr = 1.0 / (sc * sc);  /* d/dr_i = -(r_i - rbar) dr - dq */
        dq = r / (var * n);
        for (i = lo; i < hi; i++) {
            int32_t ai = rattr[i];
            double d = ry[i] - v[ai] - rbar;
            ss += d * d;
            gv[ai] += d * dr + dq;  /* dL/dv_a = -sum_i dL/dr_i */
        }
        if (n != lastn[cc]) {  /* cells of a connection often share n: log(var) once */
            lastn[cc] = n;
            lastlv[cc] = log(var);
        }
        lv = lastlv[cc];
        lp += (-0.5 * n * LOG_2PI - (n - 1.0) * ls[cc] - ss / (2.0 * sc * sc)
               - 0.5 * logn[q] - 0.5 * lv - r * r / (2.0 * var));
        dv = -0.5 / var + 0.5 * r * r / (var * var);
        gm[cc] += r / var;
        gt[cc] += dv * 2.0 * tc;
        gs[cc] += -(n - 1.0) / sc + ss / (sc * sc * sc) + dv * 2.0 * sc / n;
    }
    for (c = 0; c < 4; c++) {
        double pg;
        lp += prior((int)priors[5 * c], priors[5 * c + 2], priors[5 * c + 3],
                    priors[5 * c + 4], m[c], &pg);  /* the prior of M[c] */
        gm[c] += pg;
        gh[c] += gm[c];
        gh[4 + c] += gt[c];
        gh[8 + (int64_t)smap[c]] += gs[c];
    }
    /* chain rule to b and a: v = b[g] + a - abar[g], M[c] = A[c] - b[g(c)] */
    s0 = s1 = s2 = 0.0;
    for (a = 0; a < na; a++) {
        g = (int64_t)agrp[a];
        if (g == 0) s0 += gv[a];
        else if (g == 1) s1 += gv[a];
        else s2 += gv[a];
    }
    gsum[0] = s0;
    gsum[1] = s1;
    gsum[2] = s2;
    for (g = 0; g < 3; g++) {
        gb[g] = gsum[g];
        gmean[g] = cnt[g] > 0 ? gsum[g] / cnt[g] : 0.0;
        gsum[g] = 0.0;  /* below: the abar prior's gradient per attribute (centred) */
    }
    if (cnt[0] > 0) gb[0] -= gm[0] + gm[1];
    if (cnt[1] > 0) gb[1] -= gm[2];
    if (cnt[2] > 0) gb[2] -= gm[3];
    for (g = 0; g < 3; g++) {
        int64_t k = gkind[g] >= 0 ? (int64_t)gkind[g] : -1;
        double z = x[kh + g];
        lp += -0.5 * LOG_2PI - 0.5 * z * z;
        if (cnt[g] == 0) {  /* no attributes: zb[g] is unused, a standard Normal */
            out[kh + g] = -z;
        } else {
            gh[8 + ns + k] += gb[g] * z / sqrt(cnt[g]);
            out[kh + g] = gb[g] * ob[g] - z;
            if (!((nonc >> g) & 1)) {  /* abar[g] ~ Normal(0, h[g]); one log O less for d */
                double r = abar[g] / anch[g];
                lp += -0.5 * LOG_2PI - log(anch[g]) - 0.5 * r * r + lo[k];
                gh[8 + ns + k] += 1.0 / o[k];
                gsum[g] = abar[g] / (cnt[g] * anch[g] * anch[g]);  /* d/da of that, per a */
            }
        }
        if (!isfinite(out[kh + g])) { rc = 3; goto done; }
    }
    k0 = gh[8 + ns];
    k1 = no > 1 ? gh[9 + ns] : 0.0;
    k2 = no > 2 ? gh[10 + ns] : 0.0;
    k3 = no > 3 ? gh[11 + ns] : 0.0;
    for (a = 0; a < na; a++) {
        int64_t k = (int64_t)akind[a];
        double z = x[kh + 3 + a], ok = o[k], add, ga;
        g = (int64_t)agrp[a];
        ga = gv[a] - gmean[g];
        if ((nonc >> g) & 1) {
            lp += -0.5 * LOG_2PI - 0.5 * z * z;
            add = ga * z;
            out[kh + 3 + a] = ga * ok - z;
        } else {  /* the deviation d = a - abar: sum d = 0, so d/da_i of sum d^2 is 2 d_i */
            double d = z - abar[g];
            lp += -0.5 * LOG_2PI - lo[k] - 0.5 * d * d / (ok * ok);
            add = -1.0 / ok + d * d / (ok * ok * ok);
            out[kh + 3 + a] = ga - d / (ok * ok) - gsum[g];
        }
        if (k == 0) k0 += add;
        else if (k == 1) k1 += add;
        else if (k == 2) k2 += add;
        else k3 += add;
        if (!isfinite(out[kh + 3 + a])) { rc = 3; goto done; }
    }
    gh[8 + ns] = k0;
    if (no > 1) gh[9 + ns] = k1;
    if (no > 2) gh[10 + ns] = k2;
    if (no > 3) gh[11 + ns] = k3;
    for (j = 0; j < kh; j++) {
        double pg = 0.0, pl = 0.0, gg;
        if (j >= 4)  /* the M priors were added above */
            pl = prior((int)priors[5 * j], priors[5 * j + 2], priors[5 * j + 3],
                       priors[5 * j + 4], h[j], &pg);
        gg = gh[j] + pg;
        lp += pl;
        if (priors[5 * j + 1] > 0.5) {
            lp += x[j];
            out[j] = gg * h[j] + 1.0;
        } else {
            out[j] = gg;
        }
        if (!isfinite(out[j])) { rc = 3; goto done; }
    }
    logp_[0] = lp;
    if (!isfinite(lp)) rc = 4;
done:
    if (v != stack) free(v);
    return rc;
}

int64_t cx_logp(uint64_t dim, const double *x, double *out, double *logp_, const double *data) {
    return cx_core(dim, x, out, logp_, data, 0);
}

/* the same density from groups of cells that share (connection, n, attribute multiset):
 * layout of crossed.pack_grouped (cx_groups) */
int64_t cxg_logp(uint64_t dim, const double *x, double *out, double *logp_,
                 const double *data) {
    return cx_core(dim, x, out, logp_, data, 1);
}

/* layout of crossed.pack_classes (cx_classes) */
int64_t cxc_logp(uint64_t dim, const double *x, double *out, double *logp_,
                 const double *data) {
    return cx_core(dim, x, out, logp_, data, 2);
}

/* expanded: (M[4], T[4], S[ns], O[no], v[n_attr]) */
int64_t cx_expand(uint64_t dim, uint64_t expanded, const double *x, double *out,
                  const double *data) {
    int64_t ns = (int64_t)data[0], no = (int64_t)data[1], na = (int64_t)data[2];
    int64_t ncell = (int64_t)data[3], nonc = (int64_t)data[5], kh = 8 + ns + no, j, a, c, g;
    const double *priors = data + 6, *smap = priors + 5 * kh, *cconn = smap + 4;
    const double *akind = cconn + 2 * ncell, *agrp = akind + na, *gkind = agrp + na;
    double cnt[3] = {0, 0, 0}, abar[3] = {0, 0, 0}, b[3];
    if ((int64_t)dim != kh + 3 + na || (int64_t)expanded != kh + na) return -1;
    for (j = 0; j < kh; j++) out[j] = priors[5 * j + 1] > 0.5 ? exp(x[j]) : x[j];
    for (a = 0; a < na; a++) cnt[(int64_t)agrp[a]] += 1.0;
    for (g = 0; g < 3; g++) {
        double og = gkind[g] >= 0 ? out[8 + ns + (int64_t)gkind[g]] : 1.0;
        double obg = cnt[g] > 0 ? og / sqrt(cnt[g]) : 1.0;
        b[g] = obg * x[kh + g];
    }
    for (a = 0; a < na; a++) {
        double z = x[kh + 3 + a];
        g = (int64_t)agrp[a];
        out[kh + a] = (nonc >> g) & 1 ? out[8 + ns + (int64_t)akind[a]] * z : z;
        abar[g] += out[kh + a];
    }
    for (g = 0; g < 3; g++) abar[g] = cnt[g] > 0 ? abar[g] / cnt[g] : 0.0;
    for (a = 0; a < na; a++) {
        g = (int64_t)agrp[a];
        out[kh + a] = b[g] + out[kh + a] - abar[g];
    }
    for (c = 0; c < 4; c++) {
        g = c < 2 ? 0 : c - 1;
        if (cnt[g] > 0) out[c] -= b[g];
    }
    return 0;
}

/* ---- the crossed model with mu_bar and the attribute effects integrated out: NUTS on the
 * log scales x = (log tau[4], log sigma[ns], log omega[nk]) only (layout of
 * crossed_integrated.pack_types_c, and with the per-attribute part of pack_draws_c). The
 * formulas are crossed_integrated.log_marginal_types_grad's: every sum over attributes
 * collapsed onto the attribute types (same kind, rows per connection and counts per group),
 * the v block of the conditional precision P factorised through S = I - C^1/2 K'Dv^-1 K C^1/2
 * (groups x groups, Cholesky) and the 4 x 4 Schur complement T of mu_bar (Cholesky). ---- */
typedef struct {
    int64_t ng, nt, ns, nk, na, nnz, full;
    const double *gc, *gn, *gw, *ysum, *ysq, *ss, *smap, *consts, *priors, *tn, *tkind;
    const double *tksum, *tptr, *tg, *tv, *d1, *d2, *kind, *ksum, *dsum, *eptr, *eg, *ek;
} cxi_data;

/* header [length, ng, nt, ns, nk, na, nnz, full, nnzt]; 0, or -1 if the block is
 * inconsistent */
static int cxi_parse(const double *data, cxi_data *D) {
    int64_t o = 9, ng, nt, nnzt = (int64_t)data[8];
    D->ng = ng = (int64_t)data[1];
    D->nt = nt = (int64_t)data[2];
    D->ns = (int64_t)data[3];
    D->nk = (int64_t)data[4];
    D->na = (int64_t)data[5];
    D->nnz = (int64_t)data[6];
    D->full = data[7] > 0.5;
    if (ng < 1 || nt < 1 || D->ns < 1 || D->ns > 4 || D->nk < 1 || D->nk > 60) return -1;
    D->gc = data + o; o += ng;
    D->gn = data + o; o += ng;
    D->gw = data + o; o += ng;
    D->ysum = data + o; o += ng;
    D->ysq = data + o; o += ng;
    D->ss = data + o; o += 4;
    D->smap = data + o; o += 4;
    D->consts = data + o; o += 3;
    D->priors = data + o; o += 15;
    D->tn = data + o; o += nt;
    D->tkind = data + o; o += nt;
    D->tksum = data + o; o += 4 * nt;
    D->tptr = data + o; o += nt + 1;  /* the types' counts per group, sparse by type */
    D->tg = data + o; o += nnzt;
    D->tv = data + o; o += nnzt;
    D->d1 = data + o; o += 4 * nt;
    D->d2 = data + o; o += 16 * nt;
    if (D->full) {
        D->kind = data + o; o += D->na;
        D->ksum = data + o; o += 4 * D->na;
        D->dsum = data + o; o += 4 * D->na;
        D->eptr = data + o; o += D->na + 1;
        D->eg = data + o; o += D->nnz;
        D->ek = data + o; o += D->nnz;
    }
    return o == (int64_t)data[0] ? 0 : -1;
}

/* the factorisation at one x, and what the gradient and the draws reuse */
typedef struct {
    double tau[4], sigc[4], u[4], a4[4], bmu[4], tinv[16], m_mu[4], om[64], p[64];
    double cc, logdet, val;
    /* groups */
    double *w2, *xg, *rc, *fg, *kb, *rkb, *ktv, *z, *km;
    /* types */
    double *dinv, *beta, *b1, *b2, *du2;
    /* groups x groups, groups x 4 */
    double *gm, *rg, *el, *linv, *grg, *q, *sinv, *wm, *ktb, *gmf, *wt;
} cxi_work;

static int64_t cxi_work_size(int64_t ng, int64_t nt) {
    return 9 * ng + 8 * nt + 7 * ng * ng + 4 * 4 * ng;
}

static void cxi_work_init(cxi_work *W, double *buf, int64_t ng, int64_t nt) {
    double *o = buf;
    W->w2 = o; o += ng; W->xg = o; o += ng; W->rc = o; o += ng; W->fg = o; o += ng;
    W->kb = o; o += ng; W->rkb = o; o += ng; W->ktv = o; o += ng; W->z = o; o += ng;
    W->km = o; o += ng;
    W->dinv = o; o += nt; W->beta = o; o += nt; W->b1 = o; o += nt; W->b2 = o; o += nt;
    W->du2 = o; o += 4 * nt;
    W->gm = o; o += ng * ng; W->rg = o; o += ng * ng; W->el = o; o += ng * ng;
    W->linv = o; o += ng * ng; W->grg = o; o += ng * ng; W->q = o; o += ng * ng;
    W->sinv = o; o += ng * ng;
    W->wm = o; o += 4 * ng; W->ktb = o; o += 4 * ng; W->gmf = o; o += 4 * ng;
    W->wt = o;
}

/* Cholesky of the symmetric positive-definite n x n matrix a (row-major, lower triangle
 * read): its inverse (full) and log det. el, linv: n x n scratch. 0, or 1 if not PD. */
static int cxi_chol_inv(int64_t n, const double *a, double *inv, double *el, double *linv,
                        double *logdet) {
    int64_t i, j, k;
    double ld = 0.0;
    for (i = 0; i < n * n; i++) {
        el[i] = 0.0;
        linv[i] = 0.0;
    }
    for (i = 0; i < n; i++)
        for (j = 0; j <= i; j++) {
            double acc = a[i * n + j];
            for (k = 0; k < j; k++) acc -= el[i * n + k] * el[j * n + k];
            if (i == j) {
                if (!(acc > 0.0)) return 1;
                el[i * n + i] = sqrt(acc);
                ld += log(acc);
            } else {
                el[i * n + j] = acc / el[j * n + j];
            }
        }
    for (j = 0; j < n; j++) {
        linv[j * n + j] = 1.0 / el[j * n + j];
        for (i = j + 1; i < n; i++) {
            double acc = 0.0;
            for (k = j; k < i; k++) acc -= el[i * n + k] * linv[k * n + j];
            linv[i * n + j] = acc / el[i * n + i];
        }
    }
    for (i = 0; i < n; i++)
        for (j = 0; j <= i; j++) {
            double acc = 0.0;
            for (k = i; k < n; k++) acc += linv[k * n + i] * linv[k * n + j];
            inv[i * n + j] = acc;
            inv[j * n + i] = acc;
        }
    *logdet = ld;
    return 0;
}

/* everything up to mu_bar's conditional mean m_mu and covariance tinv; W->val: the explicit
 * terms K (no priors). 0, or 4 if S or T is not positive definite (or not finite). */
static int cxi_factor(const cxi_data *D, const double *x, cxi_work *W) {
    int64_t ng = D->ng, nt = D->nt, ns = D->ns, nk = D->nk, g, h, c, j, t, i;
    double s0 = D->consts[0], m0 = D->consts[1], n_rows = D->consts[2], s02 = s0 * s0, lds;
    double tm[16], rr[4], el4[16], li4[16];
    for (c = 0; c < 4; c++) W->tau[c] = exp(x[c]);
    for (c = 0; c < 4; c++) {
        W->sigc[c] = exp(x[4 + (int64_t)D->smap[c]]);
        W->u[c] = 1.0 / (W->sigc[c] * W->sigc[c]);
        W->a4[c] = 1.0 / s02;
        W->bmu[c] = m0 / s02;
    }
    for (j = 0; j < nk; j++) {
        W->om[j] = exp(x[4 + ns + j]);
        W->p[j] = 1.0 / (W->om[j] * W->om[j]);
    }
    W->cc = 4.0 * m0 * m0 / s02;
    W->val = -0.5 * n_rows * LOG_2PI - 4.0 * log(s0);
    for (g = 0; g < ng; g++) {
        double tc, sc, uc, gn = D->gn[g], gw = D->gw[g];
        c = (int64_t)D->gc[g];
        tc = W->tau[c];
        sc = W->sigc[c];
        uc = W->u[c];
        W->w2[g] = 1.0 / (tc * tc + sc * sc / gn);
        W->xg[g] = tc * tc * uc;
        W->rc[g] = sqrt(gw * uc * W->xg[g] / (1.0 + gn * W->xg[g]));
        W->fg[g] = gw * W->w2[g] / gn;
        W->a4[c] += gw * W->w2[g];
        W->bmu[c] += W->w2[g] * D->ysum[g];
        W->cc += W->w2[g] * D->ysq[g];
        W->val += gw * (-(gn - 1.0) * log(sc) + 0.5 * log(W->w2[g] / gn));
    }
    for (c = 0; c < 4; c++) W->cc += W->u[c] * D->ss[c];
    W->logdet = 0.0;
    for (i = 0; i < ng * ng; i++) W->gm[i] = 0.0;
    for (g = 0; g < ng; g++) W->kb[g] = 0.0;
    for (t = 0; t < nt; t++) {
        int64_t kt = (int64_t)D->tkind[t];
        int64_t lo = (int64_t)D->tptr[t], hi = (int64_t)D->tptr[t + 1], e, f;
        double d = W->p[kt], bt = 0.0, du = 0.0, q2 = 0.0, tn = D->tn[t];
        for (c = 0; c < 4; c++) d += D->tksum[4 * t + c] * W->u[c];
        W->dinv[t] = 1.0 / d;
        W->logdet += tn * log(d);
        W->val -= tn * log(W->om[kt]);
        for (e = lo; e < hi; e++) {
            g = (int64_t)D->tg[e];
            bt += D->tv[e] * W->w2[g] * D->ysum[g] / D->gn[g];
        }
        W->beta[t] = bt;
        for (i = 0; i < 4; i++) {
            double acc = 0.0;
            du += D->d1[4 * t + i] * W->u[i];
            for (j = 0; j < 4; j++) acc += D->d2[16 * t + 4 * i + j] * W->u[j];
            W->du2[4 * t + i] = acc;
            q2 += W->u[i] * acc;
        }
        W->b1[t] = du + tn * bt;
        W->b2[t] = q2 + 2.0 * bt * du + tn * bt * bt;
        for (e = lo; e < hi; e++) {
            g = (int64_t)D->tg[e];
            W->kb[g] += D->tv[e] * W->dinv[t] * W->b1[t];
            for (f = lo; f < hi; f++)
                W->gm[g * ng + (int64_t)D->tg[f]] += tn * W->dinv[t] * D->tv[e] * D->tv[f];
        }
    }
    /* S = I - rc Gm rc (in q), its inverse, rg = rc S^-1 rc */
    for (g = 0; g < ng; g++)
        for (h = 0; h < ng; h++)
            W->q[g * ng + h] = (g == h ? 1.0 : 0.0) - W->rc[g] * W->gm[g * ng + h] * W->rc[h];
    if (cxi_chol_inv(ng, W->q, W->sinv, W->el, W->linv, &lds)) return 4;
    W->logdet += lds;
    for (g = 0; g < ng; g++)
        for (h = 0; h < ng; h++)
            W->rg[g * ng + h] = W->rc[g] * W->sinv[g * ng + h] * W->rc[h];
    /* Gm F (in gmf), W = F + rg Gm F, rg kb, K'tb = Gm W, K'tv = kb + Gm rg kb */
    for (i = 0; i < 4 * ng; i++) {
        W->gmf[i] = 0.0;
        W->wm[i] = 0.0;
        W->ktb[i] = 0.0;
    }
    for (g = 0; g < ng; g++)
        for (h = 0; h < ng; h++) W->gmf[4 * g + (int64_t)D->gc[h]] += W->gm[g * ng + h] * W->fg[h];
    for (g = 0; g < ng; g++) {
        W->wm[4 * g + (int64_t)D->gc[g]] += W->fg[g];
        W->rkb[g] = 0.0;
        for (h = 0; h < ng; h++) {
            W->rkb[g] += W->rg[g * ng + h] * W->kb[h];
            for (c = 0; c < 4; c++) W->wm[4 * g + c] += W->rg[g * ng + h] * W->gmf[4 * h + c];
        }
    }
    for (g = 0; g < ng; g++) {
        W->ktv[g] = W->kb[g];
        for (h = 0; h < ng; h++) {
            W->ktv[g] += W->gm[g * ng + h] * W->rkb[h];
            for (c = 0; c < 4; c++) W->ktb[4 * g + c] += W->gm[g * ng + h] * W->wm[4 * h + c];
        }
    }
    /* T = A4 - F'K'tb, r = bmu - F'K'tv; T^-1, m_mu = T^-1 r */
    for (i = 0; i < 16; i++) tm[i] = 0.0;
    for (c = 0; c < 4; c++) {
        tm[5 * c] = W->a4[c];
        rr[c] = W->bmu[c];
    }
    for (g = 0; g < ng; g++) {
        int64_t cg = (int64_t)D->gc[g];
        rr[cg] -= W->fg[g] * W->ktv[g];
        for (c = 0; c < 4; c++) tm[4 * cg + c] -= W->fg[g] * W->ktb[4 * g + c];
    }
    for (i = 0; i < 4; i++)
        for (j = 0; j < i; j++)
            tm[4 * i + j] = tm[4 * j + i] = 0.5 * (tm[4 * i + j] + tm[4 * j + i]);
    if (cxi_chol_inv(4, tm, W->tinv, el4, li4, &lds)) return 4;
    W->logdet += lds;
    for (i = 0; i < 4; i++) {
        W->m_mu[i] = 0.0;
        for (j = 0; j < 4; j++) W->m_mu[i] += W->tinv[4 * i + j] * rr[j];
    }
    for (g = 0; g < ng; g++) {
        W->z[g] = W->rkb[g];
        for (c = 0; c < 4; c++) W->z[g] -= W->wm[4 * g + c] * W->m_mu[c];
    }
    for (i = 0; i < 16; i++)
        if (!isfinite(W->tinv[i])) return 4;
    return 0;
}

/* the workspace: on the stack when small */
#define CXI_STACK 4096

int64_t cxi_logp(uint64_t dim, const double *x, double *out, double *logp_,
                 const double *data) {
    cxi_data D;
    cxi_work W;
    double stack[CXI_STACK], *buf = stack, quad = 0.0, val, grad[68], d_u[4], d_p[64], kt_[4];
    int64_t ng, nt, ns, nk, k, g, h, c, t, j, size;
    int64_t rc = 0;
    if (cxi_parse(data, &D)) return -1;
    ng = D.ng; nt = D.nt; ns = D.ns; nk = D.nk;
    k = 4 + ns + nk;
    if ((int64_t)dim != k) return -1;
    size = cxi_work_size(ng, nt);
    if (size > CXI_STACK) {
        buf = (double *)malloc(sizeof(double) * (size_t)size);
        if (buf == NULL) return -2;
    }
    cxi_work_init(&W, buf, ng, nt);
    if (cxi_factor(&D, x, &W)) { rc = 4; goto done; }
    for (c = 0; c < 4; c++) quad += W.bmu[c] * W.m_mu[c];
    /* Q = rg + W T^-1 W' */
    for (g = 0; g < ng; g++)
        for (c = 0; c < 4; c++) {
            double acc = 0.0;
            for (j = 0; j < 4; j++) acc += W.wm[4 * g + j] * W.tinv[4 * j + c];
            W.wt[4 * g + c] = acc;
        }
    for (g = 0; g < ng; g++)
        for (h = 0; h < ng; h++) {
            double acc = W.rg[g * ng + h];
            for (c = 0; c < 4; c++) acc += W.wt[4 * g + c] * W.wm[4 * h + c];
            W.q[g * ng + h] = acc;
        }
    for (g = 0; g < ng; g++) W.km[g] = 0.0;
    for (c = 0; c < 4; c++) d_u[c] = 0.0;
    for (j = 0; j < nk; j++) d_p[j] = 0.0;
    for (t = 0; t < nt; t++) {
        int64_t lo = (int64_t)D.tptr[t], hi = (int64_t)D.tptr[t + 1], e, f;
        double kz = 0.0, kqk = 0.0, di = W.dinv[t], tn = D.tn[t], sm, sm2, hs;
        for (e = lo; e < hi; e++) {
            g = (int64_t)D.tg[e];
            kz += D.tv[e] * W.z[g];
            for (f = lo; f < hi; f++) kqk += D.tv[e] * W.q[g * ng + (int64_t)D.tg[f]] * D.tv[f];
        }
        quad += di * (W.b2[t] + kz * W.b1[t]);
        sm = di * (W.b1[t] + tn * kz);
        sm2 = di * di * (W.b2[t] + 2.0 * kz * W.b1[t] + tn * kz * kz);
        hs = -0.5 * (tn * (di + di * di * kqk) + sm2);
        d_p[(int64_t)D.tkind[t]] += hs;
        for (c = 0; c < 4; c++)
            d_u[c] += D.tksum[4 * t + c] * hs
                      + di * (W.du2[4 * t + c] + (W.beta[t] + kz) * D.d1[4 * t + c]);
        for (e = lo; e < hi; e++) W.km[(int64_t)D.tg[e]] += D.tv[e] * sm;
    }
    val = W.val - 0.5 * W.logdet - 0.5 * (W.cc - quad);
    for (j = 0; j < k; j++) grad[j] = 0.0;
    for (c = 0; c < 4; c++) d_u[c] -= 0.5 * D.ss[c];
    /* Gm rg */
    for (g = 0; g < ng; g++)
        for (h = 0; h < ng; h++) {
            double acc = 0.0;
            for (j = 0; j < ng; j++) acc += W.gm[g * ng + j] * W.rg[j * ng + h];
            W.grg[g * ng + h] = acc;
        }
    for (g = 0; g < ng; g++) {
        double gn = D.gn[g], gw = D.gw[g], w2 = W.w2[g], xg = W.xg[g];
        double kvk, d_c, d_f, h4, dw, x1, dc_dlt, dc_dls, tc, sc, uc, mm, kmg = W.km[g];
        c = (int64_t)D.gc[g];
        tc = W.tau[c];
        sc = W.sigc[c];
        uc = W.u[c];
        mm = W.m_mu[c];
        kvk = W.gm[g * ng + g];
        for (h = 0; h < ng; h++) kvk += W.grg[g * ng + h] * W.gm[h * ng + g];
        for (j = 0; j < 4; j++) {
            kt_[j] = 0.0;
            for (h = 0; h < 4; h++) kt_[j] += W.ktb[4 * g + h] * W.tinv[4 * h + j];
        }
        for (j = 0; j < 4; j++) kvk += kt_[j] * W.ktb[4 * g + j];
        d_c = 0.5 * (kvk + kmg * kmg);
        d_f = kt_[c] - mm * kmg;
        h4 = -0.5 * (W.tinv[5 * c] + mm * mm);
        dw = (gw * h4 + d_f * gw / gn + D.ysum[g] * (mm + kmg / gn) - 0.5 * D.ysq[g]
              + 0.5 * gw / w2);
        x1 = 1.0 + gn * xg;
        dc_dlt = gw * uc * 2.0 * xg / (x1 * x1);
        dc_dls = -2.0 * gw * uc * xg / x1 - 2.0 * gw * uc * xg / (x1 * x1);
        grad[c] += dw * (-2.0 * tc * tc * w2 * w2) + d_c * dc_dlt;
        grad[4 + (int64_t)D.smap[c]] += (dw * (-2.0 * sc * sc * w2 * w2 / gn) + d_c * dc_dls
                                        - gw * (gn - 1.0));
    }
    for (c = 0; c < 4; c++) grad[4 + (int64_t)D.smap[c]] += d_u[c] * (-2.0 * W.u[c]);
    for (j = 0; j < nk; j++) grad[4 + ns + j] += d_p[j] * (-2.0 * W.p[j]);
    for (t = 0; t < nt; t++) grad[4 + ns + (int64_t)D.tkind[t]] -= D.tn[t];
    /* the scale priors at exp(x), with the log-Jacobian */
    for (j = 0; j < k; j++) {
        const double *pr = D.priors + 5 * (j < 4 ? 0 : (j < 4 + ns ? 1 : 2));
        double v = exp(x[j]), pg, pl = prior((int)pr[0], pr[2], pr[3], pr[4], v, &pg);
        val += pl + x[j];
        grad[j] += pg * v + 1.0;
    }
    for (j = 0; j < k; j++) {
        if (!isfinite(grad[j])) { rc = 3; goto done; }
        out[j] = grad[j];
    }
    logp_[0] = val;
    if (!isfinite(val)) rc = 4;
done:
    if (buf != stack) free(buf);
    return rc;
}

/* expanded: (tau[4], sigma[ns], omega[nk]) = exp(x) */
int64_t cxi_expand(uint64_t dim, uint64_t expanded, const double *x, double *out,
                   const double *data) {
    int64_t k = 4 + (int64_t)data[3] + (int64_t)data[4], j;
    if ((int64_t)dim != k || (int64_t)expanded != k) return -1;
    for (j = 0; j < k; j++) out[j] = exp(x[j]);
    return 0;
}

/* mu_bar | x, y ~ Normal(mean, cov) at each of n rows of xs (n x k): mean (n x 4), cov
 * (n x 4 x 4). 0, -1 (bad block), -2 (no memory), or 4 + 10 i at the failed row i. */
int64_t cxi_moments(int64_t n, const double *xs, const double *data, double *mean,
                    double *cov) {
    cxi_data D;
    cxi_work W;
    double stack[CXI_STACK], *buf = stack;
    int64_t k, s, i, size, rc = 0;
    if (cxi_parse(data, &D)) return -1;
    k = 4 + D.ns + D.nk;
    size = cxi_work_size(D.ng, D.nt);
    if (size > CXI_STACK) {
        buf = (double *)malloc(sizeof(double) * (size_t)size);
        if (buf == NULL) return -2;
    }
    cxi_work_init(&W, buf, D.ng, D.nt);
    for (s = 0; s < n; s++) {
        if (cxi_factor(&D, xs + s * k, &W)) { rc = 4 + 10 * s; break; }
        for (i = 0; i < 4; i++) mean[4 * s + i] = W.m_mu[i];
        for (i = 0; i < 16; i++) cov[16 * s + i] = W.tinv[i];
    }
    if (buf != stack) free(buf);
    return rc;
}

/* One joint draw of (mu_bar, v) | x, y per row of xs (n x k): mu_bar = m_mu + L e_mu
 * (L L' = T^-1, the Schur complement's inverse), then v | mu_bar ~ Normal(Pvv^-1 (b_v - K F
 * mu_bar), Pvv^-1) with Pvv^-1 = Dv^-1 + Dv^-1 K rg K' Dv^-1 (cxi_factor's S form), drawn as
 * the sum of Dv^-1/2 e_v and Dv^-1 K R e_g (R = diag(rc) L^-T, L L' = S: R R' = rg).
 * normals: n x m, m = 4 + na + ng: [0, 4) e_mu, [4, 4 + na) e_v (one per attribute),
 * [4 + na, m) e_g (one per group).
 * O(entries + groups^3) per draw. Needs pack_draws_c's block. 0, -1, -2, or 4 + 10 i at the
 * failed row i. */
int64_t cxi_draw(int64_t n, const double *xs, const double *normals, const double *data,
                 double *mu_out, double *v_out) {
    cxi_data D;
    cxi_work W;
    double stack[CXI_STACK], *buf = stack, *tv, *dva, *wy, *rz, mu[4];
    double l4[16], s4a[16], s4b[16], ld;
    int64_t k, s, i, j, a, e, g, h, c, size, m, na, ng, rc = 0;
    if (cxi_parse(data, &D) || !D.full) return -1;
    ng = D.ng;
    na = D.na;
    k = 4 + D.ns + D.nk;
    m = 4 + na + ng;
    size = cxi_work_size(ng, D.nt) + 2 * na + 2 * ng;
    if (size > CXI_STACK) {
        buf = (double *)malloc(sizeof(double) * (size_t)size);
        if (buf == NULL) return -2;
    }
    cxi_work_init(&W, buf, ng, D.nt);
    tv = buf + cxi_work_size(ng, D.nt);
    dva = tv + na;
    wy = dva + na;
    rz = wy + ng;
    for (s = 0; s < n; s++) {
        const double *nr = normals + s * m, *x = xs + s * k;
        if (cxi_factor(&D, x, &W)) { rc = 4 + 10 * s; break; }
        /* mu_bar = m_mu + L e_mu, L the Cholesky factor of T^-1 */
        if (cxi_chol_inv(4, W.tinv, s4a, l4, s4b, &ld)) { rc = 4 + 10 * s; break; }
        for (i = 0; i < 4; i++) {
            mu[i] = W.m_mu[i];
            for (j = 0; j <= i; j++) mu[i] += l4[4 * i + j] * nr[j];
            mu_out[4 * s + i] = mu[i];
        }
        /* R e_g with R = diag(rc) L^-T (S = L L', cxi_factor's W.linv = L^-1): R R' = rc
         * S^-1 rc = rg, also where rc -> 0 (tau -> 0) leaves rg singular */
        for (g = 0; g < ng; g++) {
            rz[g] = 0.0;
            for (h = g; h < ng; h++) rz[g] += W.linv[h * ng + g] * nr[4 + na + h];
            rz[g] *= W.rc[g];
            wy[g] = W.w2[g] * D.ysum[g] / D.gn[g] - W.fg[g] * mu[(int64_t)D.gc[g]];
            W.kb[g] = 0.0;
        }
        /* t_v = b_v - K F mu_bar, K' Dv^-1 t_v */
        for (a = 0; a < na; a++) {
            int64_t ka = (int64_t)D.kind[a];
            double d = W.p[ka], t = 0.0;
            for (c = 0; c < 4; c++) {
                d += D.ksum[4 * a + c] * W.u[c];
                t += W.u[c] * D.dsum[4 * a + c];
            }
            dva[a] = 1.0 / d;
            for (e = (int64_t)D.eptr[a]; e < (int64_t)D.eptr[a + 1]; e++)
                t += D.ek[e] * wy[(int64_t)D.eg[e]];
            tv[a] = t;
            for (e = (int64_t)D.eptr[a]; e < (int64_t)D.eptr[a + 1]; e++)
                W.kb[(int64_t)D.eg[e]] += D.ek[e] * dva[a] * t;
        }
        for (g = 0; g < ng; g++) {
            W.rkb[g] = rz[g];  /* rg K'Dv^-1 t_v + R e_g: mean and noise share K */
            for (h = 0; h < ng; h++) W.rkb[g] += W.rg[g * ng + h] * W.kb[h];
        }
        for (a = 0; a < na; a++) {
            double acc = tv[a];
            for (e = (int64_t)D.eptr[a]; e < (int64_t)D.eptr[a + 1]; e++)
                acc += D.ek[e] * W.rkb[(int64_t)D.eg[e]];
            v_out[na * s + a] = dva[a] * acc + sqrt(dva[a]) * nr[4 + a];
        }
    }
    if (buf != stack) free(buf);
    return rc;
}
"""

#: Loaded libraries by source key (a registered prior changes the source); None: failed.
_LIBS: dict = {}


def source() -> str:
    """Return the kernels' C source, with ``prior()`` generated from the priors' table."""
    return _TEMPLATE.replace("/*@PRIOR@*/", c_source())


def cache_dir() -> Path:
    """Folder of the compiled kernels (:func:`bayesbias.config.cache_dir` ``("kernels")``)."""
    return _cache_dir("kernels")


def _compiler() -> str | None:
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or \
        shutil.which("clang")
    return cc if cc and sys.platform != "win32" else None


def _build(cc: str, text: str) -> Path | None:
    key = hashlib.sha256("\0".join([text, cc, *FLAGS]).encode()).hexdigest()[:16]
    target = cache_dir() / f"cellmarginal-{key}.so"
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        src, so = Path(tmp) / "k.c", Path(tmp) / "k.so"
        src.write_text(text)
        res = subprocess.run([cc, *FLAGS, "-o", str(so), str(src), "-lm"],
                             capture_output=True, text=True, timeout=120)
        if res.returncode != 0 or not so.is_file():
            return None
        os.replace(so, target)
    return target


def library(extra: str = ""):
    """Return the compiled kernels (a ``ctypes.CDLL``), or None without a working C compiler.

    `extra`: C source compiled after the shared kernels into a library of its own (a
    family's kernel, e.g. :mod:`.embedding_level`'s, so the shared kernels' source and their
    cached build stay as they are). Set ``BAYESBIAS_KERNEL=pymc`` to do without them (the
    PyMC model is then sampled).
    """
    if os.environ.get("BAYESBIAS_KERNEL", "").lower() in ("pymc", "numba"):
        return None  # "numba": the name of the former fallback, same meaning
    text = source() + extra
    if text in _LIBS:
        return _LIBS[text]
    cc = _compiler()
    lib = None
    if cc is not None:
        try:
            path = _build(cc, text)
            lib = ctypes.CDLL(str(path)) if path is not None else None
        except (OSError, subprocess.SubprocessError):
            lib = None
    _LIBS[text] = lib
    return lib


class CFunc:
    """A C entry point: its ``address`` (for nutpie) and its ``ctypes`` function."""

    def __init__(self, lib, name: str, n_sizes: int):
        fn = getattr(lib, name)
        fn.restype = ctypes.c_int64
        # logp(dim, x, grad, logp, data): one size; expand(dim, expanded, x, out, data): two
        fn.argtypes = [ctypes.c_uint64] * n_sizes + [ctypes.POINTER(ctypes.c_double)] * \
            (5 - n_sizes)
        self.ctypes = fn
        self.address = ctypes.cast(fn, ctypes.c_void_p).value


def entry_points(family: str):
    """Return ``(logp, expand)`` of `family` as :class:`CFunc`, or None.

    `family`: "cell", "grouped" (the cell kernel on groups of cells), "additive", "crossed",
    "crossed_grouped" (the crossed kernel on groups of cells), "crossed_classes" (on classes
    of cells that share connection and count), "crossed_integrated" (the crossed model's log
    scales with mu_bar and the attribute effects integrated out, on
    :func:`.crossed_integrated.pack_types_c`'s block; expanded: tau, sigma, omega).
    """
    lib = library()
    if lib is None:
        return None
    prefix = {"cell": "cm", "grouped": "cmg", "additive": "add", "crossed": "cx",
              "crossed_grouped": "cxg", "crossed_classes": "cxc",
              "crossed_integrated": "cxi"}[family]
    expand = {"grouped": "cm", "crossed_grouped": "cx",
              "crossed_classes": "cx"}.get(family, prefix)  # same parameters
    return CFunc(lib, f"{prefix}_logp", 1), CFunc(lib, f"{expand}_expand", 2)


def prior_logp(prior, v: float) -> tuple[float, float]:
    """Log-density of `prior` at `v` and its derivative, through the compiled ``prior()``."""
    lib = library()
    if lib is None:
        raise RuntimeError("no compiled kernels (no working C compiler)")
    fn = lib.bb_prior
    fn.restype = ctypes.c_double
    fn.argtypes = [ctypes.c_int64] + [ctypes.c_double] * 4 + [ctypes.POINTER(ctypes.c_double)]
    row = kernel_row(prior)
    g = ctypes.c_double()
    lp = fn(int(row[0]), row[2], row[3], row[4], float(v), ctypes.byref(g))
    return lp, g.value


def pack_cells(priors: np.ndarray, maps: np.ndarray, offsets: np.ndarray,
               cells: np.ndarray) -> np.ndarray:
    """One flat float64 array: what the hierarchical-type kernel ``cm_logp`` reads.

    ``priors`` (k, 5): one row per sampled value, :func:`bayesbias.models.priors.kernel_row`;
    ``maps`` (3, 4, k): M, T, S per connection as linear maps of the constrained values;
    ``offsets`` (2, 4): fixed parts of M and T; ``cells`` (4, ncell): connection, n, mean, ss.
    """
    k, nc = priors.shape[0], cells.shape[1]
    return np.ascontiguousarray(np.concatenate([
        [float(k), float(nc)], priors.ravel(), maps.ravel(), offsets.ravel(), cells.ravel()]))


def pack_additive(priors: np.ndarray, smap: np.ndarray, mu0: np.ndarray, s0: np.ndarray,
                  cells: np.ndarray, n_u: int) -> np.ndarray:
    """One flat float64 array: what the additive kernel ``add_logp`` reads.

    ``priors`` (k, 5) of the residual sds; ``smap[c]``: the sd of connection c; prior mean and
    sd of ``theta = (m, co)``; ``cells`` (5, ncell): unit, connection, n, mean, ss.
    """
    k, ncell = priors.shape[0], cells.shape[1]
    return np.ascontiguousarray(np.concatenate([
        [float(k), float(ncell), float(n_u), float(smap.size)], priors.ravel(), smap,
        mu0, s0, cells.ravel()]).astype(np.float64))
