"""Which tensors to measure: explicit names, else an embedding, an attention projection and an MLP projection by name.

Only 2-D floating-point (F32/F16/BF16) weight matrices are candidates of the default rules, never norms. Each role
tries its rules in order; the first rule that matches any tensor picks, and among its matches the lowest layer wins
(then the shorter name). The embedding rules pick the largest match instead of the lowest layer.
"""
from __future__ import annotations

import re
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from probe_packages.precision.safetensors_file import SUPPORTED_DTYPES, TensorEntry

LAYER = re.compile(r"(?:^|\.)(\d+)\.")
Rule = Tuple[str, Callable[[str], bool]]

EMBEDDING_RULES: Sequence[Rule] = (
    ("the largest tensor whose name contains 'embeddings' and ends in 'weight'", lambda name: "embeddings" in name),
    ("the largest tensor whose name contains 'embed' (embed_tokens, tok_embeddings)", lambda name: "embed" in name),
    ("the largest tensor named 'wte.weight' (GPT-2 token embedding)", lambda name: name.endswith("wte.weight")),
)
ATTENTION_RULES: Sequence[Rule] = (
    ("the lowest layer's 'attention.self.query.weight' (BERT query projection)",
     lambda name: name.endswith("attention.self.query.weight")),
    ("the lowest layer's 'q_proj.weight' (Llama/Mistral/OPT query projection)", lambda name: name.endswith("q_proj.weight")),
    ("the lowest layer's tensor ending in 'query.weight' or 'query_key_value.weight'",
     lambda name: name.endswith(("query.weight", "query_key_value.weight"))),
    ("the lowest layer's tensor whose name contains 'attn' or 'attention'",
     lambda name: "attn" in name or "attention" in name),
)
MLP_RULES: Sequence[Rule] = (
    ("the lowest layer's 'intermediate.dense.weight' (BERT MLP up projection)",
     lambda name: name.endswith("intermediate.dense.weight")),
    ("the lowest layer's 'up_proj.weight' (Llama/Mistral MLP up projection)", lambda name: name.endswith("up_proj.weight")),
    ("the lowest layer's 'fc1.weight' (OPT/ViT MLP first projection)", lambda name: name.endswith("fc1.weight")),
    ("the lowest layer's tensor whose name contains 'mlp', 'ffn' or 'feed_forward'",
     lambda name: any(part in name for part in ("mlp", "ffn", "feed_forward"))),
)
ROLES: Sequence[Tuple[str, Sequence[Rule], bool]] = (
    ("embedding", EMBEDDING_RULES, True),
    ("attention", ATTENTION_RULES, False),
    ("mlp", MLP_RULES, False),
)


def layer_index(name: str) -> Optional[int]:
    """The first dotted numeric component of ``name`` (encoder.layer.3.x -> 3), None when it has none."""
    match = LAYER.search(name)
    return int(match.group(1)) if match else None


def is_candidate(entry: TensorEntry) -> bool:
    """A 2-D float weight matrix that is not a norm's."""
    lowered = entry.name.lower()
    return (entry.dtype in SUPPORTED_DTYPES and len(entry.shape) == 2 and lowered.endswith("weight")
            and "norm" not in lowered and entry.numel > 0)


def _order_key(entry: TensorEntry, largest: bool) -> Tuple:
    if largest:
        return (-entry.numel, entry.name)
    layer = layer_index(entry.name)
    return (layer is None, layer if layer is not None else 0, len(entry.name), entry.name)


def pick_role(entries: Sequence[TensorEntry], rules: Sequence[Rule], largest: bool) -> Optional[Tuple[TensorEntry, str]]:
    """The tensor the first matching rule picks and the rule's sentence, or None."""
    candidates = [entry for entry in entries if is_candidate(entry)]
    for sentence, matches in rules:
        found = [entry for entry in candidates if matches(entry.name)]
        if found:
            chosen = min(found, key=lambda entry: _order_key(entry, largest))
            layer = layer_index(chosen.name)
            detail = "" if largest or layer is None else " (layer %d)" % layer
            return chosen, "rule: %s%s; %d candidate(s) matched" % (sentence, detail, len(found))
    return None


def select(tensors: Dict[str, TensorEntry], names: Sequence[str]) -> Tuple[List[Dict[str, str]], List[Dict[str, str]]]:
    """([{name, role, picked_by}], [{tensor, what, error}]): the explicit names when given, else one per role."""
    if names:
        return [{"name": name, "role": "explicit", "picked_by": "param tensors"} for name in _unique(names)], []
    entries = list(tensors.values())
    picked: List[Dict[str, str]] = []
    errors: List[Dict[str, str]] = []
    for role, rules, largest in ROLES:
        result = pick_role(entries, rules, largest)
        if result is None:
            errors.append({"tensor": role, "what": "select",
                           "error": "no 2-D %s weight matrix matches the %s rules (%s); name it in the tensors parameter"
                                    % ("/".join(SUPPORTED_DTYPES), role, "; ".join(sentence for sentence, unused in rules))})
            continue
        entry, picked_by = result
        if any(item["name"] == entry.name for item in picked):
            errors.append({"tensor": role, "what": "select",
                           "error": "the %s rules picked %s, already measured as another role" % (role, entry.name)})
            continue
        picked.append({"name": entry.name, "role": role, "picked_by": picked_by})
    return picked, errors


def _unique(names: Sequence[str]) -> List[str]:
    seen: List[str] = []
    for name in names:
        if name not in seen:
            seen.append(name)
    return seen
