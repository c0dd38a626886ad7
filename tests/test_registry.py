"""Registry and the three plugin routes: entry point, --plugin FILE_OR_MODULE, PE_HARNESS_PLUGINS."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import harness
from harness import PluginError, Spec, Supports, implementations, register
from harness.cli import main
from harness.core.registry import REGISTRY, Registry

EXAMPLE = Path(__file__).parent / "example_plugin"
BACKENDS = {"python", "numpy", "numba", "tensorflow", "torch"}

PLUGIN_SOURCE = textwrap.dedent('''
    import numpy as np
    from harness import register

    @register(name="{name}", backend="numpy")
    def build(spec):
        return lambda: np.zeros((spec.length, spec.d_model), dtype=spec.dtype)
''')


@pytest.fixture
def clean_registry():
    """Remove what a test registers, so tests stay independent."""
    before = {i.name for i in REGISTRY.all()}
    yield
    for impl in REGISTRY.all():
        if impl.name not in before:
            REGISTRY.remove(impl.name)


def test_builtins_cover_every_backend():
    impls = implementations()
    assert BACKENDS <= {i.backend for i in impls}
    for name in ("seed-python-loops", "seed-numpy-stack", "seed-tf-stack",
                 "seed-torch-stack", "seed-torch-cat"):
        assert REGISTRY.get(name).available


def test_missing_backend_is_unavailable_with_reason():
    registry = Registry()
    registry.register(name="needs-missing", backend="torch",
                      requires=["surely_not_installed_pkg"])(lambda spec: None)
    impl = registry.get("needs-missing")
    assert not impl.available
    assert "surely_not_installed_pkg is not installed" in impl.unavailable_reason()


def test_failing_availability_check_is_a_reason():
    registry = Registry()
    registry.register(name="gpu-only", backend="numpy",
                      check=lambda: 1 / 0)(lambda spec: None)
    assert "ZeroDivisionError" in registry.get("gpu-only").unavailable_reason()


def test_cuda_impl_is_unavailable_without_gpu():
    import torch

    impl = REGISTRY.get("torch-cuda-stack")
    assert impl.available == torch.cuda.is_available()
    if not impl.available:
        assert "CUDA" in impl.unavailable_reason()


def test_duplicate_name_from_another_module_is_refused():
    registry = Registry()
    f = lambda spec: None  # noqa: E731
    registry.register(name="x", backend="numpy")(f)
    g = lambda spec: None  # noqa: E731
    g.__module__ = "elsewhere"
    with pytest.raises(ValueError, match="already registered"):
        registry.register(name="x", backend="numpy")(g)


def test_supports_declares_and_describes():
    s = Supports(layouts=("concat",), freq_shifts=(1,))
    assert s(Spec(4, 8, layout="concat", freq_shift=1)) is None
    assert "layout" in s(Spec(4, 8))
    assert "freq_shift" in s(Spec(4, 8, layout="concat"))
    assert "cos_first" in s(Spec(4, 8, layout="concat", freq_shift=1, cos_first=True))
    assert s.describe().startswith("concat f32/f64 shift=1")


def assert_plugin_registered(name: str, origin: str) -> None:
    """Registered by that module, and its factory builds the table the plugin returns."""
    impl = REGISTRY.get(name)
    assert (impl.backend, impl.device, impl.workload) == ("numpy", "cpu", "table")
    assert impl.origin == origin and impl.available
    out = impl.build(Spec(3, 4, dtype="float64"))()
    assert out.shape == (3, 4) and out.dtype == np.float64 and not out.any()


def test_plugin_from_file(tmp_path, clean_registry):
    path = tmp_path / "my_impl.py"
    path.write_text(PLUGIN_SOURCE.format(name="from-file"))
    module = harness.load_plugin(str(path))
    assert_plugin_registered("from-file", module.__name__)


def test_plugin_from_module(tmp_path, monkeypatch, clean_registry):
    (tmp_path / "my_plugin_mod.py").write_text(PLUGIN_SOURCE.format(name="from-module"))
    monkeypatch.syspath_prepend(str(tmp_path))
    harness.load_plugin("my_plugin_mod")
    assert_plugin_registered("from-module", "my_plugin_mod")


def test_plugin_from_env(tmp_path, monkeypatch, clean_registry, capsys):
    path = tmp_path / "env_impl.py"
    path.write_text(PLUGIN_SOURCE.format(name="from-env"))
    monkeypatch.setenv("PE_HARNESS_PLUGINS", str(path))
    assert main(["list", "--only", "from-env"]) == 0
    assert "from-env" in capsys.readouterr().out


def test_plugin_from_entry_point(tmp_path, monkeypatch, clean_registry):
    """Expose the example package as an installed distribution (a dist-info on sys.path)."""
    dist = tmp_path / "pe_harness_example-0.1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: pe-harness-example\nVersion: 0.1.0\n")
    (dist / "entry_points.txt").write_text("[pe_harness.impls]\nexample = pe_harness_example\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(EXAMPLE))
    names = harness.core.plugins.load_entry_points()
    assert "example" in names
    impl = REGISTRY.get("example-entry-point")
    out = impl.build(Spec(5, 8))()
    np.testing.assert_allclose(out, harness.reference(Spec(5, 8)), atol=1e-6)
    sys.modules.pop("pe_harness_example", None)


@pytest.mark.parametrize("target, message", [
    ("no/such/file.py", "does not exist"),
    ("no_such_module_xyz", "no such file or module"),
])
def test_bad_plugin_is_a_clear_error(target, message):
    with pytest.raises(PluginError, match=message):
        harness.load_plugin(target)


def test_plugin_that_raises_on_import_is_named(tmp_path, capsys):
    path = tmp_path / "broken.py"
    path.write_text("raise RuntimeError('boom')\n")
    assert main(["list", "--plugin", str(path)]) == 2
    err = capsys.readouterr().err
    assert "broken.py" in err and "boom" in err


def test_register_returns_the_factory_unchanged(clean_registry):
    def build(spec):
        return lambda: None

    assert register(name="unchanged", backend="numpy")(build) is build


def test_to_numpy_handles_every_backend():
    import tensorflow as tf
    import torch

    ref = np.arange(6, dtype=np.float32).reshape(2, 3)
    for value in (ref, torch.from_numpy(ref), tf.constant(ref), torch.from_numpy(ref).bfloat16()):
        np.testing.assert_array_equal(harness.to_numpy(value), ref)
    assert harness.dtype_name(torch.zeros(1, dtype=torch.bfloat16)) == "bfloat16"
    assert harness.dtype_name(tf.zeros(1, dtype=tf.float16)) == "float16"


def test_plugin_package_directory_is_imported_as_a_module(tmp_path, monkeypatch, clean_registry):
    package = tmp_path / "my_plugin_pkg"
    package.mkdir()
    (package / "__init__.py").write_text(PLUGIN_SOURCE.format(name="from-package"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    harness.load_plugin("my_plugin_pkg")
    assert_plugin_registered("from-package", "my_plugin_pkg")


@pytest.mark.parametrize("stack, cat", [("numpy-stack", "numpy-cat"), ("torch-stack", "torch-cat"),
                                        ("tf-stack", "tf-cat")])
def test_stack_and_cat_variants_are_two_algorithms(stack, cat):
    """A name means one algorithm: -stack interleaves and -cat concatenates whatever Spec they are
    handed (their supports() keep each to its own layout), not one function behind two names."""
    for spec in (Spec(3, 6, dtype="float64"), Spec(3, 6, dtype="float64", layout="concat")):
        interleaved, concat = (harness.reference(spec.replace(layout=layout))
                               for layout in ("interleaved", "concat"))
        for name, want in ((stack, interleaved), (cat, concat)):
            got = harness.to_numpy(REGISTRY.get(name).build(spec)())
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-12, err_msg=f"{name} {spec.short()}")
    assert REGISTRY.get(stack).supports(Spec(3, 6, layout="concat"))
    assert REGISTRY.get(cat).supports(Spec(3, 6))


def test_a_cuda_twin_is_the_same_factory_called_on_the_gpu():
    registry = Registry()

    @registry.register(name="twin-cpu", backend="numpy", supports=Supports(), cuda="twin-gpu")
    def build(spec, device="cpu"):
        """Says where it runs."""
        return lambda: device

    cpu, gpu = registry.get("twin-cpu"), registry.get("twin-gpu")
    assert (cpu.device, gpu.device) == ("cpu", "cuda")
    assert cpu.build(Spec(4, 4))() == "cpu" and gpu.build(Spec(4, 4))() == "cuda"
    assert gpu.supports_fn is cpu.supports_fn and gpu.origin == cpu.origin and "Says where" in gpu.doc
    built_in = REGISTRY.get("grid-torch-cuda")
    assert built_in.device == "cuda" and built_in.build.keywords == {"device": "cuda"}


def test_a_checkout_registers_its_own_impls_whatever_an_editable_install_maps(tmp_path):
    """A second checkout (a git worktree) of an editable install: harness.impls must be this
    tree's impls/, not the tree the install points at (which here would raise)."""
    import subprocess

    other = tmp_path / "other" / "impls"
    other.mkdir(parents=True)
    (other / "__init__.py").write_text("raise RuntimeError('the other checkout was imported')\n")
    root = Path(harness.__file__).resolve().parents[1]
    script = textwrap.dedent(f"""
        import importlib.util, sys
        class Editable:   # what an editable finder does: maps the name to its own tree
            @staticmethod
            def find_spec(name, path=None, target=None):
                if name == "harness.impls":
                    return importlib.util.spec_from_file_location(
                        name, {str(other / "__init__.py")!r},
                        submodule_search_locations=[{str(other)!r}])
        sys.meta_path.insert(0, Editable)
        import harness.impls
        print(harness.impls.__file__)
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-800:]
    assert Path(done.stdout.strip()) == root / "impls" / "__init__.py"


def test_an_installed_harness_imports_harness_impls_as_installed(tmp_path):
    from harness.core.plugins import SourceImpls, use_source_impls

    before = [f for f in sys.meta_path if isinstance(f, SourceImpls)]
    use_source_impls(tmp_path)   # no pyproject.toml, no impls/: an installed wheel's layout
    assert [f for f in sys.meta_path if isinstance(f, SourceImpls)] == before
