"""sentence-transformers models as scorer inputs: a loaded ``SentenceTransformer`` / ``CrossEncoder``, or a local
folder saved by sentence-transformers (``modules.json``, ``sentence_bert_config.json``, ``1_Pooling/config.json``,
``config_sentence_transformers.json``).

Both give a transformers model plus the settings sentence-transformers applies around it: truncation length,
pooling and normalisation (embedding models), activation (cross-encoders). The scorers reproduce that pipeline
themselves (one forward pass, scoring step in fp32 under HPS), so only pipelines they can reproduce are
accepted: Transformer -> Pooling (mean / cls / lasttoken) -> optional Normalize, a Transformer with a
sequence-classification head, a causal-LM Transformer -> LogitScore (a loaded CrossEncoder), or a
MultiVectorEncoder's Transformer -> Dense* -> MultiVectorMask? -> Normalize?. Anything else is an error naming
the module, never a silently different score.
sentence-transformers itself is not imported here: a loaded object is recognised by its class name.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ..errors import InputError, InputTypeError

#: sentence-transformers pooling mode -> BiEncoder pooling
POOLING_NAMES = {"mean": "mean", "cls": "cls", "lasttoken": "last_token"}
#: legacy 1_Pooling/config.json flags (sentence-transformers < 6) -> pooling mode
LEGACY_POOLING_FLAGS = {"pooling_mode_cls_token": "cls", "pooling_mode_mean_tokens": "mean",
                        "pooling_mode_max_tokens": "max", "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
                        "pooling_mode_weightedmean_tokens": "weightedmean", "pooling_mode_lasttoken": "lasttoken"}
#: torch activation class name -> CrossEncoder activation
ACTIVATION_NAMES = {"Sigmoid": "sigmoid", "Identity": "identity"}
#: a tokenizer's "no limit" model_max_length is a huge sentinel (1e30); anything above this is not a limit
NO_LENGTH_LIMIT = 1_000_000


#: the loaded sentence-transformers classes the scorers take, and the scorer each goes to
KINDS = {"SentenceTransformer": "tieaware.hps.BiEncoder", "CrossEncoder": "tieaware.hps.CrossEncoder",
         "MultiVectorEncoder": "tieaware.hps.MultiVectorEncoder"}
#: modules a MultiVectorEncoder may have after its Transformer (their fp32 copies score under hps='head')
MULTI_VECTOR_MODULES = ("Dense", "MultiVectorMask", "Normalize")


def sentence_transformers_kind(model: object) -> str | None:
    """'SentenceTransformer', 'CrossEncoder' or 'MultiVectorEncoder' for a loaded sentence-transformers
    object, else None."""
    if "sentence_transformers" not in sys.modules:  # no sentence-transformers object can exist
        return None
    for cls in type(model).__mro__:
        if cls.__module__.startswith("sentence_transformers") and cls.__name__ in KINDS:
            return cls.__name__
    return None


def length_limit(value: Any) -> int | None:
    """A max_seq_length / model_max_length as an int, None when unset or the tokenizer's 'no limit' sentinel."""
    return int(value) if value is not None and 0 < value <= NO_LENGTH_LIMIT else None


def tokenizer_limit(tokenizer: Any, config: Any) -> int | None:
    """The length sentence-transformers truncates at when its config names none: the tokenizer's
    model_max_length, capped at the model's max_position_embeddings."""
    given = [getattr(tokenizer, "model_max_length", None), getattr(config, "max_position_embeddings", None)]
    limits = [limit for limit in map(length_limit, given) if limit is not None]
    return min(limits) if limits else None


def pooling_name(mode: str | tuple[str, ...] | list[str], where: str) -> str:
    """sentence-transformers pooling mode (str or a tuple of one) -> 'mean' / 'cls' / 'last_token'."""
    modes = (mode,) if isinstance(mode, str) else tuple(mode)
    if len(modes) != 1 or modes[0] not in POOLING_NAMES:
        raise InputError(f"{where}: pooling {'+'.join(modes)!r} is not supported "
                         f"(BiEncoder pools with one of {sorted(POOLING_NAMES)})")
    return POOLING_NAMES[modes[0]]


def unpack(model: Any, wanted: str) -> tuple[Any, Any, dict[str, Any]]:
    """A loaded sentence-transformers object -> (transformers model, tokenizer, settings).

    settings: max_length (the object's max_seq_length), and pooling + normalize (SentenceTransformer),
    activation + num_labels (CrossEncoder; with a LogitScore head also answer_token_ids and pipeline, the
    object whose preprocess builds the prompts) or pipeline, tail and similarity (MultiVectorEncoder).
    `wanted` is the kind the scorer takes."""
    kind = sentence_transformers_kind(model)
    if kind is None:
        raise InputTypeError(f"not a loaded sentence-transformers object: {type(model).__name__}")
    if kind != wanted:
        raise InputTypeError(f"a sentence-transformers {kind} goes to {KINDS[kind]}, not to a scorer "
                             f"that takes a {wanted}")
    modules = list(model)
    names = [type(module).__name__ for module in modules]
    where = f"sentence-transformers {kind} ({' -> '.join(names)})"
    if not names or names[0] != "Transformer" or getattr(modules[0], "auto_model", None) is None:
        raise InputError(f"{where}: the first module must be a transformers Transformer")
    transformer = modules[0]
    settings: dict[str, Any] = {"max_length": length_limit(getattr(model, "max_seq_length", None))}
    if kind == "SentenceTransformer":
        if len(names) < 2 or names[1] != "Pooling" or any(name != "Normalize" for name in names[2:]):
            raise InputError(f"{where}: BiEncoder reproduces Transformer -> Pooling [-> Normalize] only")
        pooling = modules[1]
        if not getattr(pooling, "include_prompt", True):
            raise InputError(f"{where}: pooling that leaves out prompt tokens (include_prompt=False) "
                             "is not supported")
        mode = getattr(pooling, "pooling_mode", None)
        settings["pooling"] = pooling_name(mode if mode is not None else pooling.get_pooling_mode_str(), where)
        similarity = getattr(model, "similarity_fn_name", None)  # a str or a str Enum
        settings["normalize"] = normalized("Normalize" in names[2:], getattr(similarity, "value", similarity), where)
    elif kind == "MultiVectorEncoder":
        settings.update(multi_vector_settings(model, modules, names, where))
    else:
        task = getattr(transformer, "transformer_task", "sequence-classification")
        if names == ["Transformer", "LogitScore"] and task == "text-generation":
            settings["answer_token_ids"] = logit_score_tokens(transformer, modules[1], where)
            settings["pipeline"] = model
        elif names != ["Transformer"] or task != "sequence-classification":
            raise InputError(f"{where}: CrossEncoder takes a sequence-classification Transformer alone or a "
                             "causal-LM Transformer followed by LogitScore")
        settings["num_labels"] = model.num_labels
        settings["activation"] = activation_of(getattr(model, "activation_fn", None), model.num_labels, where)
    return transformer.auto_model, transformer.tokenizer, settings


def reads_model_output(transformer: Any, output: str) -> bool:
    """True when every modality of a sentence-transformers Transformer reads the transformers model's
    forward() output named `output` (what the scorers recompute from the model)."""
    config = getattr(transformer, "modality_config", None) or {}
    return bool(config) and all(entry.get("method") == "forward" and entry.get("method_output_name") == output
                                for entry in config.values())


def logit_score_tokens(transformer: Any, score: Any, where: str) -> tuple[int, int | None]:
    """(true_token_id, false_token_id or None) of a LogitScore head reading the causal LM's logits."""
    if score.module_input_name != transformer.module_output_name or not reads_model_output(transformer, "logits"):
        raise InputError(f"{where}: LogitScore must read the causal LM's logits (forward().logits)")
    return int(score.true_token_id), None if score.false_token_id is None else int(score.false_token_id)


def multi_vector_settings(model: Any, modules: list[Any], names: list[str], where: str) -> dict[str, Any]:
    """A MultiVectorEncoder's pipeline (for preprocess), the modules after its Transformer and its similarity."""
    unknown = [name for name in names[1:] if name not in MULTI_VECTOR_MODULES]
    if unknown or not reads_model_output(modules[0], "last_hidden_state"):
        raise InputError(f"{where}: MultiVectorEncoder reproduces Transformer (last_hidden_state) -> "
                         f"{' / '.join(MULTI_VECTOR_MODULES)} modules only"
                         f"{'; not ' + ', '.join(unknown) if unknown else ''}")
    similarity = model.similarity_fn_name
    return {"pipeline": model, "tail": modules[1:], "similarity": getattr(similarity, "value", similarity)}


def normalized(has_normalize: bool, similarity: str | None, where: str) -> bool:
    """BiEncoder's normalize for a sentence-transformers model: cosine (L2-normalised embeddings) when a
    Normalize module is in the pipeline or the similarity function is cosine (its default, what
    model.similarity scores); a plain dot product for similarity 'dot'. Distances are not dot products."""
    similarity = (similarity or "cosine").lower().replace("dot_product", "dot")
    if similarity not in ("cosine", "dot"):
        raise InputError(f"{where}: similarity {similarity!r} is a distance, not a dot product; BiEncoder "
                         "scores with cosine or dot: pass normalize=True or False to choose")
    return has_normalize or similarity == "cosine"


def activation_of(function: Any, num_labels: int, where: str) -> Any:
    """A CrossEncoder's activation_fn -> 'sigmoid' / 'identity' (one logit), else the callable itself.
    With two or more labels the score is softmax(z)[positive_index], as predict(apply_softmax=True)."""
    name = type(function).__name__
    if num_labels > 1:
        if function is None or name in ("Identity", "Softmax"):
            return None
        raise InputError(f"{where}: activation {name} over {num_labels} labels is not supported "
                         "(the score is softmax(z)[positive_index])")
    if function is None:
        return "identity"
    return ACTIVATION_NAMES.get(name, function)


def read_json(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise InputError(f"cannot read the sentence-transformers config {path}: {error}") from error


def read_object(path: Path) -> dict[str, Any]:
    """A sentence-transformers config file holding a JSON object."""
    value = read_json(path)
    if not isinstance(value, dict):
        raise InputError(f"the sentence-transformers config {path} holds a JSON {type(value).__name__}, "
                         "not an object")
    return value


def read_modules(path: Path) -> list[dict[str, Any]]:
    """modules.json: a JSON list of objects."""
    value = read_json(path)
    if not isinstance(value, list) or not all(isinstance(entry, dict) for entry in value):
        raise InputError(f"the sentence-transformers config {path} is not a JSON list of objects")
    return value


def folder_settings(folder: Path) -> tuple[Path, dict[str, Any]]:
    """A local model folder -> (folder holding the transformers model, settings from its sentence-transformers
    config files); (folder, {}) when it has no modules.json (a plain transformers folder).

    settings: max_length (sentence_bert_config.json's max_seq_length), lowercase (its do_lower_case), pooling
    (1_Pooling/config.json: 'pooling_mode' or the legacy pooling_mode_* flags), normalize (see normalized:
    a Normalize module listed, or similarity_fn_name cosine), activation (the activation_fn named in
    config_sentence_transformers.json or config.json)."""
    if not (folder / "modules.json").is_file():
        return folder, {}
    has_normalize = False
    settings: dict[str, Any] = {}
    transformer_folder = folder
    for entry in read_modules(folder / "modules.json"):
        kind = str(entry.get("type", "")).rsplit(".", 1)[-1]
        path = folder / entry.get("path", "")
        if kind == "Transformer":
            transformer_folder = path
            config_file = path / "sentence_bert_config.json"
            config = read_object(config_file) if config_file.is_file() else {}
            if config.get("max_seq_length") is not None:
                settings["max_length"] = int(config["max_seq_length"])
            settings["lowercase"] = bool(config.get("do_lower_case", False))
        elif kind == "Pooling":
            config = read_object(path / "config.json")
            mode = config.get("pooling_mode") or [mode for flag, mode in LEGACY_POOLING_FLAGS.items()
                                                  if config.get(flag)] or "mean"
            if not config.get("include_prompt", True):
                raise InputError(f"{path}: pooling that leaves out prompt tokens (include_prompt=False) "
                                 "is not supported")
            settings["pooling"] = pooling_name(mode, str(path))
        elif kind == "Normalize":
            has_normalize = True
        else:
            raise InputError(f"{folder}: sentence-transformers module {entry.get('type')!r} is not supported "
                             "in a folder (the scorers reproduce Transformer -> Pooling [-> Normalize] or a "
                             "classifier; load a LogitScore cross-encoder with sentence-transformers and pass "
                             "the object)")
    model_config_file = folder / "config_sentence_transformers.json"
    model_config = read_object(model_config_file) if model_config_file.is_file() else {}
    if "pooling" in settings:  # an embedding model
        settings["normalize"] = normalized(has_normalize, model_config.get("similarity_fn_name"), str(folder))
    activation = folder_activation(folder, model_config)
    if activation is not None:
        settings["activation"] = activation
    return transformer_folder, settings


def folder_activation(folder: Path, model_config: dict[str, Any]) -> str | None:
    """The activation a sentence-transformers CrossEncoder folder names (model_config, read from
    config_sentence_transformers.json, or config.json's 'sentence_transformers' section / legacy
    'sbert_ce_default_activation_function')."""
    path = model_config.get("activation_fn")
    if path is None and (folder / "config.json").is_file():
        config = read_object(folder / "config.json")
        path = (config.get("sentence_transformers") or {}).get("activation_fn") \
            or config.get("sbert_ce_default_activation_function")
    if path is None:
        return None
    name = str(path).rsplit(".", 1)[-1]
    if name not in ACTIVATION_NAMES:
        raise InputError(f"{folder}: activation {path!r} is not supported: pass activation='sigmoid' "
                         "or 'identity'")
    return ACTIVATION_NAMES[name]


def add_lowercase(tokenizer: Any) -> None:
    """Make a fast tokenizer lowercase its input first (sentence_bert_config.json's do_lower_case)."""
    from tokenizers import normalizers

    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise InputError("the model's config asks for lowercasing (do_lower_case) but its tokenizer is not a "
                         "fast tokenizer: lowercase the texts yourself and pass max_length")
    steps = [normalizers.Lowercase()] + ([backend.normalizer] if backend.normalizer is not None else [])
    backend.normalizer = normalizers.Sequence(steps)
