"""Scoring never changes the caller's model: weights, dtypes, devices and training flags are the same
before and after, for every scorer and dtype (tiny random-weight models, CPU)."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
from test_hps_scorers import (  # noqa: E402
    FEW_CANDIDATES,
    FEW_DOCS,
    FEW_QUERIES,
    TOKENIZER,
    bert_classifier,
    bert_encoder,
    qwen2_lm,
    scorer,
)

KINDS = {"ce1": lambda: bert_classifier(1), "ce2": lambda: bert_classifier(2), "yesno": qwen2_lm,
         "bi": bert_encoder, "bi-int8": bert_encoder}


def snapshot(model):
    """Everything about the model that scoring must leave alone."""
    state = {name: tensor.detach().clone() for name, tensor in model.state_dict().items()}
    return state, {name: (t.dtype, t.device) for name, t in model.state_dict().items()}, \
        [module.training for module in model.modules()]


def assert_unchanged(model, before):
    state, kinds, flags = before
    after = model.state_dict()
    assert list(after) == list(state)
    for name, tensor in after.items():
        assert (tensor.dtype, tensor.device) == kinds[name], name
        assert torch.equal(tensor, state[name]), name
    assert [module.training for module in model.modules()] == flags


def score(kind, model, dtype):
    kwargs = dict(quantize="int8", hps=True) if kind == "bi-int8" else {}
    reranker = scorer(kind.split("-")[0], model, dtype=dtype, **kwargs)
    return reranker, reranker.rerank(FEW_QUERIES, FEW_DOCS, FEW_CANDIDATES).to_dict()


@pytest.mark.parametrize("dtype", [None, "fp32", "bf16", "fp16"])
@pytest.mark.parametrize("kind", list(KINDS))
def test_scoring_leaves_the_callers_model_as_it_was(kind, dtype):
    model = KINDS[kind]()
    model.train()  # a model in the middle of training: dropout on, training flags set
    list(model.modules())[1].eval()  # mixed flags survive too
    before = snapshot(model)
    reranker, run = score(kind, model, dtype)
    assert_unchanged(model, before)
    # same model object only when nothing had to change; a converted copy otherwise
    assert (reranker.model is model) == (dtype in (None, "fp32"))
    # scores are those of the model in eval mode (no dropout): equal to scoring an eval-mode copy
    reference = KINDS[kind]().eval()
    _, expected = score(kind, reference, dtype)
    for qid, docs in expected.items():
        np.testing.assert_array_equal(list(run[qid].values()), list(docs.values()))


def test_a_model_on_another_dtype_is_copied_once_and_the_copy_is_used():
    model = bert_classifier(1).to(torch.bfloat16)
    reranker = scorer("ce1", model, dtype="fp32")
    assert reranker.model is not model and next(reranker.model.parameters()).dtype == torch.float32
    assert next(model.parameters()).dtype == torch.bfloat16


def test_a_sentence_transformers_cross_encoder_is_left_alone(tmp_path):
    st = pytest.importorskip("sentence_transformers")
    from tieaware.hps import CrossEncoder

    bert_classifier(1).save_pretrained(tmp_path)
    TOKENIZER.save_pretrained(tmp_path)
    reranker = st.CrossEncoder(str(tmp_path), device="cpu")
    reranker.model.train()
    before = snapshot(reranker.model)
    CrossEncoder(reranker, dtype="bf16", show_progress=False).rerank(FEW_QUERIES, FEW_DOCS, FEW_CANDIDATES)
    assert_unchanged(reranker.model, before)
