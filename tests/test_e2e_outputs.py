"""Outputs unchanged by piecewise capture: the comparison of greedy generations between server modes (pure),
on SGLang's own /generate answer form (read from the 0.5.12 wheel's tokenizer_manager.py)."""

from __future__ import annotations

import pytest

from lab.e2e import outputs

# One /generate answer as SGLang 0.5.12 returns it with return_logprob and top_logprobs_num=2 (fields:
# tokenizer_manager.py `out_dict` and detokenize_top_logprobs_tokens: [logprob, token_id, text]).
ANSWER = {"text": "w17 w9", "output_ids": [17, 9, 30],
          "meta_info": {"completion_tokens": 3, "output_top_logprobs": [[[-1.0, 17, "w17"], [-1.01, 18, "w18"]],
                                                                           [[-0.2, 9, "w9"], [-2.2, 4, "w4"]],
                                                                           [[-0.5, 30, "w30"], [-0.6, 31, "w31"]]]}}


def _gen(ids, gaps):
    return {"output_ids": ids, "top2_gap": gaps}


def test_generation_reads_ids_and_the_top2_gap_per_position():
    """output_ids as returned; each position's gap is the best minus the second-best log-probability."""
    assert outputs.generation(ANSWER) == {"output_ids": [17, 9, 30], "top2_gap": [0.01, 2.0, 0.1]}
    assert outputs.generation({"output_ids": [1]}) == {"output_ids": [1], "top2_gap": []}


def test_identical_near_tie_and_real_difference_are_told_apart():
    """Same ids: identical; first difference where a mode's top-2 gap < NEAR_TIE_NATS: near tie; else differs."""
    base = _gen([1, 2, 3], [1.0, 0.01, 1.0])
    assert outputs.compare_one(base, _gen([1, 2, 3], [1.0, 0.02, 1.0]))["class"] == outputs.IDENTICAL
    near = outputs.compare_one(base, _gen([1, 5, 3], [1.0, 0.03, 1.0]))
    assert (near["class"], near["first_difference"], near["ids_there"]) == (outputs.NEAR_TIE, 1, [2, 5])
    sure = outputs.compare_one(_gen([1, 2, 3], [1.0, 2.0, 1.0]), _gen([1, 5, 3], [1.0, 1.5, 1.0]))
    assert sure["class"] == outputs.DIFFERS and sure["top2_gap_there"] == [2.0, 1.5]
    short = outputs.compare_one(base, _gen([1, 2], [1.0, 0.5]))
    assert short["class"] == outputs.DIFFERS and short["first_difference"] == 2


def test_compare_counts_and_the_line_says_what_differed():
    """Per-mode totals, and one line naming the near ties and the real differences with where they start."""
    result = outputs.compare([_gen([1, 2], [1, 1]), _gen([3, 4], [1, 0.01]), _gen([5, 6], [2, 2])],
                             [_gen([1, 2], [1, 1]), _gen([3, 9], [1, 0.02]), _gen([7, 6], [2, 2])])
    assert result["counts"] == {outputs.IDENTICAL: 1, outputs.NEAR_TIE: 1, outputs.DIFFERS: 1}
    line = outputs.verdict_line("on vs off", result)
    assert line.startswith("on vs off: 1/3 prompts identical (6 tokens compared); 1 first differ at a near tie")
    assert "1 differ where the model was sure (first at token 0, top-2 gaps [2, 2])" in line
    with pytest.raises(ValueError, match="same prompt set"):
        outputs.compare([_gen([1], [1])], [])


def test_document_compares_each_mode_with_itself_and_with_off():
    """A vs B within every mode (determinism first), then each other mode's pass A against off's."""
    same = {"A": [_gen([1, 2], [1, 1])], "B": [_gen([1, 2], [1, 1])]}
    doc = outputs.document({"off": same, "on": {"A": [_gen([1, 3], [1, 0.01])], "B": [_gen([1, 2], [1, 1])]}},
                           prompts=[[4, 5, 6]], new_tokens=2, context={"device": "d"})
    assert doc["schema"] == outputs.OUTPUTS_SCHEMA and doc["prompt_lengths"] == [3] and doc["device"] == "d"
    assert doc["summary"][1].startswith("on run-to-run (A vs B): 0/1 prompts identical")
    assert doc["summary"][2].startswith("on vs off: 0/1 prompts identical") and "near tie" in doc["summary"][2]


def test_prompt_set_is_seeded_and_avoids_special_tokens():
    """The same seed gives the same prompts; lengths cycle; ids stay in [first_id, vocab)."""
    a = outputs.prompt_set(5, (2, 3), vocab=50, seed=1)
    assert a == outputs.prompt_set(5, (2, 3), vocab=50, seed=1) and [len(p) for p in a] == [2, 3, 2, 3, 2]
    assert all(4 <= t < 50 for p in a for t in p)
