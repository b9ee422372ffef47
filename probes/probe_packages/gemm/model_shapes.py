"""The ``model_config`` parameter: a Hugging Face style config.json on the host -> the model's projection shapes (no torch).

Each projection is C (M x N) = A (M x K) @ B (K x N) with K = its input width and N = its output width; M is the tokens
in flight: prefill-like (``model_prefill_tokens``, batch x sequence) and decode-like (``model_decode_batches``, one token
per sequence). A mixture-of-experts MLP is timed per expert, at the average tokens one expert sees.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from probe_packages.gemm.cases import GemmCase

MAX_CONFIG_BYTES = 1024 * 1024
REQUIRED_FIELDS = ("hidden_size", "intermediate_size", "num_attention_heads", "vocab_size")
EXPERT_COUNT_FIELDS = ("num_local_experts", "num_experts")  # Mixtral | Qwen2-MoE, Qwen3-MoE
EXPERT_WIDTH_FIELD = "moe_intermediate_size"  # Qwen-MoE; without it (Mixtral) intermediate_size is each expert's width
UNSUPPORTED_FIELDS = {"kv_lora_rank": "multi-head latent attention (DeepSeek-V2/V3) has other projection shapes"}


class ModelConfigError(ValueError):
    """A model_config that cannot be read or lacks a usable field; the message names the file and the field."""


@dataclass(frozen=True)
class ModelFields:
    hidden_size: int
    intermediate_size: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    vocab_size: int
    num_experts: Optional[int]
    num_experts_per_tok: Optional[int]
    expert_intermediate_size: Optional[int]

    @property
    def is_moe(self) -> bool:
        return self.num_experts is not None


@dataclass(frozen=True)
class Projection:
    name: str
    k: int  # input width
    n: int  # output width
    per_expert: bool
    what: str


@dataclass(frozen=True)
class ModelShapes:
    name: str
    file: str
    sha256: str
    fields: ModelFields
    assumptions: Tuple[str, ...]
    projections: Tuple[Projection, ...]
    prefill_tokens: Tuple[int, ...]
    decode_batches: Tuple[int, ...]
    cases: Tuple[GemmCase, ...]

    @property
    def source(self) -> str:
        return "model_config %s (%s, sha256 %s)" % (self.file, self.name, self.sha256[:12])

    def record(self) -> Dict[str, Any]:
        fields = {key: value for key, value in self.fields.__dict__.items() if value is not None}
        return {"name": self.name, "file": self.file, "sha256": self.sha256, "fields": fields,
                "assumptions": list(self.assumptions),
                "projections": [{"name": p.name, "k": p.k, "n": p.n, "per_expert": p.per_expert} for p in self.projections],
                "prefill_tokens": list(self.prefill_tokens), "decode_batches": list(self.decode_batches)}


# -- reading the file -------------------------------------------------------------------------------------------------
def read_config_bytes(path: str) -> bytes:
    """The file's bytes, at most MAX_CONFIG_BYTES (a config.json is a few KiB)."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ModelConfigError("model_config %s cannot be read: %s" % (os.path.basename(path), exc.strerror or exc)) from exc
    if len(raw) > MAX_CONFIG_BYTES:
        raise ModelConfigError("model_config %s is larger than %d bytes: not a config.json"
                               % (os.path.basename(path), MAX_CONFIG_BYTES))
    return raw


def parse_config(raw: bytes, file: str) -> Dict[str, Any]:
    try:
        config = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ModelConfigError("model_config %s is not JSON: %s" % (file, exc)) from exc
    if not isinstance(config, dict):
        raise ModelConfigError("model_config %s must hold a JSON object, not %s" % (file, type(config).__name__))
    return config


# -- the fields -------------------------------------------------------------------------------------------------------
def _positive_int(config: Dict[str, Any], field: str, file: str) -> int:
    value = config[field]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ModelConfigError("model_config %s: field %s must be a positive integer (got %r)" % (file, field, value))
    return value


def _required(config: Dict[str, Any], field: str, file: str) -> int:
    if field not in config:
        raise ModelConfigError("model_config %s lacks the field %s" % (file, field))
    return _positive_int(config, field, file)


def _optional(config: Dict[str, Any], field: str, file: str) -> Optional[int]:
    return None if config.get(field) is None else _positive_int(config, field, file)


def _refuse_unsupported(config: Dict[str, Any], file: str) -> None:
    for field, why in UNSUPPORTED_FIELDS.items():
        if config.get(field) is not None:
            raise ModelConfigError("model_config %s has the field %s: %s, not derived by this probe" % (file, field, why))


def _head_dim(config: Dict[str, Any], hidden: int, heads: int, file: str, assumptions: List[str]) -> int:
    given = _optional(config, "head_dim", file)
    if given is not None:
        return given
    if hidden % heads:
        raise ModelConfigError("model_config %s lacks the field head_dim, and hidden_size %d is not a multiple of "
                               "num_attention_heads %d" % (file, hidden, heads))
    assumptions.append("head_dim absent: hidden_size / num_attention_heads = %d" % (hidden // heads))
    return hidden // heads


def _kv_heads(config: Dict[str, Any], heads: int, file: str, assumptions: List[str]) -> int:
    kv_heads = _optional(config, "num_key_value_heads", file)
    if kv_heads is None:
        assumptions.append("num_key_value_heads absent: multi-head attention assumed (as Hugging Face does), "
                           "%d KV heads" % heads)
        return heads
    if heads % kv_heads:
        raise ModelConfigError("model_config %s: field num_key_value_heads %d does not divide num_attention_heads %d"
                               % (file, kv_heads, heads))
    return kv_heads


def _expert_count(config: Dict[str, Any], file: str) -> Optional[int]:
    counts = {field: _optional(config, field, file) for field in EXPERT_COUNT_FIELDS}
    given = {field: value for field, value in counts.items() if value is not None}
    if len(set(given.values())) > 1:
        raise ModelConfigError("model_config %s: fields %s disagree" % (file, " and ".join(
            "%s %d" % item for item in sorted(given.items()))))
    return next(iter(given.values()), None)


def _experts(config: Dict[str, Any], intermediate: int, file: str,
             assumptions: List[str]) -> Tuple[Optional[int], Optional[int], Optional[int]]:
    """(experts, experts per token, each expert's width), or Nones for a dense model."""
    experts = _expert_count(config, file)
    if experts is None:
        return None, None, None
    if "num_experts_per_tok" not in config:
        raise ModelConfigError("model_config %s has %d experts but lacks the field num_experts_per_tok" % (file, experts))
    per_token = _positive_int(config, "num_experts_per_tok", file)
    if per_token > experts:
        raise ModelConfigError("model_config %s: field num_experts_per_tok %d exceeds the %d experts" % (file, per_token, experts))
    width = _optional(config, EXPERT_WIDTH_FIELD, file)
    if width is None:
        assumptions.append("moe_intermediate_size absent: each expert's width is intermediate_size %d (Mixtral style)"
                           % intermediate)
    assumptions.append("uniform routing: each expert sees tokens x %d / %d of the tokens (rounded up, at least 1); "
                       "the router (hidden -> %d) and any shared expert are not timed" % (per_token, experts, experts))
    return experts, per_token, width if width is not None else intermediate


def model_fields(config: Dict[str, Any], file: str) -> Tuple[ModelFields, List[str]]:
    """The fields the shapes come from, checked, and the assumptions made for the absent optional ones."""
    _refuse_unsupported(config, file)
    hidden, intermediate, heads, vocab = (_required(config, field, file) for field in REQUIRED_FIELDS)
    assumptions: List[str] = []
    kv_heads = _kv_heads(config, heads, file, assumptions)
    head_dim = _head_dim(config, hidden, heads, file, assumptions)
    experts, per_token, expert_width = _experts(config, intermediate, file, assumptions)
    fields = ModelFields(hidden, intermediate, heads, kv_heads, head_dim, vocab, experts, per_token, expert_width)
    return fields, assumptions


def model_name(config: Dict[str, Any]) -> str:
    """_name_or_path, else model_type (architectures), else a sentence saying neither is there."""
    name = config.get("_name_or_path")
    if isinstance(name, str) and name.strip():
        return name.strip()[:200]
    model_type = config.get("model_type") if isinstance(config.get("model_type"), str) else ""
    architectures = config.get("architectures")
    names = [entry for entry in architectures if isinstance(entry, str)] if isinstance(architectures, list) else []
    text = "%s (%s)" % (model_type, ", ".join(names)) if model_type and names else model_type or ", ".join(names)
    return text[:200] or "unnamed (no _name_or_path, model_type or architectures)"


# -- the shapes -------------------------------------------------------------------------------------------------------
def projections(fields: ModelFields) -> Tuple[Projection, ...]:
    """Every projection of one decoder layer, then the LM head; q, k and v separately (a fused QKV is their concatenation)."""
    hidden = fields.hidden_size
    q_width = fields.num_attention_heads * fields.head_dim
    kv_width = fields.num_key_value_heads * fields.head_dim
    attention = (
        Projection("attn-q", hidden, q_width, False, "%d heads x %d" % (fields.num_attention_heads, fields.head_dim)),
        Projection("attn-k", hidden, kv_width, False, "%d KV heads x %d" % (fields.num_key_value_heads, fields.head_dim)),
        Projection("attn-v", hidden, kv_width, False, "%d KV heads x %d" % (fields.num_key_value_heads, fields.head_dim)),
        Projection("attn-o", q_width, hidden, False, "attention output back to hidden"))
    width = fields.expert_intermediate_size if fields.is_moe else fields.intermediate_size
    prefix, what = ("expert", "one expert's MLP") if fields.is_moe else ("mlp", "the MLP")
    mlp = (Projection(prefix + "-gate", hidden, width, fields.is_moe, what + " gate"),
           Projection(prefix + "-up", hidden, width, fields.is_moe, what + " up"),
           Projection(prefix + "-down", width, hidden, fields.is_moe, what + " down"))
    return attention + mlp + (Projection("lm-head", hidden, fields.vocab_size, False, "logits over the vocabulary"),)


def tokens_per_expert(tokens: int, fields: ModelFields) -> int:
    """The average tokens one expert sees under uniform routing, rounded up to a whole token."""
    return max(1, -(-tokens * fields.num_experts_per_tok // fields.num_experts))


def model_case(group: str, projection: Projection, tokens: int, fields: ModelFields) -> GemmCase:
    m = tokens_per_expert(tokens, fields) if projection.per_expert else tokens
    words = "%d token%s" % (tokens, "" if tokens == 1 else "s")
    if projection.per_expert:
        average = tokens * fields.num_experts_per_tok / fields.num_experts
        words += " x %d experts/token / %d experts = %s per expert (uniform routing assumed)" % (
            fields.num_experts_per_tok, fields.num_experts, "%d" % m if average == m else "%g, rounded up to %d" % (average, m))
    return GemmCase("%s-%s-m%d-n%d-k%d" % (group.replace("_", "-"), projection.name, m, projection.n, projection.k),
                    group, m, projection.n, projection.k,
                    "%s projection (%s, K %d -> N %d), %s" % (projection.name, projection.what, projection.k, projection.n, words))


def model_cases(fields: ModelFields, prefill_tokens: Sequence[int], decode_batches: Sequence[int]) -> List[GemmCase]:
    cases = []
    for group, token_counts in (("model_prefill", prefill_tokens), ("model_decode", decode_batches)):
        for tokens in token_counts:
            cases.extend(model_case(group, projection, tokens, fields) for projection in projections(fields))
    return cases


def shapes_from_bytes(raw: bytes, file: str, prefill_tokens: Sequence[int], decode_batches: Sequence[int]) -> ModelShapes:
    config = parse_config(raw, file)
    fields, assumptions = model_fields(config, file)
    cases = model_cases(fields, prefill_tokens, decode_batches)
    names = [case.name for case in cases]
    if len(set(names)) != len(names):  # two MoE token counts can round to the same per-expert M
        first: Dict[str, GemmCase] = {}
        for case in cases:
            first.setdefault(case.name, case)
        unique = list(first.values())
        assumptions.append("%d case(s) with the same per-expert M as another were timed once" % (len(cases) - len(unique)))
        cases = unique
    return ModelShapes(model_name(config), file, hashlib.sha256(raw).hexdigest(), fields, tuple(assumptions),
                       projections(fields), tuple(prefill_tokens), tuple(decode_batches), tuple(cases))


def load_model_shapes(path: str, prefill_tokens: Sequence[int], decode_batches: Sequence[int]) -> ModelShapes:
    """The model_config parameter's shapes; only the file's basename is recorded (the path is the user's)."""
    return shapes_from_bytes(read_config_bytes(path), os.path.basename(path), prefill_tokens, decode_batches)
