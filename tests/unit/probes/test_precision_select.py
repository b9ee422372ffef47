"""Tensor selection by name on realistic checkpoints' names (BERT/MiniLM, Llama, GPT-2, OPT) and explicit names."""
from probe_packages.precision.safetensors_file import TensorEntry
from probe_packages.precision.selection import layer_index, select


def entries(specs):
    """{name: TensorEntry} from (name, shape, dtype) with made-up, consecutive offsets."""
    table, offset = {}, 0
    for name, shape, dtype in specs:
        count = 1
        for size in shape:
            count *= size
        nbytes = count * (4 if dtype == "F32" else 2)
        table[name] = TensorEntry(name, dtype, tuple(shape), offset, offset + nbytes)
        offset += nbytes
    return table


def minilm():
    """The names and shapes of all-MiniLM-L6-v2's model.safetensors (6 BERT layers, hidden 384)."""
    specs = [("embeddings.position_ids", [1, 512], "I64"), ("embeddings.LayerNorm.bias", [384], "F32"),
             ("embeddings.LayerNorm.weight", [384], "F32"), ("embeddings.position_embeddings.weight", [512, 384], "F32"),
             ("embeddings.token_type_embeddings.weight", [2, 384], "F32"),
             ("embeddings.word_embeddings.weight", [30522, 384], "F32")]
    for layer in (5, 0, 1, 10, 2, 3, 4):  # out of order on purpose, with a layer 10 that sorts before 2 as text
        prefix = "encoder.layer.%d." % layer
        specs += [(prefix + "attention.output.LayerNorm.weight", [384], "F32"),
                  (prefix + "attention.output.dense.weight", [384, 384], "F32"),
                  (prefix + "attention.self.key.weight", [384, 384], "F32"),
                  (prefix + "attention.self.query.bias", [384], "F32"),
                  (prefix + "attention.self.query.weight", [384, 384], "F32"),
                  (prefix + "attention.self.value.weight", [384, 384], "F32"),
                  (prefix + "intermediate.dense.bias", [1536], "F32"),
                  (prefix + "intermediate.dense.weight", [1536, 384], "F32"),
                  (prefix + "output.dense.weight", [384, 1536], "F32")]
    specs.append(("pooler.dense.weight", [384, 384], "F32"))
    return entries(specs)


def llama():
    specs = [("lm_head.weight", [32000, 4096], "BF16"), ("model.embed_tokens.weight", [32000, 4096], "BF16"),
             ("model.norm.weight", [4096], "BF16")]
    for layer in (1, 0):
        prefix = "model.layers.%d." % layer
        specs += [(prefix + "input_layernorm.weight", [4096], "BF16"),
                  (prefix + "self_attn.k_proj.weight", [1024, 4096], "BF16"),
                  (prefix + "self_attn.q_proj.weight", [4096, 4096], "BF16"),
                  (prefix + "mlp.gate_proj.weight", [14336, 4096], "BF16"),
                  (prefix + "mlp.up_proj.weight", [14336, 4096], "BF16"),
                  (prefix + "mlp.down_proj.weight", [4096, 14336], "BF16")]
    return entries(specs)


def picked(table, names=()):
    chosen, errors = select(table, list(names))
    return {item["role"]: item for item in chosen}, errors


def test_layer_index():
    assert layer_index("encoder.layer.10.attention.self.query.weight") == 10
    assert layer_index("model.layers.0.mlp.up_proj.weight") == 0
    assert layer_index("h.3.attn.c_attn.weight") == 3
    assert layer_index("0.weight") == 0
    assert layer_index("embeddings.word_embeddings.weight") is None


def test_minilm_picks_word_embeddings_and_layer_0_projections():
    roles, errors = picked(minilm())
    assert errors == []
    assert roles["embedding"]["name"] == "embeddings.word_embeddings.weight"
    assert roles["embedding"]["picked_by"].startswith("rule: the largest tensor whose name contains 'embeddings'")
    assert "3 candidate(s)" in roles["embedding"]["picked_by"]  # word, position, token type; never the LayerNorm
    assert roles["attention"]["name"] == "encoder.layer.0.attention.self.query.weight"
    assert "BERT query projection) (layer 0)" in roles["attention"]["picked_by"]
    assert roles["mlp"]["name"] == "encoder.layer.0.intermediate.dense.weight"
    assert "7 candidate(s)" in roles["mlp"]["picked_by"]
    assert [item["role"] for item in select(minilm(), [])[0]] == ["embedding", "attention", "mlp"]


def test_llama_picks_embed_tokens_q_proj_and_up_proj_of_layer_0():
    roles, errors = picked(llama())
    assert errors == []
    assert roles["embedding"]["name"] == "model.embed_tokens.weight" and "'embed'" in roles["embedding"]["picked_by"]
    assert roles["attention"]["name"] == "model.layers.0.self_attn.q_proj.weight"
    assert "q_proj" in roles["attention"]["picked_by"] and "(layer 0)" in roles["attention"]["picked_by"]
    assert roles["mlp"]["name"] == "model.layers.0.mlp.up_proj.weight" and "up_proj" in roles["mlp"]["picked_by"]


def test_gpt2_and_opt_fall_back_to_the_generic_rules():
    gpt2 = entries([("wte.weight", [50257, 768], "F32"), ("wpe.weight", [1024, 768], "F32"),
                    ("h.1.attn.c_attn.weight", [768, 2304], "F32"), ("h.0.attn.c_attn.weight", [768, 2304], "F32"),
                    ("h.0.ln_1.weight", [768], "F32"), ("h.0.mlp.c_fc.weight", [768, 3072], "F32")])
    roles, errors = picked(gpt2)
    assert errors == [] and roles["embedding"]["name"] == "wte.weight" and "GPT-2" in roles["embedding"]["picked_by"]
    assert roles["attention"]["name"] == "h.0.attn.c_attn.weight" and "'attn'" in roles["attention"]["picked_by"]
    assert roles["mlp"]["name"] == "h.0.mlp.c_fc.weight" and "'mlp'" in roles["mlp"]["picked_by"]
    opt = entries([("decoder.embed_tokens.weight", [50272, 768], "F16"),
                   ("decoder.layers.0.self_attn.q_proj.weight", [768, 768], "F16"),
                   ("decoder.layers.0.fc1.weight", [3072, 768], "F16"), ("decoder.layers.0.fc2.weight", [768, 3072], "F16")])
    roles, errors = picked(opt)
    assert errors == [] and roles["mlp"]["name"] == "decoder.layers.0.fc1.weight" and "fc1" in roles["mlp"]["picked_by"]


def test_explicit_names_win_and_keep_their_order():
    chosen, errors = select(minilm(), ["encoder.layer.3.output.dense.weight", "embeddings.position_ids",
                                       "encoder.layer.3.output.dense.weight", "not.there"])
    assert errors == []  # reading them (and failing on I64 or a missing name) is the probe's job, tensor by tensor
    assert chosen == [{"name": "encoder.layer.3.output.dense.weight", "role": "explicit", "picked_by": "param tensors"},
                      {"name": "embeddings.position_ids", "role": "explicit", "picked_by": "param tensors"},
                      {"name": "not.there", "role": "explicit", "picked_by": "param tensors"}]


def test_no_match_is_an_error_naming_the_rules_and_norms_or_integers_never_match():
    table = entries([("embeddings.LayerNorm.weight", [384, 384], "F32"), ("tok.embeddings.weight", [100, 8], "I64"),
                     ("block.0.attention.weight", [8], "F32"), ("block.0.proj.weight", [8, 8], "F32")])
    roles, errors = picked(table)
    assert roles == {}
    assert [error["tensor"] for error in errors] == ["embedding", "attention", "mlp"]
    assert all(error["what"] == "select" and "name it in the tensors parameter" in error["error"] for error in errors)
    assert "'intermediate.dense.weight'" in errors[2]["error"]


def test_one_tensor_is_not_picked_twice():
    table = entries([("layers.0.attention_mlp.weight", [8, 8], "F32"), ("embed.weight", [10, 8], "F32")])
    roles, errors = picked(table)
    assert roles["attention"]["name"] == "layers.0.attention_mlp.weight" and "mlp" not in roles
    assert errors == [{"tensor": "mlp", "what": "select",
                       "error": "the mlp rules picked layers.0.attention_mlp.weight, already measured as another role"}]
