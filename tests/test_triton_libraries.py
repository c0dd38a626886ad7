"""The library GPU kernels' adapters (impls/libraries: Liger, FlashAttention, xformers,
torch.compile): what each declares, and, under Triton's interpreter (`nox -s triton`), the Triton
ones judged on the CPU in the forms they declare.

FlashAttention's `apply_rotary` enters `torch.cuda.device(x.device.index)`, which no CPU tensor
can; so its kernel is checked here with that one context made a no-op (monkeypatch, this test
only) and its tensors on the CPU; `verify` runs the registered, unpatched one on a GPU.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import re
from pathlib import Path

import pytest

from harness import ApplyForms, RotarySpec, implementations
from harness.core import checks
from harness.core.registry import Implementation

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
HAS_TRITON = importlib.util.find_spec("triton") is not None
interpreted = pytest.mark.skipif(not (INTERPRET and HAS_TRITON),
                                 reason="needs triton and TRITON_INTERPRET=1 (`nox -s triton`)")
CONSTRAINTS = Path(__file__).resolve().parent.parent / "constraints.txt"
IMPLS = {i.name: i for i in implementations()}

#: The forms these kernels take beyond the original: sequence first, GQA down to one k head,
#: per-sequence ids, partial rotary, an offset, both layouts, bfloat16 and float64.
FORM_SPECS = {
    "bshd-gqa-f32": RotarySpec(24, 16, qk_layout="bshd", kv_heads=1, offset=3),
    "bshd-batch-ids-f16": RotarySpec(20, 32, rotary_dim=16, qk_layout="bshd", kv_heads=2,
                                     position_ids="batch", dtype="float16"),
    "bhsd-interleaved-f32": RotarySpec(18, 16, layout="interleaved", offset=100),
    "bshd-bf16": RotarySpec(12, 16, qk_layout="bshd", kv_heads=1, dtype="bfloat16"),
    "bshd-llama3-f64": RotarySpec(16, 16, qk_layout="bshd", dtype="float64", rope_type="llama3",
                                  factor=8.0, original_max_position_embeddings=8, base=500000.0),
}


def pinned(name: str) -> str:
    found = re.search(rf"^{re.escape(name)}==(\S+)", CONSTRAINTS.read_text(), re.MULTILINE)
    return found.group(1)


def judge(impl: Implementation, spec: RotarySpec) -> checks.Check:
    result = checks.check(impl, spec)
    assert result.status in ("pass", "skip"), f"{impl.name} on {spec.short()}: {result.reason}"
    return result


@interpreted
@pytest.mark.parametrize("name", sorted(FORM_SPECS))
def test_liger_passes_in_every_form_it_declares(name):
    spec = FORM_SPECS[name]
    result = judge(IMPLS["liger-rope-apply"], spec)
    declared = spec.qk_layout == "bshd" and spec.layout == "half" and spec.dtype != "bfloat16"
    assert (result.status == "pass") == declared


@interpreted
def test_liger_rotates_in_the_memory_it_was_given():
    """Its declared in-place form is real: what it returns is the memory it was handed."""
    import torch

    from harness.impls.libraries import liger

    spec = FORM_SPECS["bshd-gqa-f32"]
    q = torch.ones((2, spec.length, 4, spec.head_dim), dtype=torch.float32, device=liger.DEVICE)
    k = torch.ones((2, spec.length, 1, spec.head_dim), dtype=torch.float32, device=liger.DEVICE)
    ids = torch.arange(spec.length, device=liger.DEVICE)
    first = liger.build_liger_rope_apply(spec)(q, k, ids)
    assert [t.data_ptr() for t in first] == [q.data_ptr(), k.data_ptr()]
    assert [tuple(t.shape) for t in first] == [tuple(q.shape), tuple(k.shape)]


def test_liger_refuses_bfloat16_only_under_the_interpreter():
    reason = IMPLS["liger-rope-apply"].supports(RotarySpec(8, 16, qk_layout="bshd", dtype="bfloat16"))
    assert (reason is not None) == INTERPRET
    if INTERPRET:
        assert "triton-lang/triton#10945" in reason


@pytest.fixture
def flash_attn_on_the_cpu(monkeypatch):
    """flash-attn's apply_rotary with `torch.cuda.device` a no-op: its kernel on CPU tensors."""
    import torch

    from harness.impls.libraries import flash_attn_triton

    if flash_attn_triton.missing():
        pytest.skip(flash_attn_triton.missing())
    monkeypatch.setattr(torch.cuda, "device", lambda index: contextlib.nullcontext())
    return flash_attn_triton


@interpreted
@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("name", sorted(FORM_SPECS))
def test_flash_attn_kernel_passes_on_the_cpu(flash_attn_on_the_cpu, name, inplace):
    registered = IMPLS["flash-attn-triton-rope-apply" + ("-inplace" if inplace else "")]
    build = functools.partial(flash_attn_on_the_cpu.build, inplace=inplace, device="cpu")
    impl = Implementation(registered.name, "triton", "cpu", build, registered.supports_fn,
                          workload="apply", kind="rotary", forms=registered.forms)
    spec = FORM_SPECS[name]
    result = judge(impl, spec)
    assert (result.status == "skip") == (spec.position_ids == "batch" or spec.dtype == "float64")


@pytest.mark.parametrize("name", ["bshd-gqa-f32", "bshd-batch-ids-f16", "bhsd-interleaved-f32"])
def test_compiled_llama_apply_takes_its_forms_on_the_cpu(monkeypatch, name):
    """The adapter's cos/sin and unsqueeze_dim in each form, judged with the model's eager apply
    (torch.compile made the identity here: compiling is the GPU run's; this checks the wiring)."""
    import torch

    from harness.impls.libraries import transformers_compiled

    monkeypatch.setattr(torch, "compile", lambda fn, **options: fn)
    registered = IMPLS["transformers-llama-rope-apply-compiled"]
    build = functools.partial(transformers_compiled.build, device="cpu")
    impl = Implementation(registered.name, "torch", "cpu", build, registered.supports_fn,
                          workload="apply", kind="rotary", forms=registered.forms)
    spec = FORM_SPECS[name]
    result = judge(impl, spec)
    assert (result.status == "pass") == (spec.layout == "half" and spec.rotary_dim is None)


def test_compiled_llama_apply_compiles_once_per_shape_past_dynamos_default_limit(monkeypatch):
    """verify builds the compiled apply at many shapes in one process: with dynamo's limit at 2
    (8 by default) a third shape would fail under fullgraph=True, as it did on the H200."""
    import torch
    import torch._dynamo

    from harness.impls.libraries import transformers_compiled

    compile_eager = torch.compile
    monkeypatch.setattr(torch, "compile",
                        lambda fn, **options: compile_eager(fn, **{**options, "backend": "eager"}))
    for name in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit"):
        if hasattr(torch._dynamo.config, name):
            monkeypatch.setattr(torch._dynamo.config, name, 2)
    torch._dynamo.reset()
    registered = IMPLS["transformers-llama-rope-apply-compiled"]
    build = functools.partial(transformers_compiled.build, device="cpu")
    impl = Implementation(registered.name, "torch", "cpu", build, registered.supports_fn,
                          workload="apply", kind="rotary", forms=registered.forms)
    try:
        for name in ("bshd-gqa-f32", "bshd-bf16", "bshd-llama3-f64"):
            assert judge(impl, FORM_SPECS[name]).status == "pass", name
    finally:
        torch._dynamo.reset()


def test_declared_forms():
    """What each kernel takes: the forms bench and verify hand it, never converted in a call."""
    forms = {name: impl.forms for name, impl in IMPLS.items()}
    assert forms["liger-rope-apply"] == ApplyForms(("bshd",), gqa=True, batch_positions=True,
                                                   in_place=True)
    assert forms["flash-attn-triton-rope-apply"] == ApplyForms(("bhsd", "bshd"), gqa=True)
    assert forms["flash-attn-triton-rope-apply-inplace"].in_place
    assert forms["xformers-rope-padded"] == ApplyForms(("bshd",), gqa=True, batch_positions=True)
    assert forms["transformers-llama-rope-apply-compiled"].layouts == ("bhsd", "bshd")


def test_gpu_only_kernels_say_why_they_cannot_run_here():
    import torch

    for name in ("flash-attn-triton-rope-apply", "xformers-rope-padded",
                 "transformers-llama-rope-apply-compiled"):
        impl = IMPLS[name]
        assert impl.device == "cuda"
        if not torch.cuda.is_available():
            assert impl.unavailable_reason()


def test_library_versions_are_the_pinned_ones_where_installed():
    for name, dist in (("liger-rope-apply", "liger-kernel"),
                       ("flash-attn-triton-rope-apply", "flash-attn"),
                       ("xformers-rope-padded", "xformers")):
        version = IMPLS[name].library_version
        assert IMPLS[name].library == dist
        if version is not None:
            assert version == pinned(dist)


def test_xformers_keywords_follow_the_rope_type():
    from harness.impls.libraries.xformers_rope import XFORMERS, scaling

    llama3 = RotarySpec(16, 16, rope_type="llama3", factor=8.0, original_max_position_embeddings=64,
                        low_freq_factor=1.0, high_freq_factor=4.0, base=500000.0)
    assert scaling(llama3) == {"theta": 500000.0, "adjacents": False, "use_dynamic_scaling": True,
                               "dynamic_old_context_len": 64.0, "dynamic_scale_factor": 8.0,
                               "dynamic_low_freq_factor": 1.0, "dynamic_high_freq_factor": 4.0}
    linear = RotarySpec(16, 16, rope_type="linear", factor=4.0, layout="interleaved")
    assert scaling(linear) == {"theta": 10000.0, "adjacents": True, "linear_scale": 4.0}
    assert "rope_type='yarn'" in XFORMERS(RotarySpec(16, 16, rope_type="yarn", factor=4.0,
                                                     original_max_position_embeddings=8))
    assert "rotary_dim=8" in XFORMERS(RotarySpec(16, 16, rotary_dim=8))
