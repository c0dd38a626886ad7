"""Half-precision stores from Numba kernels (impls/_numba_half.py) and the bfloat16 roofs.

Each codec must round a float32 exactly as NumPy (float16) or torch (bfloat16) would, across
the ranges that trip hand-written rounding: ties, subnormals, overflow, infinities and NaN.
"""

from __future__ import annotations

import numpy as np
import pytest

numba = pytest.importorskip("numba")
torch = pytest.importorskip("torch")

from harness import implementations  # noqa: E402
from harness.bench.roofs import ROOF_REGISTRY  # noqa: E402
from harness.core.kinds.rotary import RotarySpec  # noqa: E402

implementations()   # loads the built-ins under harness.impls
from harness.impls._numba_half import Storage, codecs  # noqa: E402


def _awkward_float32() -> np.ndarray:
    """Random magnitudes over every exponent, plus the values where rounding goes wrong."""
    rng = np.random.default_rng(7)
    bits = rng.integers(0, 2**32, 4096, dtype=np.uint64).astype(np.uint32)
    special = np.array([0.0, -0.0, 1.0, 65504.0, 65520.0, 65519.99, 1e5, 6.1e-5, 5.96e-8, 2.98e-8,
                        1e-10, 1.00048828125, 1.0009765625 + 2**-11, np.inf, -np.inf, np.nan],
                       dtype=np.float32)
    ties = (np.arange(1, 200, dtype=np.uint32) << np.uint32(16)) | np.uint32(0x8000)   # bfloat16 ties
    # NaNs whose payload lies only below bfloat16's bits: dropped, they would read as infinities
    low_nans = np.array([0x7F800001, 0xFF800001, 0x7F80FFFF, 0x7FFFFFFF], dtype=np.uint32)
    return np.concatenate([bits.view(np.float32), special, ties.view(np.float32),
                           low_nans.view(np.float32)])


@pytest.fixture(scope="module")
def kernels():
    @numba.njit
    def stores(out, x, store):
        for i in range(x.size):
            out[i] = store(x[i])

    @numba.njit
    def loads(out, b, load):
        for i in range(b.size):
            out[i] = load(b[i])

    return stores, loads


@pytest.mark.filterwarnings("ignore:overflow")
def test_float16_store_rounds_as_numpy_and_loads_exactly(kernels):
    stores, loads = kernels
    x, codec = _awkward_float32(), codecs()["float16"]
    bits = np.empty(x.size, np.uint16)
    stores(bits, x, codec.store)
    np.testing.assert_array_equal(bits.view(np.float16), x.astype(np.float16))
    back = np.empty(x.size, np.float32)
    loads(back, bits, codec.load)
    np.testing.assert_array_equal(back, x.astype(np.float16).astype(np.float32))


def test_bfloat16_store_rounds_as_torch_and_loads_exactly(kernels):
    stores, loads = kernels
    x, codec = _awkward_float32(), codecs()["bfloat16"]
    bits = np.empty(x.size, np.uint16)
    stores(bits, x, codec.store)
    ours = torch.from_numpy(bits).view(torch.bfloat16)
    theirs = torch.from_numpy(x).to(torch.bfloat16)
    assert torch.equal(ours.isnan(), theirs.isnan())
    finite = ~theirs.isnan()
    assert torch.equal(ours[finite], theirs[finite])
    back = np.empty(x.size, np.float32)
    loads(back, bits, codec.load)
    np.testing.assert_array_equal(back, ours.float().numpy())
    np.testing.assert_array_equal(Storage("bfloat16").encode(x[finite.numpy()]), bits[finite.numpy()])


def test_storage_hands_back_the_same_memory():
    bits = np.arange(6, dtype=np.uint16)
    half, brain = Storage("float16").result()(bits), Storage("bfloat16").result()(bits)
    assert half.dtype == np.float16 and np.shares_memory(half, bits)
    assert brain.dtype == torch.bfloat16 and brain.data_ptr() == bits.ctypes.data
    assert Storage("float32").kernel == np.float32 and Storage("bfloat16").kernel == np.uint16


@pytest.mark.parametrize("name", ["roof-recycled-fill-cache", "roof-recycled-torch-fill-cache"])
def test_bfloat16_fill_roofs_write_bfloat16(name):
    spec = RotarySpec(8, 4, dtype="bfloat16")
    call = ROOF_REGISTRY.get(name).build(spec)
    cos, sin = call()
    assert cos.dtype == sin.dtype == torch.bfloat16 and tuple(cos.shape) == (8, 4)
    assert torch.all(cos == 1) and torch.all(sin == 1)


def test_bfloat16_apply_roof_scales_bfloat16():
    spec = RotarySpec(8, 4, dtype="bfloat16")
    q = np.full((1, 1, 8, 4), 1.5, np.float32)
    out_q, out_k = ROOF_REGISTRY.get("roof-recycled-torch-scale-apply").build(spec, q, q, np.arange(8))()
    assert out_q.dtype == torch.bfloat16 and torch.all(out_q == 3) and torch.all(out_k == 3)
    assert ROOF_REGISTRY.get("roof-recycled-scale-apply").supports(spec)   # NumPy has no bfloat16


def test_bfloat16_forward_roof_adds_in_bfloat16():
    from harness import Spec

    spec = Spec(8, 4, dtype="bfloat16")
    x = np.full((2, 8, 4), 0.5, np.float32)
    out = ROOF_REGISTRY.get("roof-recycled-torch-add").build(spec, x)()
    assert out.dtype == torch.bfloat16 and tuple(out.shape) == (2, 8, 4) and torch.all(out == 1.5)


def test_kept_half_precision_bits_can_be_poisoned():
    """bench poisons what a builder keeps (a recycler's uint16 buffers): all bits set, NaN as
    float16 and as bfloat16."""
    from harness.backends.numpy import poison

    bits = np.zeros(4, np.uint16)
    assert poison(bits)
    assert np.all(np.isnan(bits.view(np.float16)))
    assert torch.all(torch.from_numpy(bits).view(torch.bfloat16).isnan())
    assert not poison(np.zeros(2, bool))


@pytest.mark.filterwarnings("ignore:overflow")
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_vector_ir_stores_give_the_codecs_bits(dtype, kernels):
    """`vector_bits`, the codecs' stores for kernels written as IR (the table's tile), rounds
    16 lanes at a time to the scalar codec's bits; `finite` drops only the NaN case."""
    from llvmlite import ir
    from numba.core import cgutils, types
    from numba.extending import intrinsic

    from harness.impls._numba_half import vector_bits

    lanes = 16

    def make(finite: bool):
        @intrinsic
        def store16(typingctx, out, x, i):
            def codegen(context, builder, signature, args):
                o, a = (context.make_array(t)(context, builder, v) for t, v in zip(signature.args[:2], args))
                vf = ir.VectorType(ir.FloatType(), lanes)
                value = builder.load(builder.bitcast(builder.gep(a.data, [args[2]]), vf.as_pointer()), align=4)
                bits = vector_bits(builder, value, dtype, finite)
                builder.store(bits, builder.bitcast(builder.gep(o.data, [args[2]]), bits.type.as_pointer()),
                              align=2)
                return context.get_dummy_value()
            return types.void(out, x, i), codegen

        @numba.njit
        def run(out, x):
            for i in range(0, x.size - lanes + 1, lanes):
                store16(out, x, i)
        return run

    stores, _ = kernels
    x = _awkward_float32()
    x = x[: x.size - x.size % lanes]
    finite = x[np.isfinite(x)]
    for lanes_finite, values in ((False, x), (True, finite[: finite.size - finite.size % lanes])):
        got, want = np.empty(values.size, np.uint16), np.empty(values.size, np.uint16)
        make(lanes_finite)(got, values)
        stores(want, values, codecs()[dtype].store)
        np.testing.assert_array_equal(got, want)
