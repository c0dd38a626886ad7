"""`python -m harness check-model DIR` on tiny randomly initialised transformers models saved
here (no download): each positional tensor against what its config implies, and bad input."""

from __future__ import annotations

import json
import os
import shutil

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
safetensors_torch = pytest.importorskip("safetensors.torch")

from harness.cli import main  # noqa: E402

SMALL = dict(vocab_size=64, d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
             decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, pad_token_id=0,
             bos_token_id=1, eos_token_id=2, decoder_start_token_id=1)
INV_FREQ = "model.layers.{}.self_attn.rotary_emb.inv_freq"


def run(capsys, folder, *extra):
    """(exit code, the JSON object or the text, stderr)."""
    code = main(["check-model", str(folder), *extra])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if "--json" in extra else out), err


def rows(report):
    return {r["tensor"]: r for r in report["tensors"]}


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """One folder per tiny model, saved once with save_pretrained (safetensors)."""
    root = tmp_path_factory.mktemp("models")
    torch.manual_seed(0)
    t = transformers
    built = {
        "llama": t.LlamaForCausalLM(t.LlamaConfig(
            vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
            num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=128,
            rope_theta=500000.0)),
        "whisper": t.WhisperForConditionalGeneration(t.WhisperConfig(
            max_source_positions=40, max_target_positions=24, num_mel_bins=8, **SMALL)),
        "marian": t.MarianModel(t.MarianConfig(max_position_embeddings=48, **SMALL)),
        "gpt2": t.GPT2LMHeadModel(t.GPT2Config(vocab_size=64, n_embd=32, n_layer=1, n_head=2,
                                               n_positions=40)),
        "mae": t.ViTMAEForPreTraining(t.ViTMAEConfig(
            hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
            image_size=32, patch_size=8, decoder_hidden_size=16, decoder_num_hidden_layers=1,
            decoder_num_attention_heads=2, decoder_intermediate_size=32)),
    }
    mae = built["mae"]
    built["mae-fresh"] = mae
    paths = {}
    for name, model in built.items():
        if name == "mae":      # transformers 5.23 leaves a fresh ViT-MAE's grids at zero: fill
            model = type(mae)(mae.config)      # them with its own initialize_weights
            model.vit.embeddings.patch_embeddings.projection._is_hf_initialized = False
            model.vit.embeddings.initialize_weights()
            model.decoder.initialize_weights(model.vit.embeddings.patch_embeddings.num_patches)
        paths[name] = root / name
        model.save_pretrained(paths[name])
    return paths


def with_inv_freq(src, dst, base, dtype=torch.float32):
    """The Llama folder with a stored inv_freq per layer (older checkpoints), computed as
    transformers 4.30 did, in float32 (then held in `dtype`, as a model cast whole would)."""
    shutil.copytree(src, dst)
    tensors = safetensors_torch.load_file(dst / "model.safetensors")
    inv = 1.0 / (base ** (torch.arange(0, 16, 2).float() / 16))
    for layer in range(2):
        tensors[INV_FREQ.format(layer)] = inv.clone().to(dtype)
    safetensors_torch.save_file(tensors, dst / "model.safetensors", metadata={"format": "pt"})
    return dst


def test_llama_inv_freq_is_not_stored_and_the_config_spec_is_reported(models, capsys):
    code, report, _ = run(capsys, models["llama"], "--json")
    assert code == 0 and report["ok"] and report["model_type"] == "llama"
    [row] = report["tensors"]
    assert (row["tensor"], row["verdict"]) == ("inv_freq", "not stored")
    assert "head_dim=16" in row["implied"] and "base=500000" in row["implied"]


def test_a_stored_inv_freq_that_matches_the_config(models, tmp_path, capsys):
    folder = with_inv_freq(models["llama"], tmp_path / "old", 500000.0)
    code, report, _ = run(capsys, folder, "--json")
    [row] = report["tensors"]
    assert code == 0 and row["verdict"] == "matches" and row["count"] == 2
    assert row["tensor"] == INV_FREQ.format("*") and row["max_rel_err"] < 1e-6
    assert "base=500000" in row["identified"]


def test_an_inv_freq_held_in_bfloat16_differs_and_is_named(models, tmp_path, capsys):
    """InternLM#237: .to(torch.bfloat16) casts the buffer; every angle is then off by p x 2^-9."""
    folder = with_inv_freq(models["llama"], tmp_path / "bf16", 500000.0, torch.bfloat16)
    code, report, _ = run(capsys, folder, "--json")
    [row] = report["tensors"]
    assert code == 1 and row["verdict"] == "DIFFERS"
    assert "inv_freq held in bfloat16" in row["why"] and "keep inv_freq in float32" in row["why"]


def test_a_stale_inv_freq_base_differs_and_exits_1(models, tmp_path, capsys):
    folder = with_inv_freq(models["llama"], tmp_path / "stale", 10000.0)
    code, report, _ = run(capsys, folder, "--json")
    [row] = report["tensors"]
    assert code == 1 and not report["ok"] and row["verdict"] == "DIFFERS"
    assert "base=10000" in row["identified"] and "base=500000" in row["implied"]
    assert row["max_rel_err"] > 0.5
    code, text, _ = run(capsys, folder)
    assert code == 1 and "DIFFERS: max relative difference" in text


def test_whisper_encoder_table_is_sinusoidal_and_decoder_learned(models, capsys):
    code, report, _ = run(capsys, models["whisper"], "--json")
    found = rows(report)
    enc, dec = found["model.encoder.embed_positions.weight"], found["model.decoder.embed_positions.weight"]
    assert code == 0
    assert enc["verdict"] == "matches" and enc["identified"].startswith("t2t: 40x32")
    assert enc["max_abs_err"] < 1e-5 and enc["shape"] == [40, 32]
    assert dec["verdict"] == "learned" and "max_target_positions 24" in dec["implied"]
    assert dec["identified"].startswith("learned, not sinusoidal (nearest convention")


def test_whisper_table_in_another_convention_differs(models, tmp_path, capsys):
    folder = tmp_path / "whisper"
    shutil.copytree(models["whisper"], folder)
    tensors = safetensors_torch.load_file(folder / "model.safetensors")
    key = "model.encoder.embed_positions.weight"
    table = tensors[key]                    # Marian's schedule (freq_shift 0) in its place
    p, k = torch.arange(40.0)[:, None], torch.arange(16.0)[None, :]
    angle = p * 10000.0 ** (-k / 16)
    tensors[key] = torch.cat([angle.sin(), angle.cos()], 1).to(table.dtype)
    safetensors_torch.save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})
    code, report, _ = run(capsys, folder, "--json")
    row = rows(report)[key]
    assert code == 1 and row["verdict"] == "DIFFERS" and row["max_abs_err"] > 0.1
    assert row["identified"].startswith("concat: ") and row["implied"].startswith("t2t: ")


def test_marian_tables_match(models, capsys):
    code, text, _ = run(capsys, models["marian"])
    assert code == 0
    lines = [ln for ln in text.splitlines() if "embed_positions.weight" in ln]
    assert len(lines) == 2 and all(ln.rstrip().endswith("matches") for ln in lines)
    assert all("concat: 48x32 float32 layout=concat" in ln for ln in lines)


def test_gpt2_position_table_is_learned(models, capsys):
    code, report, _ = run(capsys, models["gpt2"], "--json")
    [row] = report["tensors"]
    assert code == 0 and row["tensor"] == "transformer.wpe.weight"
    assert row["verdict"] == "learned" and row["why"] == "as expected"
    assert row["implied"] == "learned (config: n_positions 40)"


def test_gpt2_state_dict_bin_is_read_and_a_wrong_row_count_differs(models, tmp_path, capsys):
    folder = tmp_path / "gpt2-bin"
    folder.mkdir()
    shutil.copy(models["gpt2"] / "config.json", folder)
    state = safetensors_torch.load_file(models["gpt2"] / "model.safetensors")
    state["transformer.wpe.weight"] = state["transformer.wpe.weight"][:30].clone()
    torch.save(state, folder / "pytorch_model.bin")
    code, report, _ = run(capsys, folder, "--json")
    [row] = report["tensors"]
    assert report["files"] == ["pytorch_model.bin"]
    assert code == 1 and row["verdict"] == "DIFFERS" and "30 rows, config implies 40" in row["why"]


def test_vit_mae_grids_match_and_a_fresh_zero_grid_differs(models, capsys):
    code, report, _ = run(capsys, models["mae"], "--json")
    found = rows(report)
    assert code == 0 and set(found) == {"vit.embeddings.position_embeddings",
                                        "decoder.decoder_pos_embed"}
    assert all(r["verdict"] == "matches" and r["identified"].startswith("mae: 4x4x")
               for r in found.values())
    assert found["decoder.decoder_pos_embed"]["shape"] == [1, 17, 16]
    code, report, _ = run(capsys, models["mae-fresh"], "--json")
    assert code == 1 and all(r["verdict"] == "DIFFERS" and r["identified"].startswith("all zeros")
                             for r in report["tensors"])


def bad(capsys, folder):
    code, _, err = run(capsys, folder)
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1, err
    return err


def test_bad_inputs_are_one_line_and_exit_2(models, tmp_path, capsys):
    assert "does not exist" in bad(capsys, tmp_path / "nowhere")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "has no config.json" in bad(capsys, empty)
    shutil.copy(models["gpt2"] / "config.json", empty)
    assert "holds no weights" in bad(capsys, empty)
    (empty / "config.json").write_text("{not json")
    assert "config.json is not JSON" in bad(capsys, empty)
    cut = tmp_path / "cut"
    shutil.copytree(models["gpt2"], cut)
    weights = cut / "model.safetensors"
    os.truncate(weights, weights.stat().st_size // 2)
    assert "model.safetensors" in bad(capsys, cut) and "truncated" in bad(capsys, cut)


class RunsCode:
    def __reduce__(self):
        return (os.system, ("touch pwned",))


def test_a_pickle_that_would_run_code_is_refused(models, tmp_path, capsys, monkeypatch):
    folder = tmp_path / "evil"
    folder.mkdir()
    shutil.copy(models["gpt2"] / "config.json", folder)
    torch.save({"transformer.wpe.weight": torch.zeros(40, 32), "x": RunsCode()},
               folder / "pytorch_model.bin")
    monkeypatch.chdir(tmp_path)
    assert "refused: unpickling it would run code" in bad(capsys, folder)
    assert not (tmp_path / "pwned").exists()


def test_shards_listed_by_an_index_are_all_read(models, tmp_path, capsys):
    folder = tmp_path / "sharded"
    folder.mkdir()
    shutil.copy(models["whisper"] / "config.json", folder)
    tensors = safetensors_torch.load_file(models["whisper"] / "model.safetensors")
    names = sorted(tensors)
    halves = {"model-00001-of-00002.safetensors": names[::2], "model-00002-of-00002.safetensors": names[1::2]}
    for file, part in halves.items():
        safetensors_torch.save_file({n: tensors[n] for n in part}, folder / file, metadata={"format": "pt"})
    index = {"weight_map": {n: f for f, part in halves.items() for n in part}}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    code, report, _ = run(capsys, folder, "--json")
    assert code == 0 and len(report["files"]) == 2 and len(report["tensors"]) == 2
    (folder / "model-00002-of-00002.safetensors").unlink()
    assert "model-00002-of-00002.safetensors" in bad(capsys, folder)


def with_config(src, dst, **changes):
    """A copy of a model folder whose config.json has `changes` (None removes a key)."""
    shutil.copytree(src, dst)
    config = json.loads((dst / "config.json").read_text())
    for key, value in changes.items():
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value
    (dst / "config.json").write_text(json.dumps(config))
    return dst


def test_an_inv_freq_under_a_config_without_rope_theta_is_held_to_the_default(models, tmp_path,
                                                                               capsys):
    """transformers builds base 10000 when rope_theta is absent: a stored base 500000 differs."""
    stored = with_inv_freq(models["llama"], tmp_path / "stored", 500000.0)
    folder = with_config(stored, tmp_path / "no-theta", rope_theta=None, rope_parameters=None,
                         rope_scaling=None)
    code, report, _ = run(capsys, folder, "--json")
    [row] = report["tensors"]
    assert code == 1 and row["verdict"] == "DIFFERS", row
    assert "base=10000" in row["implied"] and "base=500000" in row["identified"]


@pytest.mark.parametrize("model, changes, field", [
    ("llama", {"rope_theta": [1], "rope_parameters": {"rope_type": "default", "rope_theta": [1]}},
     "rope_theta"),
    ("llama", {"hidden_size": "256", "head_dim": None}, "hidden_size"),
    ("llama", {"rotary_pct": float("inf")}, "rotary_pct"),
    ("llama", {"partial_rotary_factor": "0.5"}, "partial_rotary_factor"),
    ("llama", {"rope_parameters": {"rope_type": ["linear"], "rope_theta": 10000.0}}, "rope_type"),
    ("mae", {"patch_size": 0}, "patch_size"),
])
def test_hostile_config_values_are_one_line_naming_the_field(models, tmp_path, capsys, model,
                                                              changes, field):
    folder = with_config(models[model], tmp_path / "hostile", **changes)
    err = bad(capsys, folder)
    assert f"config field {field} must be" in err
