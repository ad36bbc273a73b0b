"""Saved fits: reading a netCDF file back into a :class:`~bayesbias.models.result.Fit`.

Also the part of writing that is not the result's: the data groups stored beside the draws
(keeping xarray's writer from importing ``distributed`` is :mod:`bayesbias._xarray`'s).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .._xarray import xr
from ..config import CONNECTIONS
from ..errors import ModelSpecError
from .cells import Cells
from .families import family
from .marginal import word_summaries_supported
from .result import Fit
from .spec import ModelSpec, load_spec

__all__ = ["FitFileError", "load_fit"]


class FitFileError(ModelSpecError):
    """A saved fit that cannot be read: damaged, not a fit, or with external data links."""


def load_fit(path, spec=None) -> Fit:
    """Load a fit saved with :meth:`Fit.save`.

    Parameters
    ----------
    spec : str, path-like or ModelSpec, optional
        The spec the fit must have been made with; a mismatch raises
        :class:`~bayesbias.errors.ModelSpecError`. Without it, the stored spec is used after
        checking that it still hashes to the stored hash.
    """
    path = Path(path)
    if not path.is_file():
        raise FitFileError(f"{path}: no such fit file")
    _refuse_external(path)
    try:
        tree = xr.open_datatree(path)
        tree.load()
    except (OSError, ValueError, KeyError, TypeError, RuntimeError) as exc:
        raise FitFileError(f"{path}: not a readable fit file: {exc}") from None
    attrs = tree.attrs
    if "spec" not in attrs or "spec_hash" not in attrs:
        raise FitFileError(f"{path}: not a bayesbias fit (no spec in its attributes)")
    try:
        stored = ModelSpec.from_dict(json.loads(attrs["spec"]), f"{path} (stored spec)")
    except (json.JSONDecodeError, TypeError, AttributeError) as exc:
        raise FitFileError(f"{path}: damaged fit file (its stored spec is not valid: "
                           f"{exc})") from None
    if stored.hash != attrs["spec_hash"]:
        raise FitFileError(f"{path}: stored spec hashes to {stored.hash}, file says "
                           f"{attrs['spec_hash']}; the file was altered")
    if spec is not None:
        wanted = load_spec(spec)
        if wanted.hash != stored.hash:
            raise ModelSpecError(
                f"{path}: fitted with spec {stored.name!r} (hash {stored.hash}), which does not "
                f"match the requested spec {wanted.name!r} (hash {wanted.hash})")

    # a fit without per-word draws (bayesbias.models.word_summaries) has its parameters
    summaries = "mu" not in tree["posterior"].data_vars if "posterior" in tree.children \
        else False
    if summaries and word_summaries_supported(stored):
        mod = family(stored.family)
        if getattr(mod, "marginal_blocks", None) is None:  # crossed: its sampled parameters
            first = ("mu_bar", "tau", "sigma", "omega", "attribute_effect")
        else:
            first = tuple(b.name for b in mod.marginal_blocks(stored)[0])
    else:
        first = ("mu",)
    need = {"posterior": first, "constant_data": ("cell_rows", "cell_mean", "cell_ss",
                                                    "unit_class", "row_unit", "row_connection"),
            "observed_data": ("cosine_distance",)}
    for group, names in need.items():
        if group not in tree.children or any(n not in tree[group].data_vars for n in names):
            raise FitFileError(f"{path}: damaged fit file (group {group!r} lacks "
                               f"{', '.join(names)})")
    try:
        cells = _cells_from_groups(tree["constant_data"].to_dataset(),
                                   tree["observed_data"].to_dataset(), stored.level)
        fit = Fit(tree, stored, cells)
        fit.group_mean_draws()
    except (KeyError, ValueError, IndexError, TypeError) as exc:
        raise FitFileError(f"{path}: damaged fit file: {exc}") from None
    return fit


def _refuse_external(path: Path) -> None:
    """Raise FitFileError if an HDF5 file has external storage, virtual datasets or links.

    Such a file makes a reader pull bytes from other files (e.g. ``/etc/passwd``), which
    :meth:`Fit.save` would then copy. Files that are not HDF5 (netCDF-3) have no links.
    """
    try:
        import h5py
    except ImportError:  # pragma: no cover - h5netcdf/h5py come with the netCDF extra
        return
    try:
        if not h5py.is_hdf5(path):
            return
        f = h5py.File(path, "r")
    except OSError as exc:
        raise FitFileError(f"{path}: not a readable fit file: {exc}") from None
    bad = []

    def walk(group, prefix):
        for key in group.keys():
            name = f"{prefix}/{key}"
            link = group.get(key, getlink=True)
            if isinstance(link, (h5py.ExternalLink, h5py.SoftLink)):
                bad.append(f"{name} (a link)")
                continue
            obj = group[key]
            if isinstance(obj, h5py.Group):
                walk(obj, name)
            elif obj.is_virtual:
                bad.append(f"{name} (a virtual dataset)")
            elif obj.id.get_create_plist().get_external_count() > 0:
                bad.append(f"{name} (external storage)")

    with f:
        walk(f, "")
    if bad:
        raise FitFileError(f"{path}: refused: the file reads data from elsewhere through "
                           f"{', '.join(bad[:3])}; a saved fit never does")


def _data_groups(cells: Cells) -> tuple[xr.Dataset, xr.Dataset]:
    unit = cells.unit_dim
    coords = {unit: cells.units.tolist(), "connection": list(CONNECTIONS)}
    constant = xr.Dataset({
        "cell_rows": ((unit, "connection"), cells.n.astype(np.int64)),
        "cell_mean": ((unit, "connection"), cells.mean),
        "cell_ss": ((unit, "connection"), cells.ss),
        "unit_class": ((unit,), cells.unit_class.astype(str)),
        "row_unit": (("row",), cells.unit_idx),
        "row_connection": (("row",), cells.conn_idx),
    }, coords=coords)
    if cells.attr_idx is not None:
        constant["row_attribute"] = ("row",), cells.attr_idx
        constant["attribute_kind"] = ("attribute",), cells.attribute_kind.astype(str)
        constant = constant.assign_coords(attribute=cells.attributes.astype(str))
    if cells.embeddings is not None:  # a table of several embeddings (bayesbias.ensemble)
        constant["unit_base"] = (unit,), cells.unit_base.astype(str)
        constant["unit_embedding"] = (unit,), cells.unit_embedding
        constant["embedding_sample"] = ("embedding",), cells.embedding_sample.astype(str)
        constant = constant.assign_coords(embedding=cells.embeddings.astype(str))
        fac = (cells.sub_cells or {}).get("factor")
        if fac:  # a factor of the corpus samples (embedding_level.cells)
            constant["embedding_factor"] = ("embedding",), np.asarray(
                fac["levels"], dtype=str)[fac["embedding_level"]]
            constant["embedding_factor"].attrs.update(
                name=fac["name"], levels=[str(x) for x in fac["levels"]],
                numeric=int(fac["numeric"]), per=str(fac.get("per", "sample")))
            if "factors" in fac:  # several factors crossed: each one's levels, as JSON text
                constant["embedding_factor"].attrs["crossed"] = json.dumps({
                    "factors": [{"name": f["name"], "levels": [str(x) for x in f["levels"]],
                                 "numeric": bool(f["numeric"]),
                                 "per": str(f.get("per", "sample"))} for f in fac["factors"]],
                    "level_codes": np.asarray(fac["level_codes"]).tolist()})
    observed = xr.Dataset({"cosine_distance": (("row",), cells.y)})
    return constant, observed


def _cells_from_groups(constant: xr.Dataset, observed: xr.Dataset, level: str) -> Cells:
    unit = {"word": "protected_word", "class": "protected_class"}[level]
    return Cells(level=level, units=np.asarray(constant[unit].values, dtype=object),
                 unit_class=np.asarray(constant["unit_class"].values, dtype=object),
                 n=constant["cell_rows"].values.astype(np.int64),
                 mean=constant["cell_mean"].values, ss=constant["cell_ss"].values,
                 y=observed["cosine_distance"].values,
                 unit_idx=constant["row_unit"].values.astype(np.int32),
                 conn_idx=constant["row_connection"].values.astype(np.int32),
                 **({"attributes": np.asarray(constant["attribute"].values, dtype=object),
                     "attribute_kind": np.asarray(constant["attribute_kind"].values,
                                                  dtype=object),
                     "attr_idx": constant["row_attribute"].values.astype(np.int32)}
                    if "row_attribute" in constant else {}),
                 **({"unit_base": np.asarray(constant["unit_base"].values, dtype=object),
                     "unit_embedding": constant["unit_embedding"].values.astype(np.int32),
                     "embeddings": np.asarray(constant["embedding"].values, dtype=object),
                     "embedding_sample": np.asarray(constant["embedding_sample"].values,
                                                    dtype=object)}
                    if "unit_embedding" in constant else {}),
                 **({"sub_cells": {"factor": _factor_from(constant["embedding_factor"])}}
                    if "embedding_factor" in constant else {}))


def _factor_from(da: xr.DataArray) -> dict:
    levels = [str(x) for x in np.atleast_1d(da.attrs["levels"])]
    index = {lv: i for i, lv in enumerate(levels)}
    out = {"name": str(da.attrs["name"]), "levels": np.asarray(levels, dtype=object),
           "embedding_level": np.array([index[str(v)] for v in da.values], dtype=np.int64),
           "numeric": bool(int(da.attrs["numeric"])),
           "per": str(da.attrs.get("per", "sample"))}  # files before run factors: samples
    if "crossed" in da.attrs:
        crossed = json.loads(str(da.attrs["crossed"]))
        out["factors"] = [{"name": f["name"], "levels": np.asarray(f["levels"], dtype=object),
                           "numeric": bool(f["numeric"]), "per": str(f.get("per", "sample"))}
                          for f in crossed["factors"]]
        out["level_codes"] = np.asarray(crossed["level_codes"], dtype=np.int64)
    return out
