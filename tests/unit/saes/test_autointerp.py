"""Detection scoring on the tiny random model (fast): the shared prefix changes nothing."""

from __future__ import annotations

import torch

from saes.autointerp import scores, scoring_prompts, shared_prefix_length

TEXTS = ["The quick brown fox jumps over the lazy dog.", "Once upon a time",
         "A longer text about cooking onions in butter until they are brown and soft.",
         "7 8 9", "The capital of France is Paris.", "hello"]


def test_shared_prefix_scores_equal_whole_prompts(tiny_model):
    """Running the common prefix once (a KV cache copied per batch, texts right-padded)
    gives every text the score of its whole prompt run alone, and the batch size does
    not change a score."""
    whole = torch.stack([scores(tiny_model, "words about animals", [t],
                                          share_prefix=False)[0] for t in TEXTS])
    for bs in (1, 4, 16):
        shared = scores(tiny_model, "words about animals", TEXTS, batch_size=bs)
        torch.testing.assert_close(shared, whole, atol=1e-4, rtol=1e-4)
    left = scores(tiny_model, "words about animals", TEXTS, share_prefix=False,
                            batch_size=16)
    torch.testing.assert_close(left, whole, atol=1e-4, rtol=1e-4)
    assert whole.std() > 0  # the texts are told apart


def test_prefix_is_the_longest_common_token_prefix(tiny_model):
    rows = scoring_prompts(tiny_model, "words about animals", TEXTS)
    k = shared_prefix_length(rows)
    assert all(r[:k] == rows[0][:k] for r in rows)
    assert len({r[k] for r in rows if len(r) > k}) > 1 or k == min(len(r) for r in rows) - 1
    assert shared_prefix_length([[1, 2, 3], [1, 2, 3]]) == 2  # one token left to run
    assert shared_prefix_length([]) == 0


def _planted(tokens_per_text: list[list[str]], fire) -> list:  # noqa: ANN001
    from saes.results import FeatureContext

    out = []
    for toks in tokens_per_text:
        acts = [float(fire(toks, j)) for j in range(len(toks))]
        out.append(FeatureContext(tokens=toks, acts=acts,
                                  max_at=max(range(len(toks)), key=lambda j: acts[j])))
    return out


def test_programmatic_explainer_recovers_planted_tokens():
    """A feature planted to fire on " because" and " since" is explained by exactly those
    tokens; one planted to fire on " bank" only after " river" is explained by the
    bigram; a dead feature by nothing."""
    from saes.autointerp.explainers import programmatic_explanation, token_cues

    texts = [[" We", " left", " because", " it", " rained"],
             [" Since", " then", " we", " stayed", " since", " it", " was", " late"],
             [" I", " ran", " because", " of", " the", " dog"],
             [" the", " river", " bank", " was", " wet"],
             [" the", " city", " bank", " was", " closed"],
             [" a", " river", " bank", " and", " a", " river", " bank"]]
    planted = {" because", " since"}
    ctx = _planted(texts, lambda toks, j: 2.0 if toks[j] in planted else 0.0)
    cues = token_cues(ctx)
    assert {c.token for c in cues} == planted and all(c.previous is None for c in cues)
    assert sum(c.coverage for c in cues) == 1.0
    text = programmatic_explanation(ctx)
    assert "' because'" in text and "' since'" in text
    river = _planted(texts, lambda toks, j: 1.0 if toks[j] == " bank" and j > 0
                     and toks[j - 1] == " river" else 0.0)
    (cue,) = token_cues(river)
    assert (cue.token, cue.previous, cue.precision) == (" bank", " river", 1.0)
    assert programmatic_explanation(river) == "the token ' bank' after ' river'"
    dead = _planted(texts, lambda toks, j: 0.0)
    assert token_cues(dead) == [] and programmatic_explanation(dead) == "no consistent token"


def test_lm_explainer_prompt_and_cleaning(tiny_model):
    """The explainer's request marks each context's active tokens; answers lose their
    lead-in, quotes and full stop; generation is batched and deterministic; a model with
    no chat template is refused."""
    import pytest

    from interp.errors import InterpError
    from saes.autointerp.explainers import clean_explanation, explainer_prompt, lm_explanations
    from saes.results import FeatureContext

    ctx = [FeatureContext([" the", " river", " bank"], [0, 0, 2.0]),
           FeatureContext([" a", " bank", "\n", " loan"], [0, 1.0, 0, 0])]
    p = explainer_prompt(ctx, [[a > 0 for a in c.acts] for c in ctx])
    assert "1. the river<< bank>>" in p and "2. a<< bank>>  loan" in p
    assert clean_explanation('The marked words share the topic of "banking".\nMore') == "banking"
    assert clean_explanation("   ") == "no explanation"
    one = lm_explanations(tiny_model, [ctx], max_new_tokens=6, batch_size=1)
    two = lm_explanations(tiny_model, [ctx, ctx[:1]], max_new_tokens=6, batch_size=2)
    assert one[0] == two[0] and all(isinstance(x, str) and x for x in two)

    class NoTemplate:
        has_chat_template = False
        model_id = "base"

    with pytest.raises(InterpError, match="not an instruct model"):
        lm_explanations(NoTemplate(), [ctx])  # type: ignore[arg-type]
