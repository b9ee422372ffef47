"""The gemm probe's model_config parameter: shapes from a Hugging Face style config.json (pure), and a CPU run with one."""
import hashlib
import json
import os

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.gemm.view import gemm_view
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import envelope_problems
from probe_runs import run_probe
from probe_packages.gemm import params as gemm_params
from probe_packages.gemm.cases import build_plan
from probe_packages.gemm.model_shapes import MAX_CONFIG_BYTES, ModelConfigError, load_model_shapes, shapes_from_bytes

CONFIGS = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "data", "model_configs"))
LLAMA_8B, LLAMA_70B, MIXTRAL = (os.path.join(CONFIGS, name)
                                for name in ("llama-3-8b.json", "llama-3-70b.json", "mixtral-8x7b.json"))
DENSE = {"hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32, "num_key_value_heads": 8,
         "vocab_size": 128256}


def _dims(shapes, group="model_decode", m=1):
    """{projection: (M, N, K)} of one group at one token count (M per expert for an MoE's experts)."""
    found = {}
    for case in shapes.cases:
        per_expert = "= %d per expert (uniform routing assumed)" % m
        if case.group == group and ("-m%d-" % m in case.name or case.note.endswith(per_expert)):
            projection = case.name[len(group) + 1:].split("-m")[0]
            found[projection] = (case.m, case.n, case.k)
    return found


def _from(config, prefill=(4096,), decode=(1, 8, 32)):
    return shapes_from_bytes(json.dumps(config).encode(), "config.json", prefill, decode)


def test_llama_3_8b_projections():
    shapes = load_model_shapes(LLAMA_8B, (4096,), (1, 8, 32))
    assert shapes.name == "llama (LlamaForCausalLM)" and shapes.file == "llama-3-8b.json"
    assert shapes.fields.head_dim == 128  # 4096 / 32, derived: the file has no head_dim
    assert {(p.name, p.k, p.n) for p in shapes.projections} == {
        ("attn-q", 4096, 4096), ("attn-k", 4096, 1024), ("attn-v", 4096, 1024), ("attn-o", 4096, 4096),  # k, v: 8 x 128
        ("mlp-gate", 4096, 14336), ("mlp-up", 4096, 14336), ("mlp-down", 14336, 4096), ("lm-head", 4096, 128256)}
    assert _dims(shapes)["attn-k"] == (1, 1024, 4096)
    assert _dims(shapes, "model_prefill", 4096)["mlp-down"] == (4096, 4096, 14336)
    assert _dims(shapes, "model_decode", 32)["lm-head"] == (32, 128256, 4096)
    assert len(shapes.cases) == 8 * (1 + 3)  # 8 projections at one prefill and three decode counts


def test_llama_3_70b_projections():
    shapes = load_model_shapes(LLAMA_70B, (4096,), (1,))
    assert _dims(shapes, "model_prefill", 4096) == {
        "attn-q": (4096, 8192, 8192), "attn-k": (4096, 1024, 8192), "attn-v": (4096, 1024, 8192),
        "attn-o": (4096, 8192, 8192), "mlp-gate": (4096, 28672, 8192), "mlp-up": (4096, 28672, 8192),
        "mlp-down": (4096, 8192, 28672), "lm-head": (4096, 128256, 8192)}
    # q + k + v is the built-in plan's fused QKV (8192 -> 10240)
    assert sum(p.n for p in shapes.projections if p.name in ("attn-q", "attn-k", "attn-v")) == 10240


def test_mixtral_experts_at_the_average_tokens_per_expert():
    shapes = load_model_shapes(MIXTRAL, (4096,), (1, 8, 32))
    assert (shapes.fields.num_experts, shapes.fields.num_experts_per_tok, shapes.fields.expert_intermediate_size) == \
        (8, 2, 14336)
    prefill = {case.name: case for case in shapes.cases if case.group == "model_prefill"}
    # 4096 tokens x 2 experts per token / 8 experts = 1024 tokens per expert; attention and the LM head see all 4096
    assert prefill["model-prefill-expert-up-m1024-n14336-k4096"].m == 1024
    assert prefill["model-prefill-expert-down-m1024-n4096-k14336"].k == 14336
    assert prefill["model-prefill-attn-q-m4096-n4096-k4096"].m == 4096
    assert prefill["model-prefill-lm-head-m4096-n32000-k4096"].n == 32000
    decode_m = sorted({case.m for case in shapes.cases if case.group == "model_decode" and case.name.startswith(
        "model-decode-expert-up")})
    assert decode_m == [1, 2, 8]  # batch 1: 0.25 rounded up to 1; batch 8: 2; batch 32: 8
    assert "uniform routing assumed" in prefill["model-prefill-expert-up-m1024-n14336-k4096"].note
    assert "0.25, rounded up to 1" in next(case.note for case in shapes.cases if case.name == "model-decode-expert-up-m1-n14336-k4096")
    assert any(text.startswith("uniform routing") for text in shapes.assumptions)
    assert any("moe_intermediate_size absent" in text for text in shapes.assumptions)


def test_qwen_style_moe_uses_moe_intermediate_size():
    shapes = _from(dict(DENSE, num_experts=64, num_experts_per_tok=8, moe_intermediate_size=1408), (1024,), ())
    up = next(case for case in shapes.cases if case.name.startswith("model-prefill-expert-up"))
    assert (up.m, up.n, up.k) == (128, 1408, 4096)  # 1024 x 8 / 64


def test_prefill_and_decode_groups():
    shapes = _from(DENSE, (512, 2048), (4,))
    assert sorted({(case.group, case.m) for case in shapes.cases}) == [
        ("model_decode", 4), ("model_prefill", 512), ("model_prefill", 2048)]
    assert [case for case in shapes.cases if case.group == "model_decode"][0].note.endswith("4 tokens")
    assert _from(DENSE, (), (1,)).cases[0].group == "model_decode"


def test_defaults_and_assumptions():
    config = {key: value for key, value in DENSE.items() if key != "num_key_value_heads"}
    shapes = _from(dict(config, head_dim=96, _name_or_path="org/my-model"))
    assert shapes.name == "org/my-model"
    assert shapes.fields.num_key_value_heads == 32
    assert any("multi-head attention assumed" in text for text in shapes.assumptions)
    assert shapes.fields.head_dim == 96 and not any(text.startswith("head_dim") for text in shapes.assumptions)
    assert _dims(shapes)["attn-q"] == (1, 32 * 96, 4096) and _dims(shapes)["attn-o"] == (1, 4096, 32 * 96)
    assert _from(dict(DENSE, head_dim=None)).fields.head_dim == 128  # null is absent, as transformers writes it
    assert _from(DENSE).name == "unnamed (no _name_or_path, model_type or architectures)"


def test_sha256_and_basename_only(tmp_path):
    path = tmp_path / "deep" / "config.json"
    path.parent.mkdir()
    raw = json.dumps(DENSE).encode()
    path.write_bytes(raw)
    shapes = load_model_shapes(str(path), (16,), (1,))
    record = shapes.record()
    assert record["sha256"] == hashlib.sha256(raw).hexdigest()
    assert record["file"] == "config.json" and str(tmp_path) not in json.dumps(record)
    assert shapes.source == "model_config config.json (unnamed (no _name_or_path, model_type or architectures), sha256 %s)" \
        % record["sha256"][:12]
    with open(LLAMA_8B, "rb") as handle:
        assert load_model_shapes(LLAMA_8B, (1,), ()).sha256 == hashlib.sha256(handle.read()).hexdigest()


def _without(field):
    return {key: value for key, value in DENSE.items() if key != field}


@pytest.mark.parametrize("config, field", [
    (_without("hidden_size"), "lacks the field hidden_size"),
    (_without("intermediate_size"), "lacks the field intermediate_size"),
    (_without("num_attention_heads"), "lacks the field num_attention_heads"),
    (_without("vocab_size"), "lacks the field vocab_size"),
    (dict(DENSE, hidden_size="4096"), "field hidden_size must be a positive integer"),
    (dict(DENSE, hidden_size=4096.0), "field hidden_size must be a positive integer"),
    (dict(DENSE, vocab_size=0), "field vocab_size must be a positive integer"),
    (dict(DENSE, intermediate_size=-1), "field intermediate_size must be a positive integer"),
    (dict(DENSE, num_attention_heads=True), "field num_attention_heads must be a positive integer"),
    (dict(DENSE, num_key_value_heads=[8]), "field num_key_value_heads must be a positive integer"),
    (dict(DENSE, num_key_value_heads=5), "field num_key_value_heads 5 does not divide num_attention_heads 32"),
    (dict(DENSE, head_dim=0), "field head_dim must be a positive integer"),
    (dict(DENSE, num_attention_heads=48), "lacks the field head_dim, and hidden_size 4096 is not a multiple of "
                                          "num_attention_heads 48"),
    (dict(DENSE, num_local_experts=8), "lacks the field num_experts_per_tok"),
    (dict(DENSE, num_experts=8, num_experts_per_tok=9), "field num_experts_per_tok 9 exceeds the 8 experts"),
    (dict(DENSE, num_experts=8, num_local_experts=16, num_experts_per_tok=2), "fields num_experts 8 and num_local_experts 16"),
    (dict(DENSE, num_experts=8, num_experts_per_tok=2, moe_intermediate_size="x"), "field moe_intermediate_size must be"),
    (dict(DENSE, kv_lora_rank=512), "field kv_lora_rank: multi-head latent attention"),
])
def test_a_bad_field_is_named(config, field):
    with pytest.raises(ModelConfigError, match="model_config config.json") as raised:
        _from(config)
    assert field in str(raised.value)


@pytest.mark.parametrize("raw, message", [
    (b"{not json", "model_config config.json is not JSON"),
    (b"\xff\xfe", "model_config config.json is not JSON"),
    (b"[4096]", "model_config config.json must hold a JSON object, not list"),
    (b"hidden_size: 4096", "is not JSON"),  # YAML is not read
])
def test_a_malformed_file_is_named(raw, message):
    with pytest.raises(ModelConfigError, match=message):
        shapes_from_bytes(raw, "config.json", (1,), (1,))


def test_unreadable_and_oversized_files(tmp_path):
    with pytest.raises(ModelConfigError, match="model_config absent.json cannot be read"):
        load_model_shapes(str(tmp_path / "absent.json"), (1,), ())
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (MAX_CONFIG_BYTES + 1))
    with pytest.raises(ModelConfigError, match="model_config big.json is larger than 1048576 bytes"):
        load_model_shapes(str(big), (1,), ())


def test_the_model_replaces_the_production_shapes_in_the_plan():
    shapes = load_model_shapes(LLAMA_8B, (4096,), (1, 8, 32))
    plan = build_plan("cuda", False, None, model=shapes)
    names = [case.name for case in plan["cases"]]
    assert names[:4] == ["square-1024", "square-2048", "square-4096", "square-8192"]
    assert names[-2:] == ["awkward-m8191-n8193-k8191", "awkward-m8208-n8208-k8208"]
    assert not any(name.startswith(("prefill-", "decode-")) for name in names)
    assert names[4:-2] == [case.name for case in shapes.cases]
    assert plan["production_shapes_source"] == shapes.source and plan["model"] == shapes.record()
    quick = build_plan("cuda", True, None, model=shapes)
    assert [case.name for case in quick["cases"]] == ["square-8192"] + [case.name for case in shapes.cases]
    assert "model" not in build_plan("cuda", False, None)


def test_model_parameters():
    assert gemm_params.check_token_counts("model_decode_batches", [1, 8, 32]) == (1, 8, 32)
    assert gemm_params.check_token_counts("model_prefill_tokens", []) == ()
    for bad in ([0], [1, 1], [True], [2.0], 4096):
        with pytest.raises(gemm_params.GemmParameterError, match="model_prefill_tokens"):
            gemm_params.check_token_counts("model_prefill_tokens", bad)
    gemm_params.check_model_config(None, [{"name": "x", "m": 1, "n": 1, "k": 1}], (), ())
    with pytest.raises(gemm_params.GemmParameterError, match="give shapes or model_config, not both"):
        gemm_params.check_model_config("/x/config.json", [{"name": "x", "m": 1, "n": 1, "k": 1}], (1,), ())
    with pytest.raises(gemm_params.GemmParameterError, match="both empty"):
        gemm_params.check_model_config("/x/config.json", None, (), ())
    with pytest.raises(gemm_params.GemmParameterError, match="model_config must be the path"):
        gemm_params.check_model_config("", None, (1,), ())


def test_dossier_names_the_model():
    shapes = load_model_shapes(MIXTRAL, (64,), (1,))
    note = gemm_view({"plan": {"model": shapes.record()}, "devices": []})["note"]
    assert note.startswith("Production shapes from the model mixtral (MixtralForCausalLM) (model_config mixtral-8x7b.json, "
                           "sha256 %s; " % shapes.sha256)
    assert "num_experts 8" in note and "uniform routing" in note
    assert "Production shapes" not in gemm_view({"plan": {}, "devices": []})["note"]


TINY_MOE = {"model_type": "tiny", "architectures": ["TinyMoE"], "hidden_size": 256, "intermediate_size": 512,
            "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1000, "num_experts": 4,
            "num_experts_per_tok": 2, "moe_intermediate_size": 128}


def test_cpu_run_with_a_model_config_measures_and_explains_its_shapes(tmp_path):
    pytest.importorskip("torch")
    config = tmp_path / "config.json"
    config.write_text(json.dumps(TINY_MOE))
    envelope = run_probe(tmp_path, "gemm", {"quick": True, "model_config": str(config), "model_prefill_tokens": [16],
                                            "model_decode_batches": [1, 8], "repeats": 1, "memory_bandwidth_gbps": 20})
    assert envelope["status"] == "ok", envelope["reason"]
    assert envelope_problems(envelope) == []
    data = envelope["data"]
    model = data["plan"]["model"]
    assert model["name"] == "tiny (TinyMoE)" and model["file"] == "config.json"
    assert model["sha256"] == hashlib.sha256(config.read_bytes()).hexdigest()
    assert str(tmp_path) not in json.dumps(data["plan"])
    results = data["devices"][0]["results"]
    model_results = [result for result in results if result["group"] in ("model_prefill", "model_decode")]
    assert len(model_results) == 8 * 3
    wanted = {"model-prefill-expert-up-m8-n128-k256", "model-decode-attn-k-m1-n128-k256"}
    assert {result["name"] for result in model_results} >= wanted
    for result in model_results:
        assert result["measurement"]["tflops"] > 0
        assert result["classified_before_timing"]["classification"] in ("memory-bound", "compute-bound")
        assert result["explained_after_timing"]["explanation"]


def test_a_config_lacking_a_field_is_an_error_envelope(tmp_path):
    pytest.importorskip("torch")
    config = tmp_path / "served.json"
    config.write_text(json.dumps(_without("vocab_size")))
    envelope = run_probe(tmp_path, "gemm", {"model_config": str(config)})
    assert envelope["status"] == "error"
    assert envelope["reason"] == "bad parameters: model_config served.json lacks the field vocab_size"
    assert envelope_problems(envelope) == []


def test_shapes_and_model_config_together_are_refused(tmp_path):
    pytest.importorskip("torch")
    envelope = run_probe(tmp_path, "gemm", {"model_config": LLAMA_8B, "shapes": [{"name": "x", "m": 1, "n": 1, "k": 1}]})
    assert envelope["status"] == "error" and "give shapes or model_config, not both" in envelope["reason"]
