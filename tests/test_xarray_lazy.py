"""xarray through :mod:`bayesbias._xarray`: no dask or sparse import, the same answers."""

import subprocess
import sys
import textwrap

import pytest


def _run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                         text=True, check=True)
    return out.stdout.strip()


def test_dask_and_sparse_arrays_imported_later_are_recognised():
    pytest.importorskip("dask.array")
    code = """
        import numpy as np
        {first}
        import dask.array as da
        import xarray as xr
        a = xr.DataArray(da.ones((4, 4), chunks=2), dims=("x", "y"))
        masked = xr.DataArray(da.ma.masked_array(da.arange(3.0), mask=[True, False, False]))
        out = [type(a.data).__module__, str(a.chunks), repr(a).splitlines()[1][:10],
               str(masked.values.tolist())]
        try:
            import sparse
            s = xr.DataArray(sparse.COO.from_numpy(np.eye(2)), dims=("p", "q"))
            out += [type(s.data).__name__, str(s.to_numpy().tolist())]
        except ImportError:
            pass
        print("|".join(out))
    """
    ours = _run(code.format(first="from bayesbias._xarray import lazy_duck_arrays, xr"))
    theirs = _run(code.format(first="import xarray"))
    assert ours == theirs
    assert "dask.array" in ours and "nan" in ours


def test_no_op_once_xarray_has_looked_them_up():
    got = _run("""
        import numpy as np, xarray as xr
        xr.Variable("x", np.zeros(2))  # xarray's own lookup
        from bayesbias._xarray import lazy_duck_arrays
        print(lazy_duck_arrays())
    """)
    assert got == "[]"


def test_dask_collections_recognised_once_dask_is_imported():
    pytest.importorskip("dask")
    got = _run("""
        import numpy as np
        from bayesbias._xarray import lazy_dask_collections, xr
        from xarray.namedarray import utils
        before = utils.is_dask_collection(np.zeros(2))
        import dask
        delayed = dask.delayed(sum)([1, 2])
        print(before, utils.is_dask_collection(delayed), utils.is_dask_collection(np.zeros(2)),
              lazy_dask_collections())
    """)
    assert got == "False True False False"
