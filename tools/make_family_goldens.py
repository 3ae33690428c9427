#!/usr/bin/env python3
"""Tiny random-weight model folders with golden outputs from the real transformers modeling code.

    .venv-heavy/bin/python tools/make_family_goldens.py FAMILY OUT_DIR
    .venv-heavy/bin/python tools/make_family_goldens.py all tests/engine/data   # every family

Each OUT_DIR is laid out as ../shared/models/golden (see its README): `config.json` and
`model.safetensors` (save_pretrained, F32; BF16 or F16 for the -bf16 / -f16 families, whose goldens
are the float64 run of the stored, rounded weights), `golden.safetensors` with, for i = 0..5 (sequence
lengths 1, 3, 7, 16, 64, 130), `input_ids_i` (I64), `last_hidden_state_i` [L, hidden],
`mean_pooled_i`, `cls_pooled_i` (first token), `last_token_i` (last token) and, for classifiers,
`logits_i` [1, num_labels]; values are F32 casts of a float64 run (eager attention, one sequence
per batch, no padding). `report.json` records versions, the config's key fields, tensor names and
the semantics checked while making the folder (position offsets, masks, scales, window effect).

Weights: default HF init under a fixed seed, then perturbed so outputs are not degenerate (norm
weights 1+0.1N, or 0.1N for Gemma's (1+w) RMSNorm; norm biases 0.1N; other biases 0.05N;
non-embedding matrices x5; MPNet's relative attention bias table 0.5N; DeBERTa's rel_embeddings N). Encoder ids start with
the family's CLS/BOS and end with SEP/EOS (length 1: CLS/BOS alone); random ids never hit the
padding id (RoBERTa-style position ids skip padding tokens). Qwen3 ids are random, as before.

Families: qwen3, distilbert, distilbert-classifier, mpnet, mpnet-masked-lm,
mpnet-masked-lm-prefixed, mpnet-classifier, roberta-classifier, camembert, modernbert,
modernbert-classifier, modernbert-biased-mean-classifier, gemma3, llama, mistral, deberta-v3,
deberta-v3-reranker, deberta-v2, deberta-v2-c2p-classifier, bert-classifier (3 labels), bert-splade
(BertForMaskedLM), roberta-splade (RobertaForMaskedLM), distilbert-splade (DistilBertForMaskedLM), qwen3-classifier, qwen3-classifier-3,
qwen2-classifier, qwen3-reranker, qwen3-reranker-tied (Qwen3ForCausalLM with a byte-level BPE
tokenizer.json: `logits_i` [1, 1] = logit("yes") - logit("no") at the last position of the full
vocabulary projection, `yes_probability_i` = softmax over [no, yes] of it, and `pair_ids_k` /
`pair_logits_k` / `pair_yes_probability_k` for the model card's template around RERANKER_PAIRS,
tokenized by HF tokenizers as the card does), eurobert, eurobert-bf16, eurobert-reranker-late,
eurobert-reranker-bos-bf16, eurobert-classifier-mean (EuroBertForSequenceClassification, one per
classifier_pooling; report.json's batch_check: a padded batch against the single goldens), pplx-embed, llama-bidirectional,
llama-bidirectional-reranker (llama-nemotron-rerank: mean-pooled `score`, after NVIDIA's remote code; with a
Llama-3-shaped tokenizer.json and `pair_ids_k` / `pair_logits_k` / `pair_yes_probability_k` (sigmoid) for its card's
"question:{q} \\n \\n passage:{p}" text of each of RERANKER_PAIRS),
voyage-qwen3-bidirectional (voyage-4-nano's Qwen3BidirectionalModel: `projected_hidden_state_i`, the model's output,
and mean_pooled_i of it; last_hidden_state_i is the backbone's),
nomic-bert, nomic-bert-hub-bf16, nomic-bert-moe-hub (nomic-embed-text-v2-moe's experts: nomic's modules put
into transformers' NomicBertModel, nomic_moe_model), gte, gte-hub-ntk-f16, gte-reranker, gte-reranker-hub (issue 48; the -hub
folders hold the hub's remote-code config.json and tensor layout, reloaded by transformers with its own
config through conversion_mapping.py), qwen2-mxbai-reranker (Qwen2ForCausalLM, tied: raw score
logit("1") - logit("0"), pair ids from mxbai-rerank 0.1.6's own MxbaiRerankV2.prepare_inputs) and gemma-reranker
(GemmaForCausalLM, tied, multi-query: raw score logit("Yes") alone, normalized its sigmoid, pair ids from the
bge-reranker-v2-gemma card's get_inputs), gemma2-reranker and gemma2-reranker-bf16 (Gemma2ForCausalLM with small
attention and final logit soft-caps, sliding window 16: raw score logit("Yes") of the soft-capped logits, pair ids as
gemma-reranker's with the v2.5-gemma2-lightweight prompt, which its yes_no_reranker.json names); all of them also hold
`instruction_pair_ids` (pair 0 with an instruction). gemma2-costwise-reranker (bge-reranker-v2.5-gemma2-lightweight's
CostWiseGemmaForCausalLM, per-layer heads; make_costwise) is scored by FlagEmbedding 1.4.2's own classes, which need
transformers 4.46: `PYTHONPATH=.venv-heavy/flagembedding-transformers .venv-heavy/bin/python tools/make_family_goldens.py
gemma2-costwise-reranker tests/engine/data/tiny-gemma2-costwise-reranker` (`all` skips it otherwise).
The folder name written by `all` is tiny-FAMILY.

bert-classifier and bert-splade also hold `weightedmean_pooled_i` and `mean_sqrt_len_pooled_i`,
from sentence-transformers' own Pooling module on the float64 hidden state; bert-splade and
roberta-splade hold
`splade_i` [1, vocab] = max over tokens of log(1 + relu(MLM logits)) instead of logits, and its
LayerNorm tensors carry the old names gamma / beta, as TensorFlow-era checkpoints do.
"""
import json
import pathlib
import sys

import torch
import transformers
from safetensors import safe_open
from safetensors.torch import save_file

LENGTHS = [1, 3, 7, 16, 64, 130]
VOCAB = 1000


# ---------------------------------------------------------------- families: configs and models

def qwen3():
    config = transformers.Qwen3Config(
        vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        head_dim=16, intermediate_size=128, max_position_embeddings=512, rope_theta=1_000_000.0,
        rms_norm_eps=1e-6, tie_word_embeddings=False, attn_implementation="eager")
    return dict(cls=transformers.Qwen3Model, config=config, seed=20261130, ids="random", perturb="qwen3")


def decoder_classifier(family, labels):
    """Qwen3/Qwen2ForSequenceClassification: `score` [labels, hidden] without bias on the last token
    (no pad_token_id: one sequence per batch, so transformers scores its last token)."""
    shapes = dict(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                  intermediate_size=128, max_position_embeddings=512, rms_norm_eps=1e-6, tie_word_embeddings=False,
                  num_labels=labels, attn_implementation="eager")
    if labels > 1:
        names = ["irrelevant", "partial", "relevant"][:labels]
        shapes.update(id2label=dict(enumerate(names)), label2id={n: i for i, n in enumerate(names)})
    if family == "qwen3":
        config = transformers.Qwen3Config(head_dim=16, rope_theta=1_000_000.0, **shapes)
        cls = transformers.Qwen3ForSequenceClassification
    else:
        config = transformers.Qwen2Config(rope_theta=1_000_000.0, use_sliding_window=False, **shapes)
        cls = transformers.Qwen2ForSequenceClassification
    return dict(cls=cls, config=config, seed=41 + labels, ids="random", perturb="qwen3")


# The Qwen3-Reranker model card's prompt (stamen's defaults, model_folder/yes_no_reranker.h).
RERANKER_PREFIX = ("<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the "
                   "Instruct provided. Note that the answer can only be \"yes\" or \"no\".<|im_end|>\n<|im_start|>user\n")
RERANKER_SUFFIX = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
RERANKER_INSTRUCTION = "Given a web search query, retrieve relevant passages that answer the query"
RERANKER_PAIRS = [("what is the capital of china?", "The capital of China is Beijing."),
                  ("what is the capital of china?", "Gravity is a force that attracts two bodies towards each other."),
                  ("explain gravity", "Gravity is a force that attracts two bodies towards each other."),
                  ("yes or no", "no")]


def byte_level_bpe(corpus, specials):
    """A byte-level BPE tokenizer (Qwen's and Llama 3's kind) of 600 ids at most, trained on `corpus`,
    with `specials` as its added special tokens (ids 0, 1, …)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(corpus, trainer)
    assert tokenizer.get_vocab_size() <= VOCAB
    return tokenizer


def reranker_tokenizer():
    """A byte-level BPE tokenizer.json (Qwen's kind) of < VOCAB ids, trained on the template and the pairs,
    whose vocabulary holds "yes" and "no" and whose added special tokens are Qwen's chat markers."""
    corpus = [RERANKER_PREFIX, RERANKER_SUFFIX, RERANKER_INSTRUCTION, "yes no yes no yes no"] + \
             [f"<Instruct>: {RERANKER_INSTRUCTION}\n<Query>: {q}\n<Document>: {d}" for q, d in RERANKER_PAIRS] * 3
    tokenizer = byte_level_bpe(corpus, ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"])
    assert tokenizer.token_to_id("yes") is not None and tokenizer.token_to_id("no") is not None
    return tokenizer


def qwen3_reranker(tied=False):
    """Qwen3ForCausalLM as Qwen3-Reranker: the score is logit("yes") - logit("no") at the last position."""
    config = transformers.Qwen3Config(
        vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        head_dim=16, intermediate_size=128, max_position_embeddings=512, rope_theta=1_000_000.0,
        rms_norm_eps=1e-6, tie_word_embeddings=tied, attn_implementation="eager")
    return dict(cls=transformers.Qwen3ForCausalLM, config=config, seed=53 + tied, ids="random", perturb="qwen3",
                reranker=True)


# ---------------------------------------------------------------- issue 44: any LLM reranker

# mxbai-rerank-v2's prompt pieces (mxbai_rerank/mxbai_rerank_v2.py, MxbaiRerankV2), used only to
# train the tiny tokenizer: the pair ids come from the library's own prepare_inputs.
MXBAI_TEXTS = ["<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
               "<|im_start|>user\n",
               "You are a search relevance expert who evaluates how well documents match search queries. For each "
               "query-document pair, carefully analyze the semantic relationship between them, then provide your "
               "binary relevance judgment (0 for not relevant, 1 for relevant).\nRelevance:",
               "<|im_end|>\n<|im_start|>assistant\n", "0 1 0 1 0 1"]
RERANKER_PAIR_INSTRUCTION = "Find the passage that answers the question"
# FlagEmbedding's default prompt for bge-reranker-v2-gemma (its model card's get_inputs).
GEMMA_PROMPT = ("Given a query A and a passage B, determine whether the passage contains an answer to the query by "
                "providing a prediction of either 'Yes' or 'No'.")


def mxbai_tokenizer():
    """A byte-level BPE tokenizer.json (Qwen2's kind) of < VOCAB ids holding "0" and "1" and Qwen's chat markers."""
    corpus = MXBAI_TEXTS + [f"query: {q}\ndocument: {d}" for q, d in RERANKER_PAIRS] * 3
    tokenizer = byte_level_bpe(corpus, ["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
    assert tokenizer.token_to_id("1") is not None and tokenizer.token_to_id("0") is not None
    return tokenizer


def gemma_tokenizer():
    """A Gemma-style tokenizer.json of < VOCAB ids: BPE with byte fallback, spaces as "▁", no
    pre-tokenizer, <pad> <eos> <bos> <unk> as ids 0..3 (Gemma's), and "Yes" in its vocabulary."""
    from tokenizers import Tokenizer, decoders, models, normalizers, trainers
    tokenizer = Tokenizer(models.BPE(byte_fallback=True, unk_token="<unk>", fuse_unk=True))
    tokenizer.normalizer = normalizers.Replace(" ", "\u2581")
    tokenizer.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse()])
    specials = ["<pad>", "<eos>", "<bos>", "<unk>"] + [f"<0x{b:02X}>" for b in range(256)]
    trainer = trainers.BpeTrainer(vocab_size=700, special_tokens=specials, show_progress=False)
    # Without a pre-tokenizer each text is one word: "Yes" alone, often, makes it a vocabulary entry.
    corpus = [GEMMA_PROMPT] + ["Yes", "No"] * 20 + [f"A: {q}\nB: {d}" for q, d in RERANKER_PAIRS] * 3
    tokenizer.train_from_iterator(corpus, trainer)
    # The byte tokens are ordinary vocabulary in Gemma's file, not added tokens.
    assert tokenizer.token_to_id("Yes") is not None and tokenizer.token_to_id("<bos>") == 2
    assert tokenizer.get_vocab_size() <= VOCAB
    return tokenizer


def prepare_for_model(tokenizer):
    """transformers 4's prepare_for_model(first, second, truncation="only_second", max_length, add_special_tokens=False,
    padding=False), which transformers 5's tokenizers no longer have but mxbai-rerank and FlagEmbedding call: the two id
    lists concatenated, the second cut from its end to fit max_length."""
    def prepare(first, second, truncation, max_length, add_special_tokens, **kwargs):
        assert truncation == "only_second" and not add_special_tokens and not kwargs.get("padding")
        keep = max(0, min(len(second), max_length - len(first)))
        return {"input_ids": list(first) + list(second[:keep])}
    return prepare


def mxbai_pair_ids(tokenizer, query, document, instruction=None):
    """mxbai-rerank 0.1.6's MxbaiRerankV2.prepare_inputs on one pair (the library's code, its
    model left unloaded; `batched`, imported by its base module for batching only, stubbed)."""
    import types
    if "batched" not in sys.modules:
        batched, utils = types.ModuleType("batched"), types.ModuleType("batched.utils")
        utils.bucket_batch_iter = None
        batched.utils = utils
        sys.modules.update({"batched": batched, "batched.utils": utils})
    from mxbai_rerank.mxbai_rerank_v2 import MxbaiRerankV2
    reranker = MxbaiRerankV2.__new__(MxbaiRerankV2)
    reranker.tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="<|endoftext|>",
                                                             model_max_length=512)
    reranker.tokenizer.padding_side = "left"
    reranker.tokenizer.prepare_for_model = prepare_for_model(reranker.tokenizer)
    reranker.max_length = 8192
    reranker.model_max_length = 512
    reranker.prepare_predefined_inputs()
    inputs = reranker.prepare_inputs([query], [document], instruction=instruction)
    ids, mask = inputs["input_ids"][0], inputs["attention_mask"][0]
    return ids[mask.bool()].tolist()


def gemma_pair_ids(tokenizer, query, document, instruction=None, max_length=1024):
    """bge-reranker-v2-gemma's model card get_inputs on one pair (FlagEmbedding's
    BaseLLMReranker builds the same): [bos] + "A: query", sep + "B: passage" (only_second
    truncation), sep, prompt."""
    hf = transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<bos>", eos_token="<eos>",
                                              pad_token="<pad>", unk_token="<unk>")
    prompt_inputs = hf(instruction or GEMMA_PROMPT, return_tensors=None, add_special_tokens=False)["input_ids"]
    sep_inputs = hf("\n", return_tensors=None, add_special_tokens=False)["input_ids"]
    query_inputs = hf(f"A: {query}", return_tensors=None, add_special_tokens=False, max_length=max_length * 3 // 4,
                      truncation=True)
    passage_inputs = hf(f"B: {document}", return_tensors=None, add_special_tokens=False, max_length=max_length,
                        truncation=True)
    item = prepare_for_model(hf)([hf.bos_token_id] + query_inputs["input_ids"], sep_inputs + passage_inputs["input_ids"],
                                truncation="only_second", max_length=max_length, padding=False,
                                return_attention_mask=False, return_token_type_ids=False, add_special_tokens=False)
    return item["input_ids"] + sep_inputs + prompt_inputs


def mxbai_reranker():
    """Qwen2ForCausalLM as mxbai-rerank-v2 (tied, as mxbai-rerank-base-v2 ships): score = logit("1") - logit("0")
    at the last position (MxbaiRerankV2.forward)."""
    config = transformers.Qwen2Config(
        vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        intermediate_size=128, max_position_embeddings=512, rope_theta=1_000_000.0, rms_norm_eps=1e-6,
        use_sliding_window=False, tie_word_embeddings=True, attn_implementation="eager")
    return dict(cls=transformers.Qwen2ForCausalLM, config=config, seed=441, ids="random", perturb="qwen3",
                reranker=dict(tokenizer=mxbai_tokenizer, yes="1", no="0", pair_ids=mxbai_pair_ids,
                              reference="mxbai-rerank 0.1.6 MxbaiRerankV2.prepare_inputs; score logit('1') - logit('0')"))


def gemma_reranker():
    """GemmaForCausalLM as bge-reranker-v2-gemma (multi-query attention, tied, the legacy hidden_act "gelu" its
    config has): score = logit("Yes") at the last position (the model card)."""
    config = transformers.GemmaConfig(
        vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=1,
        head_dim=16, intermediate_size=128, max_position_embeddings=512, rms_norm_eps=1e-6, rope_theta=10000.0,
        hidden_act="gelu", pad_token_id=0, eos_token_id=1, bos_token_id=2, tie_word_embeddings=True,
        attn_implementation="eager")
    return dict(cls=transformers.GemmaForCausalLM, config=config, seed=442, ids="random", perturb="gemma",
                legacy_config={"hidden_act": "gelu"},
                reranker=dict(tokenizer=gemma_tokenizer, yes="Yes", no=None, pair_ids=gemma_pair_ids,
                              reference="bge-reranker-v2-gemma model card get_inputs; score logit('Yes')"))


# bge-reranker-v2.5-gemma2-lightweight's default prompt (FlagEmbedding's LightweightLLMReranker,
# inference/reranker/decoder_only/lightweight.py); its inputs are laid out as bge-reranker-v2-gemma's.
GEMMA2_LIGHTWEIGHT_PROMPT = "Predict whether passage B contains an answer to query A."


def gemma2_pair_ids(tokenizer, query, document, instruction=None):
    """gemma_pair_ids with the lightweight reranker's prompt: its compute_score_single_gpu builds the same
    [bos] + "A: query", sep + "B: passage" (only_second truncation), sep, prompt."""
    return gemma_pair_ids(tokenizer, query, document, instruction=instruction or GEMMA2_LIGHTWEIGHT_PROMPT)


def gemma2_reranker():
    """Gemma2ForCausalLM as a yes/no reranker (tied, grouped-query, layers [sliding, full, sliding] with a window of
    16 that the longer sequences exceed, query_pre_attn_scalar 24 != head_dim, embedding rows x10 so the tied head's
    logits are of order 1): score = logit("Yes") at the last
    position of the full, soft-capped logits (Gemma2ForCausalLM applies final_logit_softcapping to them). The caps
    are small, so both change the outputs far beyond the tolerance (report.json's softcap checks). The folder's
    yes_no_reranker.json keeps the bge-reranker-v2-gemma preset (its layout is the lightweight reranker's) with the
    lightweight's prompt; its per-layer heads and token compression are not Gemma2ForCausalLM's."""
    config = transformers.Gemma2Config(
        vocab_size=VOCAB, hidden_size=64, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
        head_dim=16, intermediate_size=128, max_position_embeddings=512, rms_norm_eps=1e-6, rope_theta=10000.0,
        hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=24, sliding_window=16,
        attn_logit_softcapping=2.0, final_logit_softcapping=1.0, pad_token_id=0, eos_token_id=1, bos_token_id=2,
        tie_word_embeddings=True, attn_implementation="eager")
    return dict(cls=transformers.Gemma2ForCausalLM, config=config, seed=443, ids="random", perturb="gemma",
                windowed=True, softcapped=True, embedding_gain=10.0,
                yes_no_template={"preset": "bge-reranker-v2-gemma", "instruction": GEMMA2_LIGHTWEIGHT_PROMPT},
                reranker=dict(tokenizer=gemma_tokenizer, yes="Yes", no=None, pair_ids=gemma2_pair_ids,
                              reference="bge-reranker-v2-gemma model card get_inputs with the v2.5-gemma2-lightweight "
                                        "prompt; score logit('Yes') of Gemma2ForCausalLM's soft-capped logits"))


def distilbert(labels=0, splade=False):
    kwargs = dict(vocab_size=VOCAB, dim=64, n_layers=2, n_heads=4, hidden_dim=128, max_position_embeddings=512,
                  sinusoidal_pos_embds=False, activation="gelu", pad_token_id=0, attn_implementation="eager")
    if labels:
        names = ["negative", "neutral", "positive"]
        kwargs.update(num_labels=3, id2label=dict(enumerate(names)), label2id={n: i for i, n in enumerate(names)})
    config = transformers.DistilBertConfig(**kwargs)
    cls = transformers.DistilBertForSequenceClassification if labels else transformers.DistilBertModel
    if splade:
        # DistilBertForMaskedLM (naver/splade_v2_distil and its kin): vocab_transform → GELU →
        # vocab_layer_norm → vocab_projector, tied to the word embeddings, with its own bias.
        cls = transformers.DistilBertForMaskedLM
    return dict(cls=cls, config=config, seed=110 if splade else 101, ids=(101, 102), pad=0, learned_positions=True,
                splade=splade)


def mpnet():
    config = transformers.MPNetConfig(
        vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
        max_position_embeddings=514, relative_attention_num_buckets=32, layer_norm_eps=1e-5, hidden_act="gelu",
        pad_token_id=1, bos_token_id=0, eos_token_id=2, attn_implementation="eager")
    return dict(cls=transformers.MPNetModel, config=config, seed=102, ids=(0, 2), pad=1, learned_positions=True)


def roberta_classifier():
    config = transformers.RobertaConfig(
        vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
        max_position_embeddings=514, type_vocab_size=1, layer_norm_eps=1e-5, pad_token_id=1, bos_token_id=0,
        eos_token_id=2, num_labels=2, id2label={0: "not_entailment", 1: "entailment"},
        label2id={"not_entailment": 0, "entailment": 1}, attn_implementation="eager")
    return dict(cls=transformers.RobertaForSequenceClassification, config=config, seed=103, ids=(0, 2), pad=1,
                learned_positions=True)


def roberta_splade():
    # RobertaForMaskedLM: lm_head.dense → erf-GELU → lm_head.layer_norm → decoder (tied) + lm_head.bias.
    config = transformers.RobertaConfig(
        vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
        max_position_embeddings=514, type_vocab_size=1, layer_norm_eps=1e-5, pad_token_id=1, bos_token_id=0,
        eos_token_id=2, attn_implementation="eager")
    return dict(cls=transformers.RobertaForMaskedLM, config=config, seed=109, ids=(0, 2), pad=1,
                learned_positions=True, splade=True)


def camembert():
    # camembert-base: pad 1, <s> 5, </s> 6 in its sentencepiece vocabulary; type_vocab_size 1.
    config = transformers.CamembertConfig(
        vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
        max_position_embeddings=514, type_vocab_size=1, layer_norm_eps=1e-5, pad_token_id=1, bos_token_id=5,
        eos_token_id=6, attn_implementation="eager")
    return dict(cls=transformers.CamembertModel, config=config, seed=104, ids=(5, 6), pad=1, learned_positions=True)


def modernbert(labels=0, variant="plain"):
    # Written in the format of answerdotai/ModernBERT-base's config.json (global_attn_every_n_layers,
    # global/local_rope_theta, local_attention); transformers 5 turns that into layer_types and
    # rope_parameters, which are written alongside.
    kwargs = dict(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=3, num_attention_heads=4, intermediate_size=128,
                  max_position_embeddings=512, global_attn_every_n_layers=2, local_attention=16,
                  global_rope_theta=160000.0, local_rope_theta=10000.0, hidden_activation="gelu", norm_eps=1e-5,
                  norm_bias=False, attention_bias=False, mlp_bias=False, pad_token_id=3, bos_token_id=1,
                  cls_token_id=1, eos_token_id=2, sep_token_id=2, attn_implementation="eager")
    if labels:
        kwargs.update(num_labels=1, classifier_pooling="cls", classifier_activation="gelu", classifier_bias=False)
    if variant == "biased-mean":
        # Every optional bias on and mean pooling: the paths the real checkpoints leave unused.
        kwargs.update(norm_bias=True, attention_bias=True, mlp_bias=True, classifier_bias=True,
                      classifier_pooling="mean")
    config = transformers.ModernBertConfig(**kwargs)
    legacy = dict(global_attn_every_n_layers=2, global_rope_theta=160000.0, local_rope_theta=10000.0)
    cls = transformers.ModernBertForSequenceClassification if labels else transformers.ModernBertModel
    return dict(cls=cls, config=config, seed=105, ids=(1, 2), pad=3, legacy_config=legacy, windowed=True)


def gemma3():
    # EmbeddingGemma-300m's non-size settings (its config.json): bidirectional attention,
    # gelu_pytorch_tanh, rms_norm_eps 1e-6, rope 1e6 global / 1e4 local (written as rope_theta and
    # rope_local_base_freq, as there), no softcapping, pad 0 / eos 1 / bos 2. query_pre_attn_scalar
    # is 24 here, not head_dim (16), so that an engine scaling by head_dim fails.
    layer_types = ["sliding_attention", "full_attention", "sliding_attention"]
    config = transformers.Gemma3TextConfig(
        vocab_size=VOCAB, hidden_size=64, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
        head_dim=16, intermediate_size=128, max_position_embeddings=2048, hidden_activation="gelu_pytorch_tanh",
        rms_norm_eps=1e-6, query_pre_attn_scalar=24, sliding_window=16, layer_types=layer_types,
        use_bidirectional_attention=True, attn_logit_softcapping=None, final_logit_softcapping=None,
        attention_bias=False, pad_token_id=0, eos_token_id=1, bos_token_id=2,
        rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 1_000_000.0},
                         "sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0}},
        attn_implementation="eager")
    legacy = dict(rope_theta=1_000_000.0, rope_local_base_freq=10_000.0, rope_scaling=None)
    return dict(cls=transformers.Gemma3TextModel, config=config, seed=106, ids=(2, 1), pad=0, perturb="gemma",
                legacy_config=legacy, windowed=True)


def llama():
    config = transformers.LlamaConfig(
        vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        head_dim=16, intermediate_size=128, max_position_embeddings=512, rope_theta=500_000.0, rms_norm_eps=1e-5,
        attention_bias=False, mlp_bias=False, tie_word_embeddings=False, attn_implementation="eager")
    return dict(cls=transformers.LlamaModel, config=config, seed=31, ids="random", perturb="qwen3")


def mistral():
    # sliding_window 16 < the longer sequences, so the causal window matters.
    config = transformers.MistralConfig(
        vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        head_dim=16, intermediate_size=128, max_position_embeddings=512, rope_theta=1_000_000.0, rms_norm_eps=1e-5,
        sliding_window=16, tie_word_embeddings=False, attn_implementation="eager")
    return dict(cls=transformers.MistralModel, config=config, seed=37, ids="random", perturb="qwen3")


def deberta(labels=0, variant="v3"):
    """DeBERTa-v3 (microsoft/deberta-v3-base's settings, mxbai-rerank-v1 / NLI cross-encoders) or a
    DeBERTa-v2 variant without position buckets. v3: log buckets (position_buckets 32 here, so the
    64- and 130-token sequences reach the logarithmic buckets beyond 16), share_att_key, p2c+c2p,
    LayerNorm-ed relative embeddings, no absolute positions, no token types. v2: raw distances
    clamped at max_relative_positions 48 (< 130), its own pos_query_proj / pos_key_proj, absolute
    positions and 2 token types, pos_att_type in the legacy "c2p|p2c" string form, head_dim 24."""
    common = dict(vocab_size=VOCAB, hidden_act="gelu", max_position_embeddings=512, relative_attention=True,
                  pad_token_id=0, attn_implementation="eager")
    if variant == "v3":
        kwargs = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                      type_vocab_size=0, layer_norm_eps=1e-7, position_buckets=32, max_relative_positions=-1,
                      pos_att_type=["p2c", "c2p"], share_att_key=True, norm_rel_ebd="layer_norm",
                      position_biased_input=False)
    else:
        kwargs = dict(hidden_size=72, num_hidden_layers=3, num_attention_heads=3, intermediate_size=96,
                      type_vocab_size=2, layer_norm_eps=1e-7, position_buckets=-1, max_relative_positions=48,
                      pos_att_type="c2p|p2c", share_att_key=False, norm_rel_ebd="none", position_biased_input=True)
    if variant == "v2-c2p":
        kwargs.update(pos_att_type=["c2p"], pooler_hidden_act="tanh")
    if labels == 1:
        kwargs.update(num_labels=1, id2label={0: "LABEL_0"}, label2id={"LABEL_0": 0})
    elif labels:
        names = ["entailment", "neutral", "contradiction"]
        kwargs.update(num_labels=3, id2label=dict(enumerate(names)), label2id={n: i for i, n in enumerate(names)})
    config = transformers.DebertaV2Config(**common, **kwargs)
    cls = transformers.DebertaV2ForSequenceClassification if labels else transformers.DebertaV2Model
    # deberta-v3's spm vocabulary: [PAD] 0, [CLS] 1, [SEP] 2.
    return dict(cls=cls, config=config, seed=107 if variant == "v3" else 108, ids=(1, 2), pad=0,
                learned_positions=variant != "v3")


def bert(head=None):
    # BERT with both token types and erf-GELU; ids [CLS]=1 … [SEP]=2, pad 0 (VOCAB is 1000).
    kwargs = dict(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                  max_position_embeddings=512, type_vocab_size=2, layer_norm_eps=1e-12, hidden_act="gelu",
                  pad_token_id=0, attn_implementation="eager")
    cls = transformers.BertModel
    if head == "classifier":
        names = ["contradiction", "entailment", "neutral"]
        kwargs.update(num_labels=3, id2label=dict(enumerate(names)), label2id={n: i for i, n in enumerate(names)})
        cls = transformers.BertForSequenceClassification
    elif head == "splade":
        cls = transformers.BertForMaskedLM  # decoder tied to the word embeddings, as SPLADE checkpoints are
    return dict(cls=cls, config=transformers.BertConfig(**kwargs), seed=107 if head == "classifier" else 108,
                ids=(1, 2), pad=0, learned_positions=True, extra_poolings=True, splade=head == "splade",
                old_norm_names=head == "splade")


# ---------------------------------------------------------------- issue 48: bidirectional Llama / Qwen3 encoders

def eurobert(native=False):
    """EuroBERT: Llama blocks attending bidirectionally (transformers' own EuroBertModel). The hub
    layout (EuroBERT/EuroBERT-210m): EuroBertForMaskedLM (backbone under model., untied lm_head),
    rope_theta beside an auto_map naming modeling_eurobert, no rope_parameters; goldens are its
    backbone's. The native layout: EuroBertModel as save_pretrained writes it (rope_parameters),
    here with attention_bias on (biases on q/k/v and o_proj) and stored in BF16."""
    config = transformers.EuroBertConfig(
        vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        intermediate_size=128, max_position_embeddings=512, rms_norm_eps=1e-5, hidden_act="silu",
        rope_parameters={"rope_type": "default", "rope_theta": 250000.0}, attention_bias=native, mlp_bias=False,
        tie_word_embeddings=False, pad_token_id=1, bos_token_id=0, eos_token_id=1, mask_token_id=2,
        attn_implementation="eager")
    if native:
        return dict(cls=transformers.EuroBertModel, config=config, seed=481, ids=(0, 1), pad=1,
                    storage=torch.bfloat16)
    hub = dict(architectures=["EuroBertForMaskedLM"], rope_theta=250000.0,
               auto_map={"AutoConfig": "configuration_eurobert.EuroBertConfig",
                         "AutoModel": "modeling_eurobert.EuroBertModel",
                         "AutoModelForMaskedLM": "modeling_eurobert.EuroBertForMaskedLM",
                         "AutoModelForPreTraining": "modeling_eurobert.EuroBertPreTrainedModel"})
    return dict(cls=transformers.EuroBertForMaskedLM, config=config, seed=482, ids=(0, 1), pad=1, embedder=True,
                legacy_config=hub, drop_config_keys=["rope_parameters"])


EUROBERT_AUTO_MAP = {"AutoConfig": "configuration_eurobert.EuroBertConfig",
                     "AutoModel": "modeling_eurobert.EuroBertModel",
                     "AutoModelForMaskedLM": "modeling_eurobert.EuroBertForMaskedLM",
                     "AutoModelForPreTraining": "modeling_eurobert.EuroBertPreTrainedModel",
                     "AutoModelForSequenceClassification": "modeling_eurobert.EuroBertForSequenceClassification"}


def eurobert_classifier(pooling, labels=1, hub=False, storage=None):
    """EuroBertForSequenceClassification (transformers' own): the backbone under model., then dense ->
    nn.GELU() -> classifier, pooled by classifier_pooling: "bos" (token 0 through the head), "mean"
    (the mean of the tokens through the head) or "late" (the head on every token, logits averaged).
    With labels > 1, id2label names them. hub: the config.json a fine-tune of the hub's remote code
    writes (its key clf_pooling instead of classifier_pooling, rope_theta, an auto_map naming
    modeling_eurobert), which transformers 5.25 reloads with its own class. Besides the usual
    goldens, report.json's batch_check runs all six sequences as one right-padded batch with an
    attention mask, as transformers computes a packed batch, against the single-sequence logits."""
    shapes = dict(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                  intermediate_size=128, max_position_embeddings=512, rms_norm_eps=1e-5, hidden_act="silu",
                  rope_parameters={"rope_type": "default", "rope_theta": 250000.0}, attention_bias=not hub,
                  mlp_bias=False, tie_word_embeddings=False, pad_token_id=1, bos_token_id=0, eos_token_id=1,
                  mask_token_id=2, classifier_pooling=pooling, num_labels=labels, attn_implementation="eager")
    if labels > 1:
        names = ["negative", "neutral", "positive"][:labels]
        shapes.update(id2label=dict(enumerate(names)), label2id={n: i for i, n in enumerate(names)})
    spec = dict(cls=transformers.EuroBertForSequenceClassification, config=transformers.EuroBertConfig(**shapes),
                seed=490 + labels + ["bos", "mean", "late"].index(pooling), ids=(0, 1), pad=1, batch_check=True,
                storage=storage)
    if hub:
        spec.update(legacy_config=dict(clf_pooling=pooling, rope_theta=250000.0, auto_map=EUROBERT_AUTO_MAP),
                    drop_config_keys=["rope_parameters", "classifier_pooling"])
    return spec


def pplx_embed():
    """pplx-embed-v1 (model_type bidirectional_pplx_qwen3): its remote PPLXQwen3Model is Qwen3Model
    with every layer's is_causal off. Reference: transformers' Qwen3Model, eager attention, with
    modeling_qwen3.create_causal_mask replaced by one that returns None (every key of the sequence
    allowed; checked per layer in report.json), written with the hub's config keys. Besides the
    usual tensors: `scaled_tanh_mean_i` = 127·tanh(mean) and `int8_mean_i` = round(127·tanh(mean))
    (torch.round, half to even), the vector TEI's pplx1.rs serves."""
    config = transformers.Qwen3Config(
        vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        head_dim=16, intermediate_size=128, max_position_embeddings=512, rope_theta=1_000_000.0,
        rms_norm_eps=1e-6, tie_word_embeddings=False, use_cache=False, attn_implementation="eager")
    hub = dict(model_type="bidirectional_pplx_qwen3", architectures=["PPLXQwen3Model"],
               use_bidirectional_attention=True,
               auto_map={"AutoConfig": "configuration.PPLXQwen3Config", "AutoModel": "modeling.PPLXQwen3Model"})
    return dict(cls=transformers.Qwen3Model, config=config, seed=483, ids="random", perturb="qwen3",
                bidirectional=True, legacy_config=hub, reload=transformers.Qwen3Model, tanh_int8=True)


def llama_bidirectional():
    """llama-nemotron-embed (model_type llama_bidirec): the remote LlamaBidirectionalModel is LlamaModel
    with the causal mask off. Reference: transformers' LlamaModel, eager attention,
    modeling_llama.create_causal_mask returning None. Llama 3's RoPE scaling with
    original_max_position_embeddings 64, so that with head_dim 16 and theta 500000 one frequency is kept,
    one interpolated and the others divided by the factor. Hub config keys: rope_theta and
    rope_scaling (no rope_parameters), pooling "avg", auto_map."""
    scaling = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 64}
    config = transformers.LlamaConfig(
        vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        head_dim=16, intermediate_size=128, max_position_embeddings=512, rms_norm_eps=1e-5,
        rope_parameters={"rope_theta": 500_000.0, **scaling}, attention_bias=False, mlp_bias=False,
        tie_word_embeddings=False, attn_implementation="eager")
    hub = dict(model_type="llama_bidirec", architectures=["LlamaBidirectionalModel"], pooling="avg", temperature=1.0,
               rope_theta=500_000.0, rope_scaling=scaling,
               auto_map={"AutoConfig": "llama_bidirectional_model.LlamaBidirectionalConfig",
                         "AutoModel": "llama_bidirectional_model.LlamaBidirectionalModel"})
    return dict(cls=transformers.LlamaModel, config=config, seed=484, ids="random", perturb="qwen3",
                bidirectional=True, legacy_config=hub, drop_config_keys=["rope_parameters"],
                reload=transformers.LlamaModel)



class LlamaBidirectionalRerankerReference(transformers.LlamaPreTrainedModel):
    """llama-nemotron-rerank's LlamaBidirectionalForSequenceClassification, written after NVIDIA's remote
    code as NeMo Automodel publishes it (NVIDIA-NeMo/Automodel, llama_bidirectional_model.py; vLLM's
    LlamaBidirectionalForSequenceClassification, as_seq_cls_model of Llama with the pooling type its
    LlamaBidirectionalConfig sets, restates it): LlamaModel attending bidirectionally (the module's
    create_causal_mask returns None here, NoCausalMask), its last hidden states with the padding
    zeroed, summed and divided by the number of real tokens ("pooling": "avg"; the sequences here are
    unpadded, so every token counts), then `score` = nn.Linear(hidden, num_labels, bias=False), the
    logits divided by config.temperature. No sigmoid: the logits are the scores."""

    def __init__(self, config):
        super().__init__(config)
        self.num_labels = config.num_labels
        self.score = torch.nn.Linear(config.hidden_size, self.num_labels, bias=False)
        self.model = transformers.LlamaModel(config)
        self.post_init()

    def forward(self, input_ids, attention_mask=None, **kwargs):
        hidden_states = self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        last_hidden = hidden_states.masked_fill(~attention_mask[..., None].bool(), 0.0)
        pooled = last_hidden.sum(dim=1) / attention_mask.sum(dim=1)[..., None]
        logits = self.score(pooled) / getattr(self.config, "temperature", 1.0)
        return transformers.modeling_outputs.SequenceClassifierOutputWithPast(logits=logits)


def nemotron_tokenizer():
    """A byte-level BPE tokenizer.json of < VOCAB ids laid out as Llama 3's: "<|begin_of_text|>" put before
    every text by its TemplateProcessing post-processor, and again before the second text of a pair (the
    pair encoding llama-nemotron-rerank was not trained on); trained on the card's prompts of the pairs."""
    from tokenizers import processors
    tokenizer = byte_level_bpe([nemotron_prompt(q, d) for q, d in RERANKER_PAIRS] * 3,
                               ["<|begin_of_text|>", "<|end_of_text|>"])
    bos = tokenizer.token_to_id("<|begin_of_text|>")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A:0 <|begin_of_text|>:1 $B:1",
        special_tokens=[("<|begin_of_text|>", bos)])
    return tokenizer


def nemotron_prompt(query, passage):
    """llama-nemotron-rerank's model card prompt_template (NeMo Automodel's CrossEncoderCollator default)."""
    return f"question:{query} \n \n passage:{passage}"


def llama_bidirectional_reranker():
    """llama-nemotron-rerank (LlamaBidirectionalForSequenceClassification, model_type llama_bidirec):
    tiny-llama-bidirectional's backbone and hub config (Llama 3's RoPE scaling, pooling "avg",
    temperature 1.0) with the reranker's head, one label, in the hub's layout (the backbone under
    "model.", `score.weight` [1, hidden] beside it). Reference: LlamaBidirectionalRerankerReference."""
    spec = llama_bidirectional()
    spec["config"].num_labels = 1
    # transformers 5.25 refuses to save a config holding "temperature" (a generation parameter): the
    # hub's 1.0 goes into config.json with the other hub keys (legacy_config), the identity here.
    spec["legacy_config"] = dict(
        spec["legacy_config"], architectures=["LlamaBidirectionalForSequenceClassification"],
        auto_map=dict(spec["legacy_config"]["auto_map"], AutoModelForSequenceClassification=(
            "llama_bidirectional_model.LlamaBidirectionalForSequenceClassification")))
    return dict(spec, cls=LlamaBidirectionalRerankerReference, seed=485, reload=LlamaBidirectionalRerankerReference,
                mask_module=transformers.models.llama.modeling_llama.__name__, reranker_pooling_check=True,
                pair_prompt=dict(tokenizer=nemotron_tokenizer, text=nemotron_prompt),
                reference=("LlamaBidirectionalRerankerReference: transformers' LlamaModel (eager, create_causal_mask "
                           "returning None), then the pooling and head of NVIDIA's llama_bidirectional_model.py "
                           "as NVIDIA-NeMo/Automodel publishes it: masked mean ('avg'), score Linear without bias, "
                           "logits / temperature, no sigmoid (vLLM's LlamaBidirectionalForSequenceClassification agrees)"))


class VoyageQwen3BidirectionalReference(transformers.Qwen3PreTrainedModel):
    """voyage-4-nano's Qwen3BidirectionalModel (its modeling_qwen3_bidirectional.py; vLLM's and SGLang's
    VoyageQwen3BidirectionalEmbedModel and TEI's qwen3.rs restate it): transformers' Qwen3Model with every
    layer's is_causal off and a mask of the padding alone (create_causal_mask returns None here: one
    unpadded sequence), then `linear` = nn.Linear(hidden, num_labels, bias=False) on its last hidden
    state, which is the model's output. Returned as `logits` [1, L, num_labels] beside the backbone's
    hidden state (run() reads both); sentence-transformers then mean-pools and normalises."""

    def __init__(self, config):
        super().__init__(config)
        self.model = transformers.Qwen3Model(config)
        self.linear = torch.nn.Linear(config.hidden_size, config.num_labels, bias=False)
        self.post_init()

    def forward(self, input_ids, attention_mask=None, **kwargs):
        hidden_states = self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        return transformers.modeling_outputs.SequenceClassifierOutputWithPast(logits=self.linear(hidden_states))


def voyage_qwen3_bidirectional():
    """voyage-4-nano (Qwen3BidirectionalModel, model_type qwen3) in the hub's layout: the backbone under
    "model.", `linear.weight` [num_labels, hidden] beside it, config.json with use_bidirectional_attention,
    num_labels and the auto_map of its remote code. Goldens: last_hidden_state_i is the backbone's,
    projected_hidden_state_i the model's output (linear of it), and mean_pooled_i, cls_pooled_i and
    last_token_i are poolings of that output (sentence-transformers mean-pools it, then normalises)."""
    config = transformers.Qwen3Config(
        vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        head_dim=16, intermediate_size=128, max_position_embeddings=512, rope_theta=1_000_000.0,
        rms_norm_eps=1e-6, tie_word_embeddings=True, use_cache=False, num_labels=48,
        attn_implementation="eager")
    hub = dict(architectures=["Qwen3BidirectionalModel"], use_bidirectional_attention=True, num_labels=48,
               auto_map={"AutoModel": "modeling_qwen3_bidirectional.Qwen3BidirectionalModel"})
    return dict(cls=VoyageQwen3BidirectionalReference, config=config, seed=486, ids="random", perturb="qwen3",
                bidirectional=True, legacy_config=hub, drop_config_keys=["id2label", "label2id"],
                mask_module=transformers.models.qwen3.modeling_qwen3.__name__,
                reload=VoyageQwen3BidirectionalReference, projection=True,
                reference=("VoyageQwen3BidirectionalReference: transformers' Qwen3Model (eager, create_causal_mask "
                           "returning None), then voyage-4-nano's `linear` without bias on every token, as its "
                           "modeling_qwen3_bidirectional.py (vLLM's, SGLang's VoyageQwen3BidirectionalEmbedModel and "
                           "TEI's qwen3.rs agree); mean pooling of the projected tokens"))


# ---------------------------------------------------------------- issue 48: rotary post-norm encoders

def new_impl_ntk_parameters(config, device=None, seq_len=None, layer_type=None):
    """GTE's fixed NTK scaling, as Alibaba-NLP/new-impl's NTKScalingRotaryEmbedding (mixed_b None)
    computes it for every sequence length when factor > 1 (its cache is built for
    max_position_embeddings * factor): inv_freq = 1 / (base * f) ** (arange(0, d, 2) / d), then
    divided by f ** (2 / d). transformers 5.25 has no such rope_type (GteModel raises KeyError 'ntk'
    on the hub's rope_scaling), so the goldens register this one for GteRotaryEmbedding."""
    parameters = config.rope_parameters
    base, factor = parameters["rope_theta"], parameters["factor"]
    dim = config.hidden_size // config.num_attention_heads
    inv_freq = 1.0 / ((base * factor) ** (torch.arange(0, dim, 2).float() / dim))
    return inv_freq / factor ** (2 / dim), 1.0


transformers.modeling_rope_utils.ROPE_INIT_FUNCTIONS["ntk"] = new_impl_ntk_parameters

NOMIC_AUTO_MAP = {
    "AutoConfig": "nomic-ai/nomic-bert-2048--configuration_hf_nomic_bert.NomicBertConfig",
    "AutoModel": "nomic-ai/nomic-bert-2048--modeling_hf_nomic_bert.NomicBertModel",
    "AutoModelForMaskedLM": "nomic-ai/nomic-bert-2048--modeling_hf_nomic_bert.NomicBertForPreTraining"}
GTE_AUTO_MAP = {
    "AutoConfig": "Alibaba-NLP/new-impl--configuration.NewConfig",
    "AutoModel": "Alibaba-NLP/new-impl--modeling.NewModel",
    "AutoModelForMaskedLM": "Alibaba-NLP/new-impl--modeling.NewForMaskedLM",
    "AutoModelForMultipleChoice": "Alibaba-NLP/new-impl--modeling.NewForMultipleChoice",
    "AutoModelForQuestionAnswering": "Alibaba-NLP/new-impl--modeling.NewForQuestionAnswering",
    "AutoModelForSequenceClassification": "Alibaba-NLP/new-impl--modeling.NewForSequenceClassification",
    "AutoModelForTokenClassification": "Alibaba-NLP/new-impl--modeling.NewForTokenClassification"}


def rewrite_tensors(out, convert):
    """model.safetensors rewritten by convert(tensors) -> tensors (names and fusing), dtypes kept."""
    path = out / "model.safetensors"
    with safe_open(path, "pt") as f:
        tensors = {name: f.get_tensor(name) for name in f.keys()}
    save_file({k: v.contiguous() for k, v in convert(tensors).items()}, path, metadata={"format": "pt"})


def take(tensors, used, name):
    used.add(name)
    return tensors[name]


def take_nomic_embeddings(tensors, used, hub):
    """NomicBERT's embeddings under the hub's names (v1.5's and v2-moe's layouts alike): the word
    and token-type tables as they are, the embeddings' LayerNorm as emb_ln."""
    for name in ("embeddings.word_embeddings.weight", "embeddings.token_type_embeddings.weight"):
        hub[name] = take(tensors, used, name)
    for suffix in ("weight", "bias"):
        hub[f"emb_ln.{suffix}"] = take(tensors, used, f"embeddings.LayerNorm.{suffix}")


def nomic_hub_tensors(layers):
    """transformers' NomicBertModel names -> the hub's (nomic-embed-text-v1.5's model.safetensors),
    the inverse of conversion_mapping.py's "nomic_bert" entry: q|k|v fused into attn.Wqkv,
    up_proj -> mlp.fc11, gate_proj -> mlp.fc12, down_proj -> mlp.fc2."""
    def convert(tensors):
        if "emb_ln.weight" in tensors:  # save_pretrained already wrote the hub's names
            return tensors
        used, hub = set(), {}
        take_nomic_embeddings(tensors, used, hub)
        for i in range(layers):
            old, new = f"layers.{i}.", f"encoder.layers.{i}."
            hub[new + "attn.Wqkv.weight"] = torch.cat(
                [take(tensors, used, old + f"self_attn.{p}_proj.weight") for p in "qkv"])
            hub[new + "attn.out_proj.weight"] = take(tensors, used, old + "self_attn.o_proj.weight")
            hub[new + "mlp.fc11.weight"] = take(tensors, used, old + "mlp.up_proj.weight")
            hub[new + "mlp.fc12.weight"] = take(tensors, used, old + "mlp.gate_proj.weight")
            hub[new + "mlp.fc2.weight"] = take(tensors, used, old + "mlp.down_proj.weight")
            for norm, hub_norm in (("post_attention_layernorm", "norm1"), ("post_mlp_layernorm", "norm2")):
                for suffix in ("weight", "bias"):
                    hub[new + f"{hub_norm}.{suffix}"] = take(tensors, used, old + f"{norm}.{suffix}")
        assert used == set(tensors), set(tensors) - used
        return hub
    return convert


def gte_hub_tensors(layers):
    """transformers' Gte* names -> the hub's (Alibaba-NLP/new-impl), the inverse of
    conversion_mapping.py's "gte" entry: gte. -> new., layers -> encoder.layer, q|k|v fused into
    attention.qkv_proj, up|gate (up first) into mlp.up_gate_proj, norms attn_ln / mlp_ln."""
    def convert(tensors):
        if any(".attention.qkv_proj." in name for name in tensors):  # save_pretrained wrote the hub's names
            return {"new." + name[len("gte."):] if name.startswith("gte.") else name: t for name, t in tensors.items()}
        used, hub = set(), {}
        prefix = "gte." if any(name.startswith("gte.") for name in tensors) else ""
        hub_prefix = "new." if prefix else ""
        for name in ("embeddings.word_embeddings.weight", "embeddings.token_type_embeddings.weight",
                     "embeddings.LayerNorm.weight", "embeddings.LayerNorm.bias",
                     "pooler.dense.weight", "pooler.dense.bias"):
            if prefix + name in tensors:
                hub[hub_prefix + name] = take(tensors, used, prefix + name)
        for name in ("classifier.weight", "classifier.bias"):
            if name in tensors:
                hub[name] = take(tensors, used, name)
        for i in range(layers):
            old, new = f"{prefix}layers.{i}.", f"{hub_prefix}encoder.layer.{i}."
            for suffix in ("weight", "bias"):
                hub[new + f"attention.qkv_proj.{suffix}"] = torch.cat(
                    [take(tensors, used, old + f"self_attn.{p}_proj.{suffix}") for p in "qkv"])
                hub[new + f"attention.o_proj.{suffix}"] = take(tensors, used, old + f"self_attn.o_proj.{suffix}")
                hub[new + f"mlp.down_proj.{suffix}"] = take(tensors, used, old + f"mlp.down_proj.{suffix}")
                hub[new + f"attn_ln.{suffix}"] = take(tensors, used, old + f"post_attention_layernorm.{suffix}")
                hub[new + f"mlp_ln.{suffix}"] = take(tensors, used, old + f"post_mlp_layernorm.{suffix}")
            hub[new + "mlp.up_gate_proj.weight"] = torch.cat(
                [take(tensors, used, old + "mlp.up_proj.weight"), take(tensors, used, old + "mlp.gate_proj.weight")])
        assert used == set(tensors), set(tensors) - used
        return hub
    return convert


def nomic_bert(hub=False):
    """NomicBERT (transformers' NomicBertModel): rotary post-norm encoder, SwiGLU, no biases. The
    native layout: save_pretrained's config.json with transformers' in-memory tensor names
    (save_pretrained itself writes the hub's names, as tiny-gte shows for GTE). The hub layout (nomic-embed-text-v1.5 as
    its remote code reads it): tensors renamed and fused as the hub stores them, config.json in
    the remote code's GPT2Config keys only (n_embd, …, rotary_emb_base 10000 here so that a reader
    taking transformers' default 1000 fails), stored in BF16. Its goldens are transformers' run of
    the same weights; the reload check loads the hub folder through conversion_mapping.py."""
    theta = 10000.0 if hub else 1000.0
    config = transformers.NomicBertConfig(
        vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
        max_position_embeddings=512, type_vocab_size=2, layer_norm_eps=1e-12, hidden_act="silu", pad_token_id=0,
        rope_parameters={"rope_type": "default", "rope_theta": theta}, attn_implementation="eager")
    spec = dict(cls=transformers.NomicBertModel, config=config, seed=485 + hub, ids=(1, 2), pad=0, rotary=True,
                state_dict_names=not hub)
    if hub:
        spec.update(storage=torch.bfloat16, hub_tensors=nomic_hub_tensors(2), reload_with_config=True, hub_config={
            "activation_function": "swiglu", "architectures": ["NomicBertModel"], "attn_pdrop": 0.0,
            "auto_map": NOMIC_AUTO_MAP, "bos_token_id": None, "causal": False, "dense_seq_output": True,
            "embd_pdrop": 0.0, "eos_token_id": None, "fused_bias_fc": True, "fused_dropout_add_ln": True,
            "initializer_range": 0.02, "layer_norm_epsilon": 1e-12, "max_trained_positions": 2048,
            "mlp_fc1_bias": False, "mlp_fc2_bias": False, "model_type": "nomic_bert", "n_embd": 64, "n_head": 4,
            "n_inner": 128, "n_layer": 2, "n_positions": 512, "pad_token_id": 0, "pad_vocab_size_multiple": 64,
            "parallel_block": False, "parallel_block_tied_norm": False, "prenorm": False, "qkv_proj_bias": False,
            "resid_pdrop": 0.0, "rotary_emb_base": 10000, "rotary_emb_fraction": 1.0,
            "rotary_emb_interleaved": False, "rotary_emb_scale_base": None, "rotary_scaling_factor": None,
            "summary_activation": None, "summary_first_dropout": 0.0, "summary_proj_to_labels": True,
            "summary_type": "cls_index", "summary_use_proj": True, "torch_dtype": "bfloat16",
            "type_vocab_size": 2, "use_cache": True, "use_flash_attn": True, "use_rms_norm": False,
            "use_xentropy": True, "vocab_size": VOCAB})
    return spec


def nomic_bert_variant(hub, fraction=1.0, dynamic=0.0, trained=2048, storage=None):
    """NomicBERT's rotary variants (issue 48), which the remote code computes and transformers 5.25's
    NomicBertModel computes, or computes once taught one of its own functions:
      - partial rotary (the hub's rotary_emb_fraction < 1): the remote code (flash-attn's
        apply_rotary_emb) rotates the first head_dim * fraction dimensions of each head, rotate-half
        within them, with frequencies over them, and passes the rest. transformers 5.25's
        NomicBertModel rotates whole heads; the reference is its model with two of transformers'
        own GPT-NeoX functions in place of its RoPE ones (NomicRotaryVariant): the inverse
        frequencies over int(head_dim * partial_rotary_factor) dimensions and the
        apply_rotary_pos_emb that rotates cos.shape[-1] dimensions and concatenates the rest.
      - dynamic NTK (the hub's rotary_scaling_factor f with max_trained_positions n; transformers'
        rope_type "dynamic" with factor f and max_position_embeddings n, native): a sequence of L > n
        tokens rotates with base * (f * L / n - (f - 1)) ** (d / (d - 2)). transformers computes it
        natively; its module keeps the largest length's frequencies between calls, so the reference
        resets that state before each sequence (NomicRotaryVariant): every golden is one sequence
        as a fresh model computes it.
    The hub folders hold the remote code's config keys (n_positions 512 serves every golden); the
    native one transformers' own config, whose served length stamen takes as factor * n."""
    spec = nomic_bert(hub=hub)
    parameters = {"rope_type": "default", "rope_theta": 10000.0 if hub else 1000.0}
    if dynamic:
        parameters.update(rope_type="dynamic", factor=dynamic)
    if fraction != 1.0:
        parameters["partial_rotary_factor"] = fraction
    config = spec["config"]
    config.rope_parameters = parameters
    config.max_position_embeddings = trained if dynamic else 512
    spec.update(seed=spec["seed"] + 10 + int(10 * fraction) + int(dynamic), nomic_rotary=True, storage=storage,
                state_dict_names=False)
    if hub:
        spec["hub_config"] = dict(spec["hub_config"], rotary_emb_fraction=fraction,
                                  rotary_scaling_factor=dynamic or None, max_trained_positions=trained,
                                  torch_dtype=str(storage or torch.float32).replace("torch.", ""))
    if storage is None:
        spec.pop("storage")
    return spec


class NomicRotaryVariant:
    """For a NomicBERT rotary-variant spec (nomic_bert_variant): transformers' GPT-NeoX partial-rotary
    functions in modeling_nomic_bert, and each forward of NomicBertRotaryEmbedding starting from the
    frequencies of its construction (dynamic NTK's per-call state reset)."""

    def __init__(self, spec):
        self.active = bool(spec.get("nomic_rotary"))

    def __enter__(self):
        if not self.active:
            return self
        from transformers.models.gpt_neox import modeling_gpt_neox as neox
        from transformers.models.nomic_bert import modeling_nomic_bert as nomic
        self.nomic = nomic
        self.saved = (nomic.apply_rotary_pos_emb, nomic.NomicBertRotaryEmbedding.compute_default_rope_parameters,
                      nomic.NomicBertRotaryEmbedding.forward)
        nomic.apply_rotary_pos_emb = neox.apply_rotary_pos_emb
        nomic.NomicBertRotaryEmbedding.compute_default_rope_parameters = \
            staticmethod(neox.GPTNeoXRotaryEmbedding.compute_default_rope_parameters)
        forward = self.saved[2]

        def fresh_forward(rotary, x, position_ids, *args, **kwargs):
            rotary.inv_freq = rotary.original_inv_freq.clone()
            rotary.max_seq_len_cached = rotary.original_max_seq_len
            return forward(rotary, x, position_ids, *args, **kwargs)

        nomic.NomicBertRotaryEmbedding.forward = fresh_forward
        return self

    def __exit__(self, *exc):
        if self.active:
            (self.nomic.apply_rotary_pos_emb, default, self.nomic.NomicBertRotaryEmbedding.forward) = self.saved
            self.nomic.NomicBertRotaryEmbedding.compute_default_rope_parameters = staticmethod(default)


def nomic_rotary_checks(spec, model, base, rows, golden, checks):
    """What each variant changes: the inverse frequencies per golden length (as transformers
    computed them), and how far whole-head RoPE (partial) or unscaled RoPE (dynamic) would be from
    the goldens, per length, so an engine that ignores either fails."""
    config = model.config
    rotary = base.rotary_emb
    parameters = dict(config.rope_parameters)
    checks["rope_parameters"] = parameters
    frequencies = {}
    for i, ids in enumerate(rows):
        with torch.no_grad():
            rotary(base.embeddings.word_embeddings.weight[:1][None], torch.arange(len(ids))[None])
        frequencies[f"len_{len(ids)}"] = rotary.inv_freq.tolist()
    checks["rope_inv_freq_by_length"] = frequencies
    checks["rotary_dim"] = 2 * len(frequencies["len_1"])

    def distance(changed):
        return distance_with_config(base, {**config.to_dict(), "rope_parameters": changed}, rows, golden)

    if parameters.get("partial_rotary_factor", 1.0) != 1.0:
        checks["reference"] = (
            "transformers 5.25 NomicBertModel with transformers' own GPT-NeoX "
            "GPTNeoXRotaryEmbedding.compute_default_rope_parameters and apply_rotary_pos_emb in place of "
            "modeling_nomic_bert's (its own rotate whole heads), as the remote code's rotary_emb_fraction asks")
        whole = {k: v for k, v in parameters.items() if k != "partial_rotary_factor"}
        checks["max_abs_diff_with_whole_head_rope"] = distance(whole)
    if parameters.get("rope_type") == "dynamic":
        checks["reference_state"] = ("transformers 5.25 rope_type 'dynamic', its rotary module's frequencies reset "
                                     "before each sequence (one sequence per fresh model)")
        checks["max_abs_diff_without_dynamic_scaling"] = distance(
            {"rope_type": "default", "rope_theta": parameters["rope_theta"],
             **({"partial_rotary_factor": parameters["partial_rotary_factor"]}
                if "partial_rotary_factor" in parameters else {})})


# ---------------------------------------------------------------- NomicBERT with experts (nomic-embed-text-v2-moe)
#
# nomic's remote code for nomic-embed-text-v2-moe (nomic-ai/nomic-bert-2048's modeling_hf_nomic_bert.py:
# NomicRouter, NomicExpertMLP, NomicExperts, NomicMoELayer, as vLLM's
# vllm/model_executor/models/bert_with_rope.py restates them "for https://huggingface.co/nomic-ai/nomic-bert-2048",
# and as TEI's backends/candle/src/models/nomic.rs and nomic-ai/contrastors' layers/moe.py MoEBlock compute them),
# written out line by line below. transformers 5.25's NomicBertModel has neither experts nor the plain gelu MLP
# nor attention biases: the reference is its model with those modules put in (NomicMoePatch).

class NomicRouter(torch.nn.Module):
    def __init__(self, hidden_size, moe_num_experts, moe_top_k):
        super().__init__()
        self.moe_top_k = moe_top_k
        self.layer = torch.nn.Linear(hidden_size, moe_num_experts, bias=False)

    def forward(self, x):
        weights = self.layer(x.view(-1, x.shape[-1])).softmax(dim=-1, dtype=torch.float32)
        top_weights, top_experts = torch.topk(weights, self.moe_top_k, dim=-1)
        weights = weights.to(x.dtype)
        top_weights = top_weights.to(x.dtype)
        return weights, top_weights, top_experts


class NomicExpertMLP(torch.nn.Module):
    def __init__(self, hidden_size, ffn_hidden_size, moe_num_experts):
        super().__init__()
        self.hidden_size = hidden_size
        self.ffn_hidden_size = ffn_hidden_size
        self.moe_num_experts = moe_num_experts
        self.w1 = torch.nn.Parameter(torch.empty(moe_num_experts * ffn_hidden_size, hidden_size))
        self.w2 = torch.nn.Parameter(torch.empty(moe_num_experts * ffn_hidden_size, hidden_size))
        self.activation_fn = torch.nn.GELU()  # activation_function "gelu": exact (erf) gelu
        torch.nn.init.normal_(self.w1, std=0.02)  # the remote code's _init_weights: initializer_range
        torch.nn.init.normal_(self.w2, std=0.02)

    def forward(self, x, expert_idx):
        expert_w1 = self.w1.view(self.moe_num_experts, self.ffn_hidden_size, self.hidden_size)[expert_idx]
        expert_w2 = self.w2.view(self.moe_num_experts, self.ffn_hidden_size, self.hidden_size)[expert_idx]
        x1 = x.matmul(expert_w1.t())
        act_out = self.activation_fn(x1)
        x2 = act_out.matmul(expert_w2)
        return x2


class NomicExperts(torch.nn.Module):
    def __init__(self, config, hidden_size, ffn_hidden_size, moe_num_experts):
        super().__init__()
        self.moe_num_experts = moe_num_experts
        self.mlp = NomicExpertMLP(hidden_size=hidden_size, ffn_hidden_size=ffn_hidden_size,
                                  moe_num_experts=moe_num_experts)
        self.bias = torch.nn.Parameter(torch.zeros(hidden_size))

    def forward(self, x, weights, top_weights, top_experts):
        bsz, q_len, hidden_size = x.shape
        x = x.view(-1, hidden_size)
        out = torch.zeros_like(x)
        expert_mask = torch.nn.functional.one_hot(top_experts, num_classes=self.moe_num_experts).permute(2, 1, 0)
        for expert_idx in range(0, self.moe_num_experts):
            topk_idx, token_idx = torch.where(expert_mask[expert_idx])
            if token_idx.shape[0] == 0:
                continue
            token_list = token_idx.tolist()
            topk_list = topk_idx.tolist()
            expert_tokens = x[None, token_list].reshape(-1, hidden_size)
            expert_out = self.mlp(expert_tokens, expert_idx) * top_weights[token_list, topk_list, None]
            out.index_add_(0, token_idx, expert_out)
        out = out.reshape(bsz, q_len, hidden_size)
        return out + self.bias


class NomicMoELayer(torch.nn.Module):
    def __init__(self, config):
        super().__init__()
        self.router = NomicRouter(config.hidden_size, moe_num_experts=config.num_experts, moe_top_k=config.moe_top_k)
        self.experts = NomicExperts(config, hidden_size=config.hidden_size, ffn_hidden_size=config.intermediate_size,
                                    moe_num_experts=config.num_experts)

    def forward(self, x):
        weights, top_weights, top_experts = self.router(x)
        return self.experts(x, weights, top_weights, top_experts)


class NomicBertMLP(torch.nn.Module):
    """The remote code's plain MLP (contrastors' layers/mlp.py MLP) for activation_function "gelu", biased
    (mlp_fc1_bias, mlp_fc2_bias): fc2(gelu(fc1(x)))."""

    def __init__(self, config):
        super().__init__()
        self.fc1 = torch.nn.Linear(config.hidden_size, config.intermediate_size, bias=True)
        self.activation = torch.nn.functional.gelu
        self.fc2 = torch.nn.Linear(config.intermediate_size, config.hidden_size, bias=True)

    def forward(self, x):
        y = self.fc1(x)
        y = self.activation(y)
        return self.fc2(y)


def nomic_moe_model(config):
    """transformers' NomicBertModel as nomic-embed-text-v2-moe's remote code computes it: biased q/k/v/o
    (qkv_proj_bias), the plain gelu MLP in layer i unless i % moe_every_n_layers == 1, NomicMoELayer there."""
    model = transformers.NomicBertModel(config)
    for i, layer in enumerate(model.layers):
        attention = layer.self_attn
        for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
            old = getattr(attention, name)
            if old.bias is None:
                new = torch.nn.Linear(old.in_features, old.out_features, bias=True)
                with torch.no_grad():
                    new.weight.copy_(old.weight)
                    new.bias.zero_()
                setattr(attention, name, new)
        moe = config.moe_every_n_layers > 0 and i % config.moe_every_n_layers == 1
        layer.mlp = NomicMoELayer(config) if moe else NomicBertMLP(config)
    return model


def nomic_moe_hub_tensors(layers):
    """The reference's in-memory names -> nomic-embed-text-v2-moe's model.safetensors: q|k|v (weights
    and biases) fused into attn.Wqkv, o_proj -> attn.out_proj, norms norm1 / norm2, emb_ln, and the
    remote code's own mlp.fc1 / fc2, mlp.router.layer, mlp.experts.mlp.w1 / w2, mlp.experts.bias."""
    def convert(tensors):
        used, hub = set(), {}
        take_nomic_embeddings(tensors, used, hub)
        for i in range(layers):
            old, new = f"layers.{i}.", f"encoder.layers.{i}."
            for suffix in ("weight", "bias"):
                hub[new + f"attn.Wqkv.{suffix}"] = torch.cat(
                    [take(tensors, used, old + f"self_attn.{p}_proj.{suffix}") for p in "qkv"])
                hub[new + f"attn.out_proj.{suffix}"] = take(tensors, used, old + f"self_attn.o_proj.{suffix}")
                for norm, hub_norm in (("post_attention_layernorm", "norm1"), ("post_mlp_layernorm", "norm2")):
                    hub[new + f"{hub_norm}.{suffix}"] = take(tensors, used, old + f"{norm}.{suffix}")
            for name in [n for n in tensors if n.startswith(old + "mlp.")]:
                hub[new + name[len(old):]] = take(tensors, used, name)
        assert used == set(tensors), set(tensors) - used
        return hub
    return convert


def nomic_moe_from_hub(tensors, layers):
    """The inverse of nomic_moe_hub_tensors: the reference's names for a hub folder's tensors."""
    hidden = tensors["emb_ln.weight"].shape[0]
    state = {"embeddings.word_embeddings.weight": tensors["embeddings.word_embeddings.weight"],
             "embeddings.token_type_embeddings.weight": tensors["embeddings.token_type_embeddings.weight"],
             "embeddings.LayerNorm.weight": tensors["emb_ln.weight"], "embeddings.LayerNorm.bias": tensors["emb_ln.bias"]}
    for i in range(layers):
        old, new = f"encoder.layers.{i}.", f"layers.{i}."
        for suffix in ("weight", "bias"):
            for p, part in zip("qkv", tensors[old + f"attn.Wqkv.{suffix}"].split(hidden)):
                state[new + f"self_attn.{p}_proj.{suffix}"] = part
            state[new + f"self_attn.o_proj.{suffix}"] = tensors[old + f"attn.out_proj.{suffix}"]
            state[new + f"post_attention_layernorm.{suffix}"] = tensors[old + f"norm1.{suffix}"]
            state[new + f"post_mlp_layernorm.{suffix}"] = tensors[old + f"norm2.{suffix}"]
        for name in [n for n in tensors if n.startswith(old + "mlp.")]:
            state[new + name[len(old):]] = tensors[name]
    return state


def load_nomic_moe(spec, out):
    """The written hub folder read back into the reference (strictly: every tensor named, none left)."""
    model = nomic_moe_model(spec["config"])
    with safe_open(out / "model.safetensors", "pt") as f:
        tensors = {name: f.get_tensor(name) for name in f.keys()}
    model.load_state_dict(nomic_moe_from_hub(tensors, spec["config"].num_hidden_layers), strict=True)
    return model.eval()


def nomic_bert_moe():
    """nomic-embed-text-v2-moe in the hub's layout (its remote-code config.json and tensors, F32): 4 layers so
    that two (1 and 3) hold 8 experts of 128, top 2, without renormalisation; biases everywhere, gelu, one token
    type, eps 1e-5, rotary_emb_base 10000, XLM-R's <s> 0 / </s> 2 / <pad> 1. The reference is nomic_moe_model:
    transformers' NomicBertModel with nomic's MLP and experts (NomicMoELayer, above) and biased projections put in."""
    config = transformers.NomicBertConfig(
        vocab_size=VOCAB, hidden_size=64, num_hidden_layers=4, num_attention_heads=4, intermediate_size=128,
        max_position_embeddings=512, type_vocab_size=1, layer_norm_eps=1e-5, hidden_act="gelu", pad_token_id=1,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, attn_implementation="eager")
    config.num_experts, config.moe_top_k, config.moe_every_n_layers = 8, 2, 2
    return dict(cls=nomic_moe_model, config=config, seed=4880, ids=(0, 2), pad=1, nomic_moe=True,
                state_dict_names=True, no_save_pretrained=True, hub_tensors=nomic_moe_hub_tensors(4),
                reload_function=load_nomic_moe, hub_config={
        "activation_function": "gelu", "architectures": ["NomicBertModel"], "attn_pdrop": 0.0,
        "auto_map": NOMIC_AUTO_MAP, "bos_token_id": None, "causal": False, "dense_seq_output": True,
        "embd_pdrop": 0.0, "eos_token_id": None, "expert_choice_router": False, "ffn_div": 1,
        "fused_bias_fc": True, "fused_dropout_add_ln": True, "initializer_range": 0.02,
        "layer_norm_epsilon": 1e-05, "max_trained_positions": 2048, "mlp_fc1_bias": True, "mlp_fc2_bias": True,
        "model_type": "nomic_bert", "moe_every_n_layers": 2, "moe_impl": "megablocks",
        "moe_normalize_expert_weights": False, "moe_resid_pdrop": 0.0, "moe_top_k": 2, "n_embd": 64, "n_head": 4,
        "n_inner": 128, "n_layer": 4, "n_positions": 512, "num_experts": 8, "num_shared_experts": 0,
        "pad_token_id": 1, "pad_vocab_size_multiple": 64, "parallel_block": False, "parallel_block_tied_norm": False,
        "prenorm": False, "qkv_proj_bias": True, "resid_pdrop": 0.0, "rotary_emb_base": 10000,
        "rotary_emb_fraction": 1.0, "rotary_emb_interleaved": False, "rotary_emb_scale_base": None,
        "rotary_scaling_factor": None, "router_aux_loss_coef": 0.1, "torch_dtype": "float32", "type_vocab_size": 1,
        "use_cache": True, "use_flash_attn": True, "use_rms_norm": False, "use_xentropy": True, "vocab_size": VOCAB})


class ClassPatch:
    """Sets attributes of classes for the duration of a with block."""

    def __init__(self, *changes):
        self.changes = changes  # (class, name, value)

    def __enter__(self):
        self.saved = [(owner, name, owner.__dict__[name]) for owner, name, _ in self.changes]
        for owner, name, value in self.changes:
            setattr(owner, name, value)

    def __exit__(self, *exc):
        for owner, name, value in self.saved:
            setattr(owner, name, value)


def nomic_moe_checks(model, rows, golden, checks):
    """Which experts the goldens route to, how much of each token's probability the kept two carry,
    and how far each plausible misreading of nomic's experts would be from the goldens (all must
    exceed the tests' 1e-4)."""
    routers = [layer.mlp.router for layer in model.layers if isinstance(layer.mlp, NomicMoELayer)]
    counts = [[0] * model.config.num_experts for _ in routers]
    kept = []
    forward = NomicRouter.forward

    def recording(router, x):
        weights, top_weights, top_experts = forward(router, x)
        for expert in top_experts.flatten().tolist():
            counts[routers.index(router)][expert] += 1
        kept.extend(top_weights.sum(-1).tolist())
        return weights, top_weights, top_experts

    with ClassPatch((NomicRouter, "forward", recording)), torch.no_grad():
        for ids in rows:
            model(input_ids=ids[None])
    checks["expert_choices_per_moe_layer"] = counts
    checks["kept_probability_sum"] = {"min": min(kept), "mean": sum(kept) / len(kept), "max": max(kept)}

    def distance():
        worst = 0.0
        with torch.no_grad():
            for i, ids in enumerate(rows):
                hidden = model(input_ids=ids[None]).last_hidden_state[0]
                worst = max(worst, float((hidden.float() - golden[f"last_hidden_state_{i}"]).abs().max()))
        return worst

    def renormalised(router, x):
        weights, top_weights, top_experts = forward(router, x)
        return weights, top_weights / top_weights.sum(-1, keepdim=True), top_experts

    def w2_transposed(mlp, x, expert_idx):
        w1 = mlp.w1.view(mlp.moe_num_experts, mlp.ffn_hidden_size, mlp.hidden_size)[expert_idx]
        w2 = mlp.w2.view(mlp.moe_num_experts, mlp.hidden_size, mlp.ffn_hidden_size)[expert_idx]
        return mlp.activation_fn(x.matmul(w1.t())).matmul(w2.t())

    experts_forward = NomicExperts.forward

    def bias_per_expert(experts, x, weights, top_weights, top_experts):
        out = experts_forward(experts, x, weights, top_weights, top_experts)
        return out + (top_weights.sum(-1).view(*x.shape[:-1], 1) - 1) * experts.bias

    def with_top_k(k):
        for router in routers:
            router.moe_top_k = k
        try:
            return distance()
        finally:
            for router in routers:
                router.moe_top_k = model.config.moe_top_k

    misreadings = {"top_k_minus_one": with_top_k(model.config.moe_top_k - 1),
                   "top_k_plus_one": with_top_k(model.config.moe_top_k + 1)}
    for name, patch in (("renormalised_top_k", ClassPatch((NomicRouter, "forward", renormalised))),
                        ("w2_viewed_as_hidden_by_ffn", ClassPatch((NomicExpertMLP, "forward", w2_transposed))),
                        ("bias_per_expert", ClassPatch((NomicExperts, "forward", bias_per_expert)))):
        with patch:
            misreadings[name] = distance()
    checks["max_abs_diff_of_misreadings"] = misreadings
    assert min(misreadings.values()) > 1e-3, misreadings
    checks["reference"] = (
        "transformers 5.25 NomicBertModel with, put in by tools/make_family_goldens.py (nomic_moe_model): biased "
        "q/k/v/o projections, the remote code's plain MLP fc2(gelu(fc1(x))) in layers 0 and 2 and its NomicMoELayer "
        "(NomicRouter, NomicExpertMLP, NomicExperts, written out line by line after nomic-ai/nomic-bert-2048's "
        "modeling_hf_nomic_bert.py as vLLM's bert_with_rope.py restates it; TEI's nomic.rs and nomic-ai/contrastors' "
        "MoEBlock compute the same) in layers 1 and 3")


def gte(hub=False, labels=0, ntk=0.0, type_vocab_size=1, storage=None):
    """Alibaba GTE (transformers' GteModel / GteForSequenceClassification): rotary post-norm encoder,
    GELU-gated feed-forward with biases on q/k/v, o and down. The hub layout (model_type "new",
    Alibaba-NLP/new-impl): tensors as the hub stores them, config.json in NewConfig's keys with
    rope_scaling {"type": "ntk", "factor": ntk}; the reference rotates by new_impl_ntk_parameters."""
    rope = {"rope_type": "ntk", "rope_theta": 500000.0, "factor": ntk} if ntk else \
        {"rope_type": "default", "rope_theta": 160000.0}
    kwargs = dict(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                  max_position_embeddings=512, type_vocab_size=type_vocab_size, layer_norm_eps=1e-12,
                  hidden_act="gelu", pad_token_id=1, bos_token_id=0, eos_token_id=2, rope_parameters=rope,
                  attn_implementation="eager")
    if labels:
        kwargs.update(num_labels=1, id2label={0: "LABEL_0"}, label2id={"LABEL_0": 0})
    config = transformers.GteConfig(**kwargs)
    cls = transformers.GteForSequenceClassification if labels else transformers.GteModel
    spec = dict(cls=cls, config=config, seed=487 + 2 * hub + labels, ids=(0, 2), pad=1, rotary=True)
    if storage is not None:
        spec["storage"] = storage
    if hub:
        hub_config = {
            "architectures": ["NewForSequenceClassification" if labels else "NewModel"], "auto_map": GTE_AUTO_MAP,
            "attention_probs_dropout_prob": 0.0, "classifier_dropout": 0.0, "hidden_act": "gelu",
            "hidden_dropout_prob": 0.1, "hidden_size": 64, "initializer_range": 0.02, "intermediate_size": 128,
            "layer_norm_eps": 1e-12, "layer_norm_type": "layer_norm", "logn_attention_clip1": False,
            "logn_attention_scale": False, "max_position_embeddings": 512, "model_type": "new",
            "num_attention_heads": 4, "num_hidden_layers": 2, "pack_qkv": True, "pad_token_id": 1,
            "position_embedding_type": "rope", "rope_theta": rope["rope_theta"],
            "rope_scaling": {"factor": ntk, "type": "ntk"} if ntk else None,
            "torch_dtype": str(storage or torch.float32).replace("torch.", ""), "type_vocab_size": type_vocab_size,
            "unpad_inputs": False, "use_memory_efficient_attention": False, "vocab_size": VOCAB}
        if labels:
            hub_config.update(id2label={"0": "LABEL_0"}, label2id={"LABEL_0": 0})
        spec.update(hub_tensors=gte_hub_tensors(2), reload_with_config=True, hub_config=hub_config)
    return spec


# ---------------------------------------------------------------- issue 48: JinaBERT (a re-implementation)
#
# transformers 5.25 has no JinaBERT, and its hub code (jinaai/jina-bert-implementation,
# modeling_bert.py) is remote code that the reference machine does not download. The goldens are
# therefore a small float64 re-implementation of that code's equations (jina_forward below), checked
# in the tool against a second path built from transformers' own BERT modules (jina_through_bert).
#
# jina-embeddings-v2-base-code names another remote repository, jinaai/jina-bert-v2-qk-post-norm
# (qk_post_norm below). Its layer order is read from three sources that agree, none of them run
# here: a transformers-style port of that code whose doc checkpoint is jina-embeddings-v2-base-code
# (models/jina_bert, not in transformers 5.25: JinaBertSelfAttention, JinaBertLayer,
# JinaBertGLUMLP), text-embeddings-inference's
# backends/candle/src/models/jina_code.rs and rtp-llm's models/jina_bert weight names. Per layer:
# q, k = layer_norm_q(query(x)), layer_norm_k(key(x)) over the whole H-wide rows before the heads
# split; a = attention.output.LayerNorm(x + dense(attention)) (BertSelfOutput); h = layer_norm_1(x + a)
# (JinaBertLayer adds its input again); x = layer_norm_2(h + down_layer(up * act(gate))) with
# up_gated_layer's first half the up rows and its second half the activated gate rows.

JINA_AUTO_MAP = {
    "AutoConfig": "jinaai/jina-bert-implementation--configuration_bert.JinaBertConfig",
    "AutoModel": "jinaai/jina-bert-implementation--modeling_bert.JinaBertModel",
    "AutoModelForMaskedLM": "jinaai/jina-bert-implementation--modeling_bert.JinaBertForMaskedLM",
    "AutoModelForSequenceClassification":
        "jinaai/jina-bert-implementation--modeling_bert.JinaBertForSequenceClassification"}
JINA_QK_POST_NORM_AUTO_MAP = {key: value.replace("jina-bert-implementation", "jina-bert-v2-qk-post-norm")
                              for key, value in JINA_AUTO_MAP.items()}


def qk_post_norm(config):
    """Whether the folder's auto_map names jinaai/jina-bert-v2-qk-post-norm (jina-embeddings-v2-base-code)."""
    return "jina-bert-v2-qk-post-norm" in config.get("auto_map", {}).get("AutoConfig", "")


def jina_alibi_slopes(n_heads):
    """The remote code's _get_alibi_head_slopes (JinaBertEncoder.rebuild_alibi_tensor), as written there."""
    import math

    def get_slopes_power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        ratio = start
        return [start * ratio ** i for i in range(n)]

    if math.log2(n_heads).is_integer():
        return get_slopes_power_of_2(n_heads)
    closest_power_of_2 = 2 ** math.floor(math.log2(n_heads))
    return (get_slopes_power_of_2(closest_power_of_2)
            + jina_alibi_slopes(2 * closest_power_of_2)[0::2][: n_heads - closest_power_of_2])


def jina_alibi(n_heads, length):
    """rebuild_alibi_tensor(size=length)[0]: [heads, L, L], -slope_h * |j - i| (float32 slopes, as
    torch.Tensor(slopes) makes them, then the model's dtype)."""
    slopes = torch.tensor(jina_alibi_slopes(n_heads), dtype=torch.float32).double() * -1
    positions = torch.arange(length)
    relative = (positions[None, :] - positions[:, None]).abs().double()
    return slopes[:, None, None] * relative[None]


def jina_forward(w, config, ids, prefix, alibi=True, qk_norms=True):
    """JinaBertModel / JinaBertForSequenceClassification forward of one sequence (no padding), float64:
    (last_hidden_state [L, H], logits [1, labels] or None). The remote code's steps:
    JinaBertEmbeddings (word + token_type, no position table for alibi, LayerNorm);
    JinaBertSelfAttention (scores / sqrt(d) + alibi, softmax, · V); BertSelfOutput (dense, LayerNorm
    with the residual); JinaBertGLUMLP (gated_layers -> act(first half) * second half -> wo ->
    layernorm with the residual); the classifier: BertPooler (tanh(dense(x_cls))) then classifier.
    qk-post-norm folders (qk_post_norm(config)) run the layers as the section's comment says;
    qk_norms=False leaves out their layer_norm_q / layer_norm_k (a check of how much they matter)."""
    fn = torch.nn.functional
    hidden_size, heads = config["hidden_size"], config["num_attention_heads"]
    d, ffn, eps = hidden_size // heads, config["intermediate_size"], config["layer_norm_eps"]
    act = fn.relu if config["feed_forward_type"] == "reglu" else fn.gelu  # nn.GELU(): erf
    p = lambda name: w[prefix + name]
    x = p("embeddings.word_embeddings.weight")[ids] + p("embeddings.token_type_embeddings.weight")[0]
    x = fn.layer_norm(x, (hidden_size,), p("embeddings.LayerNorm.weight"), p("embeddings.LayerNorm.bias"), eps)
    length = len(ids)
    bias = jina_alibi(heads, length) if alibi else torch.zeros(heads, length, length, dtype=torch.float64)
    for i in range(config["num_hidden_layers"]):
        b = f"encoder.layer.{i}."
        split = lambda t: t.view(length, heads, d).transpose(0, 1)  # [heads, L, d]
        norm = lambda t, name: fn.layer_norm(t, (hidden_size,), p(b + name + ".weight"), p(b + name + ".bias"), eps)
        q, k, v = (fn.linear(x, p(b + f"attention.self.{n}.weight"), p(b + f"attention.self.{n}.bias"))
                   for n in ("query", "key", "value"))
        if qk_post_norm(config) and qk_norms:
            q, k = norm(q, "attention.self.layer_norm_q"), norm(k, "attention.self.layer_norm_k")
        q, k, v = split(q), split(k), split(v)
        scores = q @ k.transpose(-1, -2) / (d ** 0.5) + bias
        context = (torch.softmax(scores, dim=-1) @ v).transpose(0, 1).reshape(length, hidden_size)
        attended = fn.linear(context, p(b + "attention.output.dense.weight"), p(b + "attention.output.dense.bias"))
        if qk_post_norm(config):
            attention_output = norm(attended + x, "attention.output.LayerNorm")
            x = norm(x + attention_output, "layer_norm_1")
            up_gated = fn.linear(x, p(b + "mlp.up_gated_layer.weight"))
            up, gated = up_gated[:, :ffn], up_gated[:, ffn:]
            out = fn.linear(up * act(gated), p(b + "mlp.down_layer.weight"), p(b + "mlp.down_layer.bias"))
            x = norm(x + out, "layer_norm_2")
            continue
        x = norm(attended + x, "attention.output.LayerNorm")
        gated_layers = fn.linear(x, p(b + "mlp.gated_layers.weight"))
        gated, non_gated = gated_layers[:, :ffn], gated_layers[:, ffn:]
        out = fn.linear(act(gated) * non_gated, p(b + "mlp.wo.weight"), p(b + "mlp.wo.bias"))
        x = norm(out + x, "mlp.layernorm")
    logits = None
    if "classifier.weight" in w:
        pooled = torch.tanh(fn.linear(x[:1], p("pooler.dense.weight"), p("pooler.dense.bias")))
        logits = fn.linear(pooled, w["classifier.weight"], w["classifier.bias"])
    return x, logits


def register_alibi_attention():
    """transformers attention functions "jina_alibi_eager" / "jina_alibi_sdpa": its eager and SDPA
    attention with the ALiBi tensor of the query length added to the mask (cached per length and
    dtype), so BertSelfAttention scores as JinaBertSelfAttention does."""
    from transformers import AttentionInterface
    from transformers.integrations.sdpa_attention import sdpa_attention_forward
    from transformers.models.bert.modeling_bert import eager_attention_forward
    cache = {}

    def with_alibi(function):
        def attend(module, query, key, value, attention_mask, *args, **kwargs):
            heads, length = query.shape[1], query.shape[2]
            index = (heads, length, query.dtype)
            if index not in cache:
                cache[index] = jina_alibi(heads, length)[None].to(query.dtype)
            mask = cache[index] if attention_mask is None else attention_mask + cache[index]
            return function(module, query, key, value, mask, *args, **kwargs)
        return attend

    AttentionInterface.register("jina_alibi_eager", with_alibi(eager_attention_forward))
    AttentionInterface.register("jina_alibi_sdpa", with_alibi(sdpa_attention_forward))


def jina_bert_modules(w, config, prefix, attention="eager"):
    """JinaBERT assembled from transformers' BertModel / BertForSequenceClassification: its
    embeddings (position table zeroed), attention (ALiBi added to the mask its eager or SDPA
    attention takes: register_alibi_attention), BertOutput (dense wo + LayerNorm with the
    residual), pooler and classifier; only the gated intermediate is written here (BertIntermediate
    replaced by act(x·W_gateᵀ) ⊙ x·W_upᵀ). qk-post-norm folders: BertSelfAttention's query and key
    become Linear then LayerNorm (torch's), BertAttention is wrapped so that layer_norm_1 adds the
    layer's input to its output, and BertOutput takes down_layer and layer_norm_2.
    `w`: the folder's tensors by name. Returns (model, base)."""
    register_alibi_attention()
    heads, ffn = config["num_attention_heads"], config["intermediate_size"]
    labels = w["classifier.weight"].shape[0] if "classifier.weight" in w else 0
    bert_config = transformers.BertConfig(
        vocab_size=config["vocab_size"], hidden_size=config["hidden_size"], num_hidden_layers=config["num_hidden_layers"],
        num_attention_heads=heads, intermediate_size=ffn, max_position_embeddings=config["max_position_embeddings"],
        type_vocab_size=config["type_vocab_size"], layer_norm_eps=config["layer_norm_eps"], hidden_act="gelu",
        num_labels=max(labels, 1), attn_implementation="jina_alibi_" + attention)
    model = (transformers.BertForSequenceClassification if labels else transformers.BertModel)(bert_config)
    base = base_of(model)
    act = torch.nn.functional.relu if config["feed_forward_type"] == "reglu" else torch.nn.functional.gelu
    code = qk_post_norm(config)

    class GatedIntermediate(torch.nn.Module):
        def __init__(self, weight):
            super().__init__()
            self.weight = torch.nn.Parameter(weight)

        def forward(self, x):
            both = torch.nn.functional.linear(x, self.weight)
            if code:  # up_gated_layer: up, then the activated gate
                return both[..., :ffn] * act(both[..., ffn:])
            return act(both[..., :ffn]) * both[..., ffn:]

    class ResidualAgain(torch.nn.Module):
        """BertAttention, then layer_norm_1(input + its output): JinaBertLayer's second residual."""

        def __init__(self, attention, norm):
            super().__init__()
            self.attention, self.norm = attention, norm

        def forward(self, hidden_states, *args, **kwargs):
            outputs = self.attention(hidden_states, *args, **kwargs)
            return (self.norm(hidden_states + outputs[0]),) + tuple(outputs[1:])

    def layer_norm(name):
        norm = torch.nn.LayerNorm(config["hidden_size"], eps=config["layer_norm_eps"])
        norm.load_state_dict({"weight": w[name + ".weight"], "bias": w[name + ".bias"]})
        return norm.to(w[name + ".weight"].dtype)

    renamed = {"mlp.wo.": "output.dense.", "mlp.layernorm.": "output.LayerNorm.",
               "mlp.down_layer.": "output.dense.", "layer_norm_2.": "output.LayerNorm."}
    replaced = ("mlp.gated_layers", "mlp.up_gated_layer", "layer_norm_q", "layer_norm_k", "layer_norm_1")
    state = {}
    for name, value in w.items():
        name = name[len(prefix):] if name.startswith(prefix) else name
        for old, new in renamed.items():
            name = name.replace(old, new)
        if not any(part in name for part in replaced):
            state[name if labels == 0 or name.startswith("classifier") else "bert." + name] = value
    state[("bert." if labels else "") + "embeddings.position_embeddings.weight"] = torch.zeros_like(
        base.embeddings.position_embeddings.weight, dtype=w[prefix + "embeddings.word_embeddings.weight"].dtype)
    model = model.to(w[prefix + "embeddings.word_embeddings.weight"].dtype).eval()
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert not unexpected, unexpected
    assert all("intermediate" in n or "position_ids" in n or "token_type_ids" in n for n in missing), missing
    for i, layer in enumerate(base.encoder.layer):
        b = f"{prefix}encoder.layer.{i}."
        layer.intermediate = GatedIntermediate(w[b + ("mlp.up_gated_layer" if code else "mlp.gated_layers") + ".weight"])
        if code:
            attention = layer.attention.self
            attention.query = torch.nn.Sequential(attention.query, layer_norm(b + "attention.self.layer_norm_q"))
            attention.key = torch.nn.Sequential(attention.key, layer_norm(b + "attention.self.layer_norm_k"))
            layer.attention = ResidualAgain(layer.attention, layer_norm(b + "layer_norm_1"))
    return model, base


def jina_through_bert(w, config, ids, prefix):
    """(last_hidden_state, logits or None) of one sequence through jina_bert_modules (eager, float64)."""
    model, base = jina_bert_modules(w, config, prefix)
    with torch.no_grad():
        hidden = base(input_ids=ids[None]).last_hidden_state[0]
        logits = model(input_ids=ids[None]).logits if model is not base else None
    return hidden, logits


def load_jina_bert(folder, attention="sdpa"):
    """A JinaBERT hub folder (config.json, model.safetensors) as transformers modules in float32
    (jina_bert_modules): the PyTorch peer of bench/peers/torch_rounds.py. Returns its base model."""
    folder = pathlib.Path(folder)
    config = json.loads((folder / "config.json").read_text())
    with safe_open(folder / "model.safetensors", "pt") as f:
        w = {name: f.get_tensor(name).float() for name in f.keys()}
    prefix = "bert." if "bert.embeddings.word_embeddings.weight" in w else ""
    return jina_bert_modules(w, config, prefix, attention)[1]


def jina_weights(config, labels, seed, storage):
    """Random hub-named tensors (JinaBertModel's state_dict), with the default recipe's scales: matrices
    N(0, 0.02²)·5, embeddings N(0, 0.02²), norm weights 1 + 0.1N, norm biases 0.1N, other biases 0.05N."""
    generator = torch.Generator().manual_seed(seed)
    n = lambda *shape: torch.randn(*shape, generator=generator, dtype=torch.float64)
    h, ffn = config["hidden_size"], config["intermediate_size"]
    w = {"embeddings.word_embeddings.weight": 0.02 * n(config["vocab_size"], h),
         "embeddings.token_type_embeddings.weight": 0.02 * n(config["type_vocab_size"], h)}
    norm = lambda name: w.update({name + ".weight": 1 + 0.1 * n(h), name + ".bias": 0.1 * n(h)})
    linear = lambda name, rows, columns, bias=True: w.update(
        {name + ".weight": 0.1 * n(rows, columns), **({name + ".bias": 0.05 * n(rows)} if bias else {})})
    norm("embeddings.LayerNorm")
    for i in range(config["num_hidden_layers"]):
        b = f"encoder.layer.{i}."
        for part in ("query", "key", "value"):
            linear(b + "attention.self." + part, h, h)
        linear(b + "attention.output.dense", h, h)
        norm(b + "attention.output.LayerNorm")
        if qk_post_norm(config):
            norm(b + "attention.self.layer_norm_q")
            norm(b + "attention.self.layer_norm_k")
            norm(b + "layer_norm_1")
            linear(b + "mlp.up_gated_layer", 2 * ffn, h, bias=False)
            linear(b + "mlp.down_layer", h, ffn)
            norm(b + "layer_norm_2")
            continue
        linear(b + "mlp.gated_layers", 2 * ffn, h, bias=False)
        linear(b + "mlp.wo", h, ffn)
        norm(b + "mlp.layernorm")
    linear("pooler.dense", h, h)
    prefix = ""
    if labels:
        w = {"bert." + k: v for k, v in w.items()}
        linear("classifier", labels, h)
        prefix = "bert."
    # Rounded to the stored dtype: the goldens are the float64 run of what the file holds.
    w = {k: v.to(storage).double() for k, v in w.items()}
    return w, prefix


def jina_bert(labels=0, heads=6, storage=torch.float32, code=False):
    """JinaBERT as the hub ships it: config.json in JinaBertConfig's keys (model_type "bert",
    position_embedding_type "alibi", feed_forward_type "geglu", the remote code's auto_map); the
    embedder names JinaBertForMaskedLM (jina-embeddings-v2-*-en) with JinaBertModel's unprefixed
    tensors, the reranker JinaBertForSequenceClassification (jina-reranker-v1-*-en) under "bert.".
    Heads: 6 (the embedder) and 12 (the reranker, as jina-embeddings-v2-base-en): both not powers
    of two, so the slopes take the remote code's interleaved branch. `code`: jina-embeddings-v2-base-code's
    folder, its auto_map naming jinaai/jina-bert-v2-qk-post-norm, its tensors unprefixed as the embedder's."""
    config = {
        "architectures": ["JinaBertForSequenceClassification" if labels else "JinaBertForMaskedLM"],
        "attention_probs_dropout_prob": 0.0, "auto_map": JINA_QK_POST_NORM_AUTO_MAP if code else JINA_AUTO_MAP,
        "classifier_dropout": None,
        "emb_pooler": None if labels else "mean", "feed_forward_type": "geglu", "gradient_checkpointing": False,
        "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": 96, "initializer_range": 0.02,
        "intermediate_size": 128, "layer_norm_eps": 1e-12, "max_position_embeddings": 512, "model_type": "bert",
        "num_attention_heads": heads, "num_hidden_layers": 2, "pad_token_id": 0, "position_embedding_type": "alibi",
        "torch_dtype": str(storage).replace("torch.", ""), "transformers_version": "4.26.0", "type_vocab_size": 2,
        "use_cache": True, "vocab_size": VOCAB}
    if labels:
        config.update(id2label={"0": "LABEL_0"}, label2id={"LABEL_0": 0})
    return dict(jina=True, config=config, labels=labels, seed=491 + labels + (17 if code else 0), storage=storage,
                ids=(1, 2), pad=0)


def make_jina(family, out, spec):
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    config, storage = spec["config"], spec["storage"]
    w, prefix = jina_weights(config, spec["labels"], spec["seed"], storage)
    save_file({k: v.to(storage).contiguous() for k, v in w.items()}, out / "model.safetensors",
              metadata={"format": "pt"})
    (out / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    rows = make_ids(spec, torch.Generator().manual_seed(7))
    golden, worst_bert, worst_no_alibi, worst_no_qk_norms = {}, 0.0, 0.0, 0.0
    for i, ids in enumerate(rows):
        hidden, logits = jina_forward(w, config, ids, prefix)
        golden[f"input_ids_{i}"] = ids.to(torch.int64)
        golden[f"last_hidden_state_{i}"] = hidden.float()
        golden[f"mean_pooled_{i}"] = hidden.mean(0, keepdim=True).float()
        golden[f"cls_pooled_{i}"] = hidden[:1].float()
        golden[f"last_token_{i}"] = hidden[-1:].float()
        if logits is not None:
            golden[f"logits_{i}"] = logits.float()
        # The independent path: transformers' BERT modules with ALiBi as the additive mask.
        bert_hidden, bert_logits = jina_through_bert(w, config, ids, prefix)
        worst_bert = max(worst_bert, float((bert_hidden - hidden).abs().max()))
        if logits is not None:
            worst_bert = max(worst_bert, float((bert_logits - logits).abs().max()))
        without, _ = jina_forward(w, config, ids, prefix, alibi=False)
        worst_no_alibi = max(worst_no_alibi, float((without - hidden).abs().max()))
        if qk_post_norm(config):
            without, _ = jina_forward(w, config, ids, prefix, qk_norms=False)
            worst_no_qk_norms = max(worst_no_qk_norms, float((without - hidden).abs().max()))
    assert worst_bert < 1e-10, worst_bert
    save_file({k: v.contiguous() for k, v in golden.items()}, out / "golden.safetensors")
    import math
    heads = config["num_attention_heads"]
    slopes = jina_alibi_slopes(heads)
    # The ALiBi paper's slopes in closed form: 2^(-8k/n) for n a power of two; otherwise those of the
    # power of two p below n, then 2^(-8(2k-1)/(2p)) for k = 1 .. n - p.
    power = 2 ** math.floor(math.log2(heads))
    closed = [2 ** (-8 * k / power) for k in range(1, power + 1)] + \
        [2 ** (-8 * (2 * k - 1) / (2 * power)) for k in range(1, heads - power + 1)]
    assert max(abs(a - b) for a, b in zip(slopes, closed)) < 1e-15, (slopes, closed)
    report = {
        "generator": "tools/make_family_goldens.py " + family, "torch": torch.__version__,
        "transformers": transformers.__version__, "lengths": LENGTHS, "seed": spec["seed"],
        "dtype": "float64 run, float32 outputs", "stored_dtype": str(storage).replace("torch.", ""),
        "reference": ("a float64 re-implementation of jinaai/jina-bert-v2-qk-post-norm's layers (the order "
                      "read from a transformers-style port of it for jina-embeddings-v2-base-code, text-embeddings-"
                      "inference's jina_code.rs and rtp-llm's JinaBERT weights; tools/make_family_goldens.py, "
                      "jina_forward)" if qk_post_norm(config) else
                      "a float64 re-implementation of jinaai/jina-bert-implementation's modeling_bert.py "
                      "(JinaBertModel / JinaBertForSequenceClassification)") +
                     ": transformers 5.25 has no JinaBERT and the remote code is not run here",
        "layout": "the hub's (" + ("jina-embeddings-v2-base-code" if qk_post_norm(config) else
                                   "jina-embeddings-v2 / jina-reranker-v1") +
                  " folders): JinaBertConfig keys, remote-code tensor names" +
                  (", backbone under bert." if prefix else ", unprefixed"),
        "config": key_config(out / "config.json"), "tensors": tensor_names(out / "model.safetensors"),
        "golden_tensors": sorted(golden),
        "checks": {
            "max_abs_diff_to_transformers_bert_modules_with_alibi_mask": worst_bert,
            "max_abs_diff_if_no_alibi": worst_no_alibi,
            "max_abs_diff_if_no_qk_norms": worst_no_qk_norms if qk_post_norm(config) else None,
            "alibi_slopes": slopes, "alibi_slopes_closed_form": closed,
            "logits": {f"logits_{i}": golden[f"logits_{i}"][0].tolist() for i in range(len(rows))}
            if spec["labels"] else None}}
    (out / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {out}: transformers-BERT path diff {worst_bert:.2e}, no-ALiBi diff {worst_no_alibi:.2e}"
          + (f", no-q/k-norm diff {worst_no_qk_norms:.2e}" if qk_post_norm(config) else ""))


# ---------------------------------------------------------------- issue 48: stella's 2_Dense_<dims>

STELLA_DENSE_WIDTHS = (16, 48, 96)


def stella_modules(dense_folder):
    return [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"idx": 2, "name": "2", "path": dense_folder, "type": "sentence_transformers.models.Dense"}]


def make_stella_dense(family, out):
    """stella_en_400M_v5's layout (NovaSearch/stella_en_400M_v5: gte-large-en-v1.5 with mean pooling,
    then one Dense module chosen among 2_Dense_<dims> folders by the path modules.json names): tiny-gte's
    GteModel (transformers' own config, so sentence-transformers loads it without remote code), BERT's
    uncased tokenizer files (from ../shared, for sentence-transformers' loader, removed after: the goldens
    feed ids),
    1_Pooling (mean) and Dense folders 2_Dense_16, 2_Dense_48, 2_Dense_96 (64 -> d, bias, Identity, as
    stella's), saved by sentence-transformers' own Dense module. modules.json names 2_Dense_48.
    golden.safetensors: input_ids_i, mean_pooled_i, and dense_<d>_i = SentenceTransformer(folder).forward
    (float64) with modules.json naming 2_Dense_<d>, for each d."""
    import shutil
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.models import Dense
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    spec = gte()
    torch.manual_seed(spec["seed"])
    model = spec["cls"](spec["config"]).eval()
    perturb(model, "default")
    model.save_pretrained(out, safe_serialization=True)
    shared = pathlib.Path(__file__).resolve().parent.parent.parent / "shared/models/configs/all-MiniLM-L6-v2"
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
        shutil.copy(shared / name, out / name)
    (out / "1_Pooling").mkdir(exist_ok=True)
    (out / "1_Pooling/config.json").write_text(json.dumps({"word_embedding_dimension": 64,
                                                           "pooling_mode_mean_tokens": True}, indent=2) + "\n")
    (out / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 512, "do_lower_case": False}) + "\n")
    generator = torch.Generator().manual_seed(489)
    for width in STELLA_DENSE_WIDTHS:
        weight = 0.2 * torch.randn(width, 64, generator=generator)
        bias = 0.05 * torch.randn(width, generator=generator)
        (out / f"2_Dense_{width}").mkdir(exist_ok=True)
        Dense(64, width, bias=True, activation_function=torch.nn.Identity(), init_weight=weight,
              init_bias=bias).save(str(out / f"2_Dense_{width}"))
    rows = make_ids(spec, torch.Generator().manual_seed(7))
    golden = {}
    for i, ids in enumerate(rows):
        golden[f"input_ids_{i}"] = ids.to(torch.int64)
    for width in STELLA_DENSE_WIDTHS:
        (out / "modules.json").write_text(json.dumps(stella_modules(f"2_Dense_{width}"), indent=2) + "\n")
        st = SentenceTransformer(str(out), device="cpu").double().eval()
        for i, ids in enumerate(rows):
            features = {"input_ids": ids[None], "attention_mask": torch.ones_like(ids)[None],
                        "token_type_ids": torch.zeros_like(ids)[None]}
            with torch.no_grad():
                result = st.forward(features)
            golden[f"dense_{width}_{i}"] = result["sentence_embedding"].float()
            golden[f"mean_pooled_{i}"] = result["token_embeddings"][0].mean(0, keepdim=True).float()
    (out / "modules.json").write_text(json.dumps(stella_modules("2_Dense_48"), indent=2) + "\n")
    # The tokenizer only let sentence-transformers load the folder; the goldens hold ids.
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
        (out / name).unlink()
    save_file({k: v.contiguous() for k, v in golden.items()}, out / "golden.safetensors")
    report = {"generator": "tools/make_family_goldens.py " + family, "transformers": transformers.__version__,
              "torch": torch.__version__, "sentence_transformers": __import__("sentence_transformers").__version__,
              "class": "GteModel (tiny-gte's config and seed) + Pooling (mean) + one Dense of 2_Dense_{16,48,96}",
              "lengths": LENGTHS, "dense_widths": list(STELLA_DENSE_WIDTHS), "modules_json_names": "2_Dense_48",
              "dense_files": {f"2_Dense_{w}": sorted(p.name for p in (out / f"2_Dense_{w}").iterdir())
                              for w in STELLA_DENSE_WIDTHS},
              "golden_tensors": sorted(golden)}
    (out / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {out}")


# ---------------------------------------------------------------- issue 44: bge-reranker-v2.5-gemma2-lightweight

# The hub folder's auto_map (BAAI/bge-reranker-v2.5-gemma2-lightweight's config.json).
COSTWISE_AUTO_MAP = {
    "AutoConfig": "BAAI/bge-reranker-v2.5-gemma2-lightweight--gemma_config.CostWiseGemmaConfig",
    "AutoModel": "BAAI/bge-reranker-v2.5-gemma2-lightweight--gemma_model.CostWiseGemmaModel",
    "AutoModelForCausalLM": "BAAI/bge-reranker-v2.5-gemma2-lightweight--gemma_model.CostWiseGemmaForCausalLM"}
# Heads for layers 2, 3 and 4 (start_layer 2, layer_sep 1, 4 layers); the default cut-off is the last.
COSTWISE_CUTOFFS = [2, 3, 4]
# FlagEmbedding's lightweight reranker runs under transformers 4.46 only (lightweight.py says so);
# this folder holds that pin beside .venv-heavy's transformers 5 (tools/setup_heavy_venv.sh).
FLAGEMBEDDING_TRANSFORMERS = ".venv-heavy/flagembedding-transformers"


def gemma2_costwise_reranker():
    return dict(costwise=True)


def flagembedding_lightweight():
    """FlagEmbedding 1.4.2's CostWiseGemmaConfig, CostWiseGemmaForCausalLM and LightweightLLMReranker, imported
    from their own modules, unchanged. The packages above them are entered without running their __init__, which
    imports every embedder and trainer of the library (and `datasets`, not installed). They call transformers
    4.46's Gemma 2 layers (Gemma2DecoderLayer without position_embeddings), so this runs with
    PYTHONPATH=.venv-heavy/flagembedding-transformers, where transformers 4.46.0 is installed alone."""
    if not transformers.__version__.startswith("4.46"):
        sys.exit(f"gemma2-costwise-reranker needs transformers 4.46 (FlagEmbedding's lightweight reranker); run with "
                 f"PYTHONPATH={FLAGEMBEDDING_TRANSFORMERS} (transformers {transformers.__version__} is on the path)")
    import importlib.util
    import types
    import flagembedding_packages
    flagembedding_packages.enter("FlagEmbedding", "FlagEmbedding.inference", "FlagEmbedding.inference.reranker",
                                 "FlagEmbedding.inference.reranker.decoder_only")
    if importlib.util.find_spec("peft") is None:
        # lightweight.py imports peft for a LoRA path (peft_path) the goldens do not take.
        sys.modules["peft"] = types.SimpleNamespace(PeftModel=None)
    from FlagEmbedding.inference.reranker.decoder_only.lightweight import LightweightLLMReranker
    from FlagEmbedding.inference.reranker.decoder_only.models.gemma_config import CostWiseGemmaConfig
    from FlagEmbedding.inference.reranker.decoder_only.models.gemma_model import CostWiseGemmaForCausalLM
    return CostWiseGemmaConfig, CostWiseGemmaForCausalLM, LightweightLLMReranker


def make_costwise(family, out):
    """CostWiseGemmaForCausalLM with layer_wise heads (bge-reranker-v2.5-gemma2-lightweight's remote code, as
    FlagEmbedding 1.4.2 ships it): Gemma 2 blocks (grouped-query, layers alternating sliding / full with a window of
    16 that the longer sequences exceed, query_pre_attn_scalar 24, attention soft-cap 2), 4 layers, one-output heads
    lm_head.k.linear_head for layers 2, 3, 4, final logit soft-cap 1. The folder has the hub's model_type and auto_map;
    its yes_no_reranker.json is absent (stamen's default for the class is the lightweight preset).
    golden.safetensors (float64 runs, stored F32):
      input_ids_i (random ids, LENGTHS) and logits_layer<L>_i [1, 1]: CostWiseGemmaForCausalLM.forward(input_ids,
        cutoff_layers=[L]).logits[0] at the last position, for L in COSTWISE_CUTOFFS (L = 4 is the default, None);
      pair_ids_k: the ids LightweightLLMReranker.compute_score builds for RERANKER_PAIRS[k] (recorded at the model's
        forward), and pair_logits_layer<L>_k its raw score with cutoff_layers=[L] (pairs run together, as it batches
        them); pair_logits_k / pair_yes_probability_k: compute_score's defaults (cutoff_layers None), raw and with
        normalize=True; instruction_pair_ids / instruction_pair_logits: pair 0 with prompt=RERANKER_PAIR_INSTRUCTION.
    Attention is eager: LightweightLLMReranker's from_pretrained would pick sdpa under transformers 4.46, whose
    Gemma2SdpaAttention does not soft-cap attention scores (Gemma2PreTrainedModel swaps sdpa for eager;
    CostWiseGemma2PreTrainedModel does not); report.json records how far the sdpa scores lie."""
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    config_class, model_class, reranker_class = flagembedding_lightweight()
    config = config_class(
        vocab_size=VOCAB, hidden_size=64, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
        head_dim=16, intermediate_size=128, max_position_embeddings=512, rms_norm_eps=1e-6, rope_theta=10000.0,
        hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=24, sliding_window=16,
        attn_logit_softcapping=2.0, final_logit_softcapping=1.0, pad_token_id=0, eos_token_id=1, bos_token_id=2,
        start_layer=2, layer_sep=1, layer_wise=True)
    torch.manual_seed(444)
    model = model_class(config).eval()
    perturb(model, "gemma")
    model.save_pretrained(out, safe_serialization=True)
    path = out / "config.json"
    saved = json.loads(path.read_text())
    saved["auto_map"] = COSTWISE_AUTO_MAP
    saved.pop("_attn_implementation_autoset", None)
    path.write_text(json.dumps(saved, indent=2, sort_keys=True) + "\n")
    tokenizer = gemma_tokenizer()
    tokenizer.save(str(out / "tokenizer.json"))
    # For AutoTokenizer in LightweightLLMReranker only; removed after.
    (out / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<bos>", "eos_token": "<eos>", "pad_token": "<pad>",
        "unk_token": "<unk>"}) + "\n")

    def load(attention):
        reranker = reranker_class(str(out), use_fp16=False, devices=["cpu"])
        reranker.model = model_class.from_pretrained(str(out), attn_implementation=attention).double().eval()
        return reranker

    reranker = load("eager")
    golden, report_checks = {}, {}
    with safe_open(out / "model.safetensors", "pt") as stored:
        tensor_names = sorted(stored.keys())
    for i, ids in enumerate(make_ids(dict(ids="random"), torch.Generator().manual_seed(7))):
        golden[f"input_ids_{i}"] = ids.to(torch.int64)
        with torch.no_grad():
            for layer in COSTWISE_CUTOFFS:
                logits = reranker.model(input_ids=ids[None], attention_mask=torch.ones_like(ids)[None],
                                        cutoff_layers=[layer]).logits
                assert len(logits) == 1 and logits[0].shape == (1, len(ids))
                golden[f"logits_layer{layer}_{i}"] = logits[0][:, -1:].float()
    with torch.no_grad():
        ids = golden["input_ids_5"][None]
        default = reranker.model(input_ids=ids, attention_mask=torch.ones_like(ids)).logits[0][:, -1:]
    report_checks["default_cutoff_is_last_layer_max_abs_diff"] = float((default.float() - golden["logits_layer4_5"]).abs().max())

    recorded = []
    forward = reranker.model.forward

    def recording_forward(*args, **kwargs):
        recorded.append((kwargs["input_ids"], kwargs["attention_mask"]))
        return forward(*args, **kwargs)

    reranker.model.forward = recording_forward
    pairs = [list(pair) for pair in RERANKER_PAIRS]
    for k, pair in enumerate(pairs):
        recorded.clear()
        reranker.compute_score([pair], cutoff_layers=[COSTWISE_CUTOFFS[-1]])
        ids, mask = recorded[-1]
        golden[f"pair_ids_{k}"] = ids[0][mask[0].bool()].to(torch.int64)
        assert golden[f"pair_ids_{k}"].tolist() == gemma2_pair_ids(tokenizer, *RERANKER_PAIRS[k]), k
    alone = {}
    for layer in COSTWISE_CUTOFFS:
        scores = reranker.compute_score(pairs, cutoff_layers=[layer])
        for k, score in enumerate(scores):
            golden[f"pair_logits_layer{layer}_{k}"] = torch.tensor([[score]], dtype=torch.float32)
            # One pair: a list of one score.
            alone[(layer, k)] = reranker.compute_score([pairs[k]], cutoff_layers=[layer])[0]
    report_checks["pair_batched_max_abs_diff"] = max(
        abs(float(golden[f"pair_logits_layer{layer}_{k}"]) - float(score)) for (layer, k), score in alone.items())
    # The defaults (cutoff_layers None), raw and normalized, under the names the yes/no rerankers' goldens use.
    default_scores = reranker.compute_score(pairs)
    for k, (score, normalized) in enumerate(zip(default_scores, reranker.compute_score(pairs, normalize=True))):
        golden[f"pair_logits_{k}"] = torch.tensor([[score]], dtype=torch.float32)
        golden[f"pair_yes_probability_{k}"] = torch.tensor([[normalized]], dtype=torch.float32)
    report_checks["compute_score_default_vs_layer4_max_abs_diff"] = max(
        abs(float(score) - float(golden[f"pair_logits_layer4_{k}"])) for k, score in enumerate(default_scores))
    recorded.clear()
    score = reranker.compute_score([pairs[0]], prompt=RERANKER_PAIR_INSTRUCTION)[0]
    ids, mask = recorded[-1]
    golden["instruction_pair_ids"] = ids[0][mask[0].bool()].to(torch.int64)
    golden["instruction_pair_logits"] = torch.tensor([[score]], dtype=torch.float32)
    # The cut-offs differ from each other, and the heads after head 0 are not what scores (FlagEmbedding applies
    # lm_head[0] to the one cut-off it is asked for).
    report_checks["cutoff_layer2_vs_layer4_max_abs_diff"] = max(
        abs(float(golden[f"pair_logits_layer2_{k}"]) - float(golden[f"pair_logits_layer4_{k}"])) for k in range(len(pairs)))
    with torch.no_grad():
        ids = golden["input_ids_5"][None]
        hidden = reranker.model.model(input_ids=ids, attention_mask=torch.ones_like(ids),
                                      cutoff_layers=[3]).hidden_states[0][0, -1]
        cap = config.final_logit_softcapping
        for k in range(len(reranker.model.lm_head)):
            logit = cap * torch.tanh(reranker.model.lm_head[k].linear_head(hidden) / cap)
            report_checks[f"layer3_through_head{k}_minus_golden"] = float(logit.float() - golden["logits_layer3_5"].reshape(()))
    sdpa = load("sdpa")
    sdpa_scores = sdpa.compute_score(pairs)
    report_checks["sdpa_attention_vs_eager_max_abs_diff"] = max(
        abs(float(score) - float(golden[f"pair_logits_layer4_{k}"])) for k, score in enumerate(sdpa_scores))
    (out / "tokenizer_config.json").unlink()

    save_file({k: v.contiguous() for k, v in golden.items()}, out / "golden.safetensors")
    from importlib.metadata import version
    report = {"generator": "tools/make_family_goldens.py " + family, "transformers": transformers.__version__,
              "torch": torch.__version__, "flagembedding": version("FlagEmbedding"),
              "class": "FlagEmbedding.inference.reranker.decoder_only.models.gemma_model.CostWiseGemmaForCausalLM",
              "pair_reference": "FlagEmbedding LightweightLLMReranker.compute_score (eager attention, float64); "
                                "raw score: lm_head[0] on the final-normed hidden state after cutoff_layers=[L], "
                                "soft-capped, at the last token",
              "config": {k: saved[k] for k in ("architectures", "model_type", "num_hidden_layers", "start_layer",
                                                "layer_sep", "layer_wise", "attn_logit_softcapping",
                                                "final_logit_softcapping", "sliding_window", "query_pre_attn_scalar")},
              "cutoff_layers": COSTWISE_CUTOFFS, "lengths": LENGTHS, "tensor_names": tensor_names,
              "pairs": [{"query": q, "document": d} for q, d in RERANKER_PAIRS],
              "instruction": RERANKER_PAIR_INSTRUCTION, "checks": report_checks, "golden_tensors": sorted(golden)}
    (out / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {out}")


def mpnet_classifier():
    spec = mpnet()
    spec["config"].num_labels = 2
    spec["cls"] = transformers.MPNetForSequenceClassification
    return spec


FAMILIES = {
    "llama": llama,
    "mistral": mistral,
    "mpnet-classifier": mpnet_classifier,
    "qwen3": qwen3,
    "distilbert": distilbert,
    "distilbert-classifier": lambda: distilbert(labels=3),
    "distilbert-splade": lambda: distilbert(splade=True),
    "mpnet": mpnet,
    "mpnet-masked-lm": mpnet,
    "mpnet-masked-lm-prefixed": mpnet,
    "roberta-classifier": roberta_classifier,
    "camembert": camembert,
    "modernbert": modernbert,
    "modernbert-classifier": lambda: modernbert(labels=1),
    "modernbert-biased-mean-classifier": lambda: modernbert(labels=1, variant="biased-mean"),
    "gemma3": gemma3,
    "deberta-v3": deberta,
    "deberta-v3-reranker": lambda: deberta(labels=1),
    "deberta-v2": lambda: deberta(variant="v2"),
    "deberta-v2-c2p-classifier": lambda: deberta(labels=3, variant="v2-c2p"),
    "bert-classifier": lambda: bert("classifier"),
    "bert-splade": lambda: bert("splade"),
    "roberta-splade": roberta_splade,
    "qwen3-classifier": lambda: decoder_classifier("qwen3", 1),
    "qwen3-classifier-3": lambda: decoder_classifier("qwen3", 3),
    "qwen2-classifier": lambda: decoder_classifier("qwen2", 1),
    "qwen3-reranker": qwen3_reranker,
    "qwen3-reranker-tied": lambda: qwen3_reranker(tied=True),
    # Issue 44: any LLM reranker.
    "qwen2-mxbai-reranker": mxbai_reranker,
    "gemma-reranker": gemma_reranker,
    "gemma2-reranker": gemma2_reranker,
    "gemma2-reranker-bf16": lambda: dict(gemma2_reranker(), storage=torch.bfloat16),
    # bge-reranker-v2.5-gemma2-lightweight's CostWiseGemmaForCausalLM, against FlagEmbedding (make_costwise).
    "gemma2-costwise-reranker": gemma2_costwise_reranker,
    # Weights stored in half precision, as many checkpoints ship: the goldens are the float64
    # run of exactly the stored (rounded) values.
    "modernbert-bf16": lambda: dict(modernbert(), storage=torch.bfloat16),
    "qwen3-f16": lambda: dict(qwen3(), storage=torch.float16),
    "gemma3-bf16": lambda: dict(gemma3(), storage=torch.bfloat16),
    # Issue 48: bidirectional Llama / Qwen3 encoders.
    "eurobert": eurobert,
    "eurobert-bf16": lambda: eurobert(native=True),
    # EuroBertForSequenceClassification, one folder per classifier_pooling: a reranker as a hub
    # fine-tune writes it ("late", the default), a reranker stored BF16 ("bos") and a 3-label
    # classifier ("mean"), both in transformers' own layout.
    "eurobert-reranker-late": lambda: eurobert_classifier("late", hub=True),
    "eurobert-reranker-bos-bf16": lambda: eurobert_classifier("bos", storage=torch.bfloat16),
    "eurobert-classifier-mean": lambda: eurobert_classifier("mean", labels=3),
    "pplx-embed": pplx_embed,
    "llama-bidirectional": llama_bidirectional,
    # llama-nemotron-rerank: the same backbone, mean-pooled into a `score` head (hub layout).
    "llama-bidirectional-reranker": llama_bidirectional_reranker,
    # voyage-4-nano: Qwen3 attending bidirectionally, projected by `linear` (hub layout).
    "voyage-qwen3-bidirectional": voyage_qwen3_bidirectional,
    # Issue 48: rotary post-norm encoders (transformers' own layout, then the hub's).
    "nomic-bert": nomic_bert,
    "nomic-bert-hub-bf16": lambda: nomic_bert(hub=True),
    # NomicBERT's rotary variants: partial rotary (hub layout; transformers' own NomicBertModel cannot
    # apply it, see nomic_bert_variant) and dynamic NTK scaling, hub (BF16) and native.
    "nomic-bert-partial-rotary-hub": lambda: nomic_bert_variant(hub=True, fraction=0.5),
    "nomic-bert-dynamic-ntk-hub-bf16": lambda: nomic_bert_variant(hub=True, dynamic=2.0, trained=16,
                                                                  storage=torch.bfloat16),
    "nomic-bert-dynamic-ntk": lambda: nomic_bert_variant(hub=False, dynamic=5.0, trained=32),
    # nomic-embed-text-v2-moe's experts (hub layout, F32): the reference puts nomic's modules into
    # transformers' NomicBertModel (nomic_moe_model).
    "nomic-bert-moe-hub": nomic_bert_moe,
    "gte": gte,
    "gte-hub-ntk-f16": lambda: gte(hub=True, ntk=2.0, type_vocab_size=0, storage=torch.float16),
    "gte-reranker": lambda: dict(gte(labels=1), state_dict_names=True),
    "gte-reranker-hub": lambda: gte(hub=True, labels=1, ntk=8.0),
    # Issue 48: JinaBERT (ALiBi), the hub's layout; a re-implementation is the reference (make_jina).
    "jina-bert": jina_bert,
    "jina-reranker-bf16": lambda: jina_bert(labels=1, heads=12, storage=torch.bfloat16),
    # jina-embeddings-v2-base-code's jinaai/jina-bert-v2-qk-post-norm: q/k LayerNorms, two norms after the
    # attention, up_gated_layer / down_layer (the same re-implementation, its qk-post-norm branch).
    "jina-bert-code": lambda: jina_bert(code=True),
    # Issue 48: stella_en_400M_v5's 2_Dense_<dims> folders, against sentence-transformers (make_stella_dense).
    "gte-stella-dense": lambda: dict(stella=True),
}


# ---------------------------------------------------------------- weights and inputs

def perturb(model, recipe):
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if recipe == "qwen3":  # tools/make_qwen3_golden.py, unchanged
                if "norm" in name:
                    parameter.copy_(1 + 0.1 * torch.randn_like(parameter))
                elif parameter.dim() == 2 and "embed" not in name:
                    parameter.mul_(5)
                continue
            is_norm = "norm" in name.lower()
            if "relative_attention_bias" in name:
                parameter.copy_(0.5 * torch.randn_like(parameter))
            elif "rel_embeddings" in name:  # DeBERTa: N(0, 1), so the position terms are not negligible
                parameter.copy_(torch.randn_like(parameter))
            elif is_norm and name.endswith("weight"):
                base = 0.0 if recipe == "gemma" else 1.0  # Gemma's RMSNorm scales by (1 + w)
                parameter.copy_(base + 0.1 * torch.randn_like(parameter))
            elif is_norm and name.endswith("bias"):
                parameter.copy_(0.1 * torch.randn_like(parameter))
            elif name.endswith("bias"):
                parameter.copy_(0.05 * torch.randn_like(parameter))
            elif parameter.dim() == 2 and "embed" not in name:
                parameter.mul_(5)


def make_ids(spec, generator):
    rows = []
    for length in LENGTHS:
        if spec["ids"] == "random":
            rows.append(torch.randint(0, VOCAB, (length,), generator=generator))
            continue
        first, last = spec["ids"]
        specials = {first, last, spec["pad"]}
        body = torch.randint(0, VOCAB, (max(length - 2, 0) * 2 + 8,), generator=generator)
        body = body[[int(t) not in specials for t in body]][:max(length - 2, 0)]
        row = [first] if length == 1 else [first] + body.tolist() + [last]
        rows.append(torch.tensor(row, dtype=torch.int64))
    return rows


def base_of(model):
    return model.base_model if model.base_model is not model else model


def yes_no(model, ids, tokens):
    """(last_hidden_state, [[raw score]], [[normalized score]]) of one sequence, from the full lm_head logits:
    logit_yes - logit_no and softmax over [no, yes]; without a no token, logit_yes and its sigmoid."""
    with torch.no_grad():
        out = model(input_ids=ids[None])
        last = out.logits[0, -1]
        hidden = model.model(input_ids=ids[None]).last_hidden_state[0]
        if tokens.get("no") is None:
            return hidden, last[tokens["yes"]].reshape(1, 1), torch.sigmoid(last[tokens["yes"]]).reshape(1, 1)
        pair = torch.stack([last[tokens["no"]], last[tokens["yes"]]])
        probability = torch.softmax(pair, dim=0)[1]
        return hidden, (pair[1] - pair[0]).reshape(1, 1), probability.reshape(1, 1)


def run(model, ids):
    """(last_hidden_state [L, H], logits [1, labels] or None) of one sequence."""
    if getattr(model, "yes_no_tokens", None) is not None:
        hidden, difference, _ = yes_no(model, ids, model.yes_no_tokens)
        return hidden, difference
    with torch.no_grad():
        if isinstance(model, transformers.PreTrainedModel) and model.base_model is not model:
            out = model(input_ids=ids[None], output_hidden_states=True)
            hidden = base_of(model)(input_ids=ids[None]).last_hidden_state[0]
            return hidden, out.logits
        return model(input_ids=ids[None]).last_hidden_state[0], None


# ---------------------------------------------------------------- semantics checks

class AttentionRecorder:
    """Wraps a modeling module's eager_attention_forward to record each call's mask and scale."""

    def __init__(self, module):
        self.module, self.calls = module, []

    def __enter__(self):
        self.original = self.module.eager_attention_forward

        def wrapper(attn, query, key, value, attention_mask, *args, **kwargs):
            self.calls.append({"layer": getattr(attn, "layer_idx", None), "scaling": kwargs.get("scaling"),
                               "mask": None if attention_mask is None else attention_mask.detach().clone(),
                               "sliding_window_arg": kwargs.get("sliding_window")})
            return self.original(attn, query, key, value, attention_mask, *args, **kwargs)

        self.module.eager_attention_forward = wrapper
        return self

    def __exit__(self, *exc):
        self.module.eager_attention_forward = self.original


def mask_summary(calls, length):
    """For each layer: the largest |i - j| allowed, and whether the allowed set is exactly |i - j| <= w."""
    result = []
    for call in calls:
        entry = {"layer": call["layer"], "scaling": call["scaling"], "sliding_window_arg": call["sliding_window_arg"]}
        if call["mask"] is None:
            entry["mask"] = "none (all pairs allowed)"
        else:
            allowed = (call["mask"][0, 0] > -1e30) & (call["mask"][0, 0] == 0)
            i = torch.arange(length)[:, None]
            j = torch.arange(length)[None, :]
            distance = (i - j).abs()
            widest = int(distance[allowed].max())
            entry["max_abs_distance_allowed"] = widest
            entry["mask_is_abs_distance_le_max"] = bool(torch.equal(allowed, distance <= widest))
            entry["mask_min_value"] = float(call["mask"].min())
        result.append(entry)
    return result


def position_offset_check(model, ids):
    """Which start offset of learned absolute positions reproduces model.embeddings (0 or 2)."""
    embeddings = base_of(model).embeddings
    with torch.no_grad():
        reference = embeddings(input_ids=ids[None])
        found = {}
        for offset in (0, 2):
            positions = torch.arange(offset, offset + len(ids))[None]
            found[offset] = float((embeddings(input_ids=ids[None], position_ids=positions) - reference).abs().max())
    return {f"max_abs_diff_with_positions_from_{k}": v for k, v in found.items()}


# ---------------------------------------------------------------- writing

def tensor_names(path):
    with safe_open(path, "pt") as f:
        return {name: [str(f.get_slice(name).get_dtype()), list(f.get_slice(name).get_shape())] for name in f.keys()}


def key_config(config_path):
    config = json.loads(pathlib.Path(config_path).read_text())
    skip = {"transformers_version", "output_hidden_states", "return_dict", "chunk_size_feed_forward",
            "is_encoder_decoder", "output_attentions", "_name_or_path", "dtype", "problem_type"}
    return {k: v for k, v in config.items() if k not in skip}


def save_mpnet_as_real_masked_lm(model, out):
    """As sentence-transformers/all-mpnet-base-v2 ships: config says MPNetForMaskedLM, but the
    tensors are MPNetModel's, unprefixed, with the pooler and the I64 buffer embeddings.position_ids."""
    model.config.architectures = ["MPNetForMaskedLM"]
    model.save_pretrained(out, safe_serialization=True)
    tensors = {k: v.detach().float().contiguous() for k, v in model.state_dict().items()}
    tensors["embeddings.position_ids"] = torch.arange(model.config.max_position_embeddings)[None].to(torch.int64)
    save_file(tensors, out / "model.safetensors", metadata={"format": "pt"})


def save_mpnet_prefixed(model, out):
    """As MPNetForMaskedLM.save_pretrained writes (microsoft/mpnet-base): mpnet.* (no pooler) + lm_head.*."""
    masked = transformers.MPNetForMaskedLM(model.config).eval()
    with torch.no_grad():
        missing = masked.mpnet.load_state_dict(model.state_dict(), strict=False)
        for name, parameter in masked.lm_head.named_parameters():
            if name.startswith("decoder.weight"):
                continue  # tied to mpnet.embeddings.word_embeddings
            if parameter.dim() == 2:
                parameter.mul_(5)
            else:
                parameter.copy_(0.05 * torch.randn_like(parameter))
    masked.save_pretrained(out, safe_serialization=True)
    return {"missing_when_loading_encoder": list(missing.missing_keys),
            "unexpected_when_loading_encoder": list(missing.unexpected_keys)}


def rename_norms_to_gamma_beta(out):
    """LayerNorm .weight / .bias saved as .gamma / .beta (checkpoints converted from TensorFlow)."""
    path = out / "model.safetensors"
    with safe_open(path, "pt") as f:
        tensors = {name: f.get_tensor(name) for name in f.keys()}
    renamed = {}
    for name, tensor in tensors.items():
        if "LayerNorm" in name and name.endswith(".weight"):
            name = name[:-len(".weight")] + ".gamma"
        elif "LayerNorm" in name and name.endswith(".bias"):
            name = name[:-len(".bias")] + ".beta"
        renamed[name] = tensor
    save_file(renamed, path, metadata={"format": "pt"})


def extra_poolings(hidden):
    """sentence-transformers' weightedmean and mean_sqrt_len_tokens poolings of one sequence."""
    from sentence_transformers.models import Pooling
    features = {"token_embeddings": hidden[None], "attention_mask": torch.ones(1, hidden.shape[0], dtype=torch.int64)}
    result = {}
    for mode, name in (("weightedmean", "weightedmean_pooled"), ("mean_sqrt_len_tokens", "mean_sqrt_len_pooled")):
        pooling = Pooling(hidden.shape[1], pooling_mode=mode)
        result[name] = pooling(dict(features))["sentence_embedding"].float()
    return result


def splade_of(logits):
    """[1, vocab]: max over the tokens of log(1 + relu(logits [1, L, vocab]))."""
    return torch.log1p(torch.relu(logits[0])).max(dim=0, keepdim=True).values


class NoCausalMask:
    """For a bidirectional spec: the modeling module's create_causal_mask returns None, so eager
    attention adds no mask and every query sees every key of its (unpadded) sequence."""

    def __init__(self, spec):
        module = spec.get("mask_module", spec["cls"].__module__)
        self.module = sys.modules[module] if spec.get("bidirectional") else None

    def __enter__(self):
        if self.module is not None:
            self.original = self.module.create_causal_mask
            self.module.create_causal_mask = lambda *args, **kwargs: None
        return self

    def __exit__(self, *exc):
        if self.module is not None:
            self.module.create_causal_mask = self.original


def make(family, out):
    spec = FAMILIES[family]()
    if spec.get("jina"):
        return make_jina(family, out, spec)
    if spec.get("stella"):
        return make_stella_dense(family, out)
    if spec.get("costwise"):
        return make_costwise(family, out)
    with NoCausalMask(spec), NomicRotaryVariant(spec):
        make_spec(family, out, spec)


def make_spec(family, out, spec):
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(spec["seed"])
    config = spec["config"]
    model = spec["cls"](config).eval()
    perturb(model, spec.get("perturb", "default"))
    if spec.get("embedding_gain"):
        # Larger embedding rows give a tied head logits of order 1, which a soft-cap of 1 then bends.
        with torch.no_grad():
            for name, parameter in model.named_parameters():
                if "embed" in name:
                    parameter.mul_(spec["embedding_gain"])
    if spec.get("storage") is not None:
        # The parameters only (save_pretrained then writes BF16 / F16 tensors): buffers such as
        # RoPE's inverse frequencies are recomputed at load, so rounding them would change the
        # goldens' math.
        with torch.no_grad():
            for parameter in model.parameters():
                parameter.data = parameter.data.to(spec["storage"])
    report = {"generator": "tools/make_family_goldens.py " + family, "transformers": transformers.__version__,
              "torch": torch.__version__, "class": spec["cls"].__name__, "lengths": LENGTHS,
              "dtype": "float64 run, float32 outputs", "attn_implementation": "eager", "seed": spec["seed"],
              "weight_recipe": spec.get("perturb", "default"),
              "stored_dtype": str(spec.get("storage", torch.float32)).replace("torch.", "")}
    if spec.get("reference"):
        report["reference"] = spec["reference"]
    if family == "mpnet-masked-lm":
        save_mpnet_as_real_masked_lm(model, out)
        report["class"] = "MPNetModel weights in a folder whose config says MPNetForMaskedLM"
        report["layout"] = ("as sentence-transformers/all-mpnet-base-v2: unprefixed MPNetModel tensors incl. "
                            "pooler.* and embeddings.position_ids (I64 [1, 514]); same weights and goldens as tiny-mpnet")
    elif family == "mpnet-masked-lm-prefixed":
        report["class"] = "MPNetForMaskedLM (goldens are its .mpnet encoder's, i.e. tiny-mpnet's)"
        report["layout"] = save_mpnet_prefixed(model, out)
    elif spec.get("no_save_pretrained"):
        # Modules transformers does not know (nomic_moe_model): the state_dict is written below.
        pass
    else:
        model.save_pretrained(out, safe_serialization=True)
    if spec.get("old_norm_names"):
        rename_norms_to_gamma_beta(out)
    if spec.get("state_dict_names"):
        # transformers' in-memory names (layers.i.self_attn.q_proj, …), as a plain state_dict save
        # writes them; save_pretrained of 5.25 writes the hub's names for these families.
        save_file({k: v.detach().contiguous() for k, v in model.state_dict().items()}, out / "model.safetensors",
                  metadata={"format": "pt"})
        report["layout"] = "transformers' in-memory tensor names (state_dict), its config.json"
    if spec.get("hub_tensors") is not None:
        # The hub's remote-code layout: its tensor names and fusings, its config keys alone.
        rewrite_tensors(out, spec["hub_tensors"])
        (out / "config.json").write_text(json.dumps(spec["hub_config"], indent=2, sort_keys=True) + "\n")
        report["layout"] = "the hub's remote code (tensors and config.json as its folders ship them)"
    if "legacy_config" in spec:
        # Real checkpoints' config format; transformers 5 reads either. Checked below by reloading.
        path = out / "config.json"
        saved = json.loads(path.read_text())
        saved.update(spec["legacy_config"])
        for key in spec.get("drop_config_keys", []):
            saved.pop(key, None)
        path.write_text(json.dumps(saved, indent=2, sort_keys=True) + "\n")

    if spec.get("yes_no_template") is not None:
        (out / "yes_no_reranker.json").write_text(json.dumps(spec["yes_no_template"], indent=2) + "\n")
        report["yes_no_reranker.json"] = spec["yes_no_template"]

    tokens = None
    reranker = spec.get("reranker")
    if reranker is True:  # Qwen3-Reranker
        reranker = dict(tokenizer=reranker_tokenizer, yes="yes", no="no", pair_ids=None)
    if reranker:
        tokenizer = reranker["tokenizer"]()
        tokenizer.save(str(out / "tokenizer.json"))
        tokens = {"yes": tokenizer.token_to_id(reranker["yes"]),
                  "no": None if reranker["no"] is None else tokenizer.token_to_id(reranker["no"])}
        if reranker.get("reference"):
            report["pair_reference"] = reranker["reference"]
        report["yes_no_token_ids"] = tokens
        report["lm_head_in_file"] = "lm_head.weight" in tensor_names(out / "model.safetensors")

    model = model.double()
    model.yes_no_tokens = tokens
    generator = torch.Generator().manual_seed(7)
    rows = make_ids(spec, generator)
    golden, logits_seen = {}, False
    for i, ids in enumerate(rows):
        hidden, logits = run(model, ids)
        golden[f"input_ids_{i}"] = ids.to(torch.int64)
        golden[f"last_hidden_state_{i}"] = hidden.float()
        golden[f"mean_pooled_{i}"] = hidden.mean(0, keepdim=True).float()
        golden[f"cls_pooled_{i}"] = hidden[:1].float()
        golden[f"last_token_{i}"] = hidden[-1:].float()
        if spec.get("extra_poolings"):
            for name, value in extra_poolings(hidden).items():
                golden[f"{name}_{i}"] = value
        if spec.get("embedder"):
            logits = None  # a masked-LM checkpoint used as an embedder: its head is not served
        if spec.get("tanh_int8"):
            scaled = 127 * torch.tanh(hidden.mean(0, keepdim=True))
            golden[f"scaled_tanh_mean_{i}"] = scaled.float()
            golden[f"int8_mean_{i}"] = torch.round(scaled).float()
        if spec.get("projection"):
            # The model's output is the projected tokens: every pooling takes those.
            projected = logits[0]
            golden[f"projected_hidden_state_{i}"] = projected.float()
            golden[f"mean_pooled_{i}"] = projected.mean(0, keepdim=True).float()
            golden[f"cls_pooled_{i}"] = projected[:1].float()
            golden[f"last_token_{i}"] = projected[-1:].float()
        elif spec.get("splade"):
            golden[f"splade_{i}"] = splade_of(logits).float()
        elif logits is not None:
            golden[f"logits_{i}"] = logits.float()
            logits_seen = True
        if tokens is not None:
            golden[f"yes_probability_{i}"] = yes_no(model, ids, tokens)[2].float()
    if tokens is not None:
        # The model card's process_inputs: prefix ids + the formatted body's ids + suffix ids.
        prefix = tokenizer.encode(RERANKER_PREFIX, add_special_tokens=False).ids
        suffix = tokenizer.encode(RERANKER_SUFFIX, add_special_tokens=False).ids
        for k, (query, document) in enumerate(RERANKER_PAIRS):
            body = f"<Instruct>: {RERANKER_INSTRUCTION}\n<Query>: {query}\n<Document>: {document}"
            ids = torch.tensor(prefix + tokenizer.encode(body, add_special_tokens=False).ids + suffix)
            if reranker["pair_ids"] is not None:
                ids = torch.tensor(reranker["pair_ids"](tokenizer, query, document))
            _, difference, probability = yes_no(model, ids, tokens)
            golden[f"pair_ids_{k}"] = ids.to(torch.int64)
            golden[f"pair_logits_{k}"] = difference.float()
            golden[f"pair_yes_probability_{k}"] = probability.float()
        report["pairs"] = [{"query": q, "document": d} for q, d in RERANKER_PAIRS]
        report["pair_batched_max_abs_diff"] = batched_pair_check(model, golden, tokens)
        if reranker["pair_ids"] is not None:
            # The first pair again with an instruction (mxbai's `instruction`, FlagEmbedding's `prompt`).
            query, document = RERANKER_PAIRS[0]
            ids = reranker["pair_ids"](tokenizer, query, document, instruction=RERANKER_PAIR_INSTRUCTION)
            golden["instruction_pair_ids"] = torch.tensor(ids, dtype=torch.int64)
            report["instruction_pair"] = {"query": query, "document": document,
                                          "instruction": RERANKER_PAIR_INSTRUCTION}
    if spec.get("pair_prompt"):
        # A cross-encoder whose card puts each pair into one text: its ids as HF tokenizers gives them
        # (special tokens included), the logit and its sigmoid.
        tokenizer = spec["pair_prompt"]["tokenizer"]()
        tokenizer.save(str(out / "tokenizer.json"))
        for k, (query, document) in enumerate(RERANKER_PAIRS):
            ids = torch.tensor(tokenizer.encode(spec["pair_prompt"]["text"](query, document)).ids)
            _, logits = run(model, ids)
            golden[f"pair_ids_{k}"] = ids.to(torch.int64)
            golden[f"pair_logits_{k}"] = logits.float()
            golden[f"pair_yes_probability_{k}"] = torch.sigmoid(logits).float()
        report["pairs"] = [{"query": q, "document": d, "text": spec["pair_prompt"]["text"](q, d)}
                           for q, d in RERANKER_PAIRS]
    save_file({k: v.contiguous() for k, v in golden.items()}, out / "golden.safetensors")
    if family == "deberta-v3-reranker":
        write_deberta_tokenizer(model, out)

    checks = {}
    # Reload the written folder with Auto classes (what an engine user's config says) and compare.
    auto = transformers.AutoModelForSequenceClassification if logits_seen else transformers.AutoModel
    if tokens is not None:
        auto = transformers.AutoModelForCausalLM
    elif spec.get("splade"):
        auto = transformers.AutoModelForMaskedLM
    if family == "mpnet-masked-lm-prefixed":
        reloaded = transformers.MPNetForMaskedLM.from_pretrained(out, attn_implementation="eager").mpnet
    elif spec.get("reload_function") is not None:  # modules put into a transformers model
        reloaded = spec["reload_function"](spec, out)
    elif spec.get("reload_with_config"):  # hub layout: transformers' config, the folder's tensors converted
        reloaded = spec["cls"].from_pretrained(out, config=spec["config"], attn_implementation="eager")
    elif spec.get("reload") is not None:  # remote-code model_type: the transformers class it restates
        reloaded = spec["reload"].from_pretrained(out, attn_implementation="eager")
    else:
        reloaded = auto.from_pretrained(out, attn_implementation="eager")
    reloaded = reloaded.double().eval()
    reloaded.yes_no_tokens = tokens
    worst = 0.0
    for i, ids in enumerate(rows):
        hidden, logits = run(reloaded, ids)
        if spec.get("embedder"):
            logits = None
        worst = max(worst, float((hidden.float() - golden[f"last_hidden_state_{i}"]).abs().max()))
        if spec.get("projection"):
            worst = max(worst, float((logits[0].float() - golden[f"projected_hidden_state_{i}"]).abs().max()))
        elif spec.get("splade"):
            worst = max(worst, float((splade_of(logits).float() - golden[f"splade_{i}"]).abs().max()))
        elif logits is not None:
            worst = max(worst, float((logits.float() - golden[f"logits_{i}"]).abs().max()))
    checks["reloaded_class"] = type(reloaded).__name__
    checks["reload_max_abs_diff"] = worst
    # An fp32 run of the same weights against the float64 goldens: the precision to expect.
    f32 = reloaded.float()
    worst32 = 0.0
    for i, ids in enumerate(rows):
        hidden, _ = run(f32, ids)
        worst32 = max(worst32, float((hidden - golden[f"last_hidden_state_{i}"]).abs().max()))
    checks["fp32_run_max_abs_diff"] = worst32
    reloaded = reloaded.double()
    checks["output_std"] = {f"last_hidden_state_{i}": float(golden[f"last_hidden_state_{i}"].std())
                            for i in range(len(rows)) if len(rows[i]) > 1}
    if logits_seen:
        checks["logits"] = {f"logits_{i}": golden[f"logits_{i}"][0].tolist() for i in range(len(rows))}
    if spec.get("learned_positions"):
        checks["absolute_positions"] = position_offset_check(reloaded, rows[5])
    family_checks(family, spec, reloaded, rows, golden, checks)
    if spec.get("batch_check"):
        checks["batch_check"] = batch_check(reloaded, rows, golden, spec["pad"])

    report["config"] = key_config(out / "config.json")
    report["tensors"] = tensor_names(out / "model.safetensors")
    report["golden_tensors"] = sorted(golden)
    report["checks"] = checks
    (out / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    size = sum(p.stat().st_size for p in out.iterdir())
    print(f"wrote {out} ({size} bytes): reload diff {worst:.2e}, fp32 diff {worst32:.2e}")


def batch_check(model, rows, golden, pad):
    """All rows as one right-padded batch with an attention mask (how transformers runs a packed batch
    of different lengths), without it (padding attended and pooled) and, for the record, left-padded:
    the largest |logit - single-sequence golden| of each."""
    longest = max(len(ids) for ids in rows)
    result = {"lengths": [len(ids) for ids in rows]}
    for side in ("right", "left"):
        ids = torch.full((len(rows), longest), pad, dtype=torch.int64)
        mask = torch.zeros((len(rows), longest), dtype=torch.int64)
        for i, row in enumerate(rows):
            span = slice(0, len(row)) if side == "right" else slice(longest - len(row), longest)
            ids[i, span], mask[i, span] = row, 1
        for masked in (True, False):
            if side == "left" and not masked:
                continue
            with torch.no_grad():
                logits = model(input_ids=ids, attention_mask=mask if masked else None).logits
            worst = max(float((logits[i:i + 1].float() - golden[f"logits_{i}"]).abs().max()) for i in range(len(rows)))
            result[f"max_abs_diff_{side}_padded{'' if masked else '_without_mask'}"] = worst
    return result


def batched_pair_check(model, golden, tokens):
    """The templated pairs run as one right-padded batch (attention mask, each pair's score at its last real
    token): the largest difference from the pairs run alone, so the references do not depend on batching."""
    ids = [golden[f"pair_ids_{k}"] for k in range(len(RERANKER_PAIRS))]
    longest = max(len(row) for row in ids)
    batch = torch.zeros(len(ids), longest, dtype=torch.int64)
    mask = torch.zeros(len(ids), longest, dtype=torch.int64)
    for k, row in enumerate(ids):
        batch[k, :len(row)], mask[k, :len(row)] = row, 1
    with torch.no_grad():
        logits = model(input_ids=batch, attention_mask=mask).logits
    worst = 0.0
    for k, row in enumerate(ids):
        last = logits[k, len(row) - 1]
        score = last[tokens["yes"]] if tokens.get("no") is None else last[tokens["yes"]] - last[tokens["no"]]
        worst = max(worst, float((score.float() - golden[f"pair_logits_{k}"]).abs().max()))
    return worst


def softcap_checks(model, base, rows, golden, checks):
    """How far the goldens would be without each soft-capping (so an engine that skips either fails): the attention
    cap off in every layer (hidden states at every length), and the final cap off (the raw scores)."""
    saved = [layer.self_attn.attn_logit_softcapping for layer in base.layers]
    for layer in base.layers:
        layer.self_attn.attn_logit_softcapping = None
    diffs = {}
    for i, ids in enumerate(rows):
        with torch.no_grad():
            hidden = base(input_ids=ids[None]).last_hidden_state[0]
        diffs[f"len_{len(ids)}"] = float((hidden.float() - golden[f"last_hidden_state_{i}"]).abs().max())
    for layer, cap in zip(base.layers, saved):
        layer.self_attn.attn_logit_softcapping = cap
    checks["max_abs_diff_of_hidden_states_without_attn_logit_softcapping"] = diffs
    cap = model.config.final_logit_softcapping
    model.config.final_logit_softcapping = None
    diffs = {}
    for i, ids in enumerate(rows):
        _, score = run(model, ids)
        diffs[f"len_{len(ids)}"] = float((score.float() - golden[f"logits_{i}"]).abs().max())
    model.config.final_logit_softcapping = cap
    checks["max_abs_diff_of_scores_without_final_logit_softcapping"] = diffs
    # A logit near 0 is barely capped (c·tanh(x / c) ≈ x − x³ / 3c²), so the largest difference is what shows that
    # skipping a cap fails the 1e-4 tolerance.
    assert max(checks["max_abs_diff_of_hidden_states_without_attn_logit_softcapping"].values()) > 1e-2, \
        "the attention cap must change the outputs measurably"
    assert max(diffs.values()) > 1e-2, "the final cap must change the scores measurably"


def family_checks(family, spec, model, rows, golden, checks):
    longest = rows[5]
    base = base_of(model)
    if spec.get("softcapped"):
        softcap_checks(model, base, rows, golden, checks)
    if family.startswith("mpnet"):
        bucket = base.encoder.relative_position_bucket
        distances = torch.arange(-140, 141)
        buckets = bucket(distances, num_buckets=32).tolist()  # relative_position = j - i
        checks["relative_position_bucket"] = {
            "note": "bucket(j - i) as MPNetEncoder.relative_position_bucket(num_buckets=32, max_distance=128); "
                    "compute_position_bias passes num_buckets=32 whatever the config says; positions 0..L-1 "
                    "(not the padding-offset absolute position ids)",
            "j_minus_i_to_bucket": {str(d): b for d, b in zip(distances.tolist(), buckets)
                                    if d in (-140, -129, -128, -127, -100, -64, -32, -16, -9, -8, -7, -1,
                                             0, 1, 7, 8, 9, 16, 32, 64, 100, 127, 128, 129, 140)},
        }
    if family.startswith("deberta"):
        deberta_checks(model, base, longest, golden, checks)
    if spec.get("nomic_moe"):
        nomic_moe_checks(model, rows, golden, checks)
    if spec.get("nomic_rotary"):
        nomic_rotary_checks(spec, model, base, rows, golden, checks)
    elif spec.get("rotary"):
        rotary_checks(model, base, rows, golden, checks)
    if spec.get("bidirectional") or family.startswith("eurobert"):
        bidirectional_checks(spec, model, base, rows, golden, checks)
    if spec.get("reranker_pooling_check"):
        reranker_pooling_checks(model, base, rows, golden, checks)
    if spec.get("windowed"):
        module = sys.modules[type(base).__module__]
        with AttentionRecorder(module) as recorder, torch.no_grad():
            base(input_ids=longest[None])
        checks["attention_calls_at_length_130"] = mask_summary(recorder.calls, len(longest))
        # Does the window matter? Rerun with the same layers and RoPE but a window wider than any sequence.
        config = model.config
        saved_types = list(config.layer_types)
        wide = {**config.to_dict(), "local_attention": 4096} if family.startswith("modernbert") else \
            {**config.to_dict(), "sliding_window": 4096}
        checks["max_abs_diff_if_the_window_were_4096"] = distance_with_config(base, wide, rows, golden)
        checks["layer_types"] = saved_types
        if family.startswith("gemma2"):
            checks["layer_types"] = saved_types
            checks["embed_scale"] = float(base.embed_tokens.embed_scale)
        if family == "gemma3":
            checks["config_sliding_window_in_file"] = 16
            checks["config.sliding_window_after_post_init"] = config.sliding_window
            checks["embed_scale"] = float(base.embed_tokens.embed_scale)
        if family.startswith("modernbert"):
            checks["config.sliding_window (local_attention // 2)"] = config.sliding_window
            checks["attn_norm_of_layer_0"] = type(base.layers[0].attn_norm).__name__


def distance_with_config(base, settings, rows, golden):
    """Per golden length, the largest |difference| from the goldens of `base`'s weights in a model
    built from the config `settings` (a dict of its keys): how much a setting matters."""
    other = type(base)._from_config(base.config.__class__(**settings), attn_implementation="eager")
    other.load_state_dict(base.state_dict())
    other = other.double().eval()
    diffs = {}
    for i, ids in enumerate(rows):
        with torch.no_grad():
            hidden = other(input_ids=ids[None]).last_hidden_state[0]
        diffs[f"len_{len(ids)}"] = float((hidden.float() - golden[f"last_hidden_state_{i}"]).abs().max())
    return diffs


def rotary_checks(model, base, rows, golden, checks):
    """The inverse frequencies the rotary encoder used, and how far plain RoPE at rope_theta (no
    scaling) and no RoPE at all would be from the goldens at length 130 (so an engine that
    ignores either fails)."""
    longest = rows[5]
    rotary = base.rotary_emb
    checks["rope_inv_freq"] = rotary.inv_freq.tolist()
    checks["rope_parameters"] = dict(model.config.rope_parameters)
    saved = rotary.inv_freq.clone()
    dim = rotary.inv_freq.shape[0] * 2
    plain = 1.0 / (model.config.rope_parameters["rope_theta"] ** (torch.arange(0, dim, 2).float() / dim))
    for name, inv_freq in (("plain_rope", plain), ("no_rope", torch.zeros_like(saved))):
        rotary.inv_freq = inv_freq.to(saved.dtype)
        with torch.no_grad():
            hidden = base(input_ids=longest[None]).last_hidden_state[0]
        checks[f"max_abs_diff_with_{name}_len_130"] = float((hidden.float() - golden["last_hidden_state_5"]).abs().max())
    rotary.inv_freq = saved


def bidirectional_checks(spec, model, base, rows, golden, checks):
    """The masks each layer's eager attention got at length 130 (none, or all zeros: bidirectional),
    how far a causal run would be from the goldens (so a causal engine fails), and the RoPE
    frequencies transformers used."""
    module = sys.modules[type(base).__module__]
    longest = rows[5]
    with AttentionRecorder(module) as recorder, torch.no_grad():
        base(input_ids=longest[None])
    summary = mask_summary(recorder.calls, len(longest))
    for entry, call in zip(summary, recorder.calls):
        if call["mask"] is not None:
            entry["mask_all_zero"] = bool((call["mask"] == 0).all())
    checks["attention_calls_at_length_130"] = summary
    causal = torch.triu(torch.full((len(longest), len(longest)), float("-inf"), dtype=torch.float64), diagonal=1)
    # The mask builder the model calls (patched to None for the remote-code encoders, EuroBERT's own
    # bidirectional one), made to return a causal mask for one run.
    builder = "create_causal_mask" if spec.get("bidirectional") else "create_bidirectional_mask"
    original = getattr(module, builder)
    setattr(module, builder, lambda *args, **kwargs: causal[None, None])
    try:
        with torch.no_grad():
            hidden = base(input_ids=longest[None]).last_hidden_state[0]
    finally:
        setattr(module, builder, original)
    checks["max_abs_diff_if_causal_len_130"] = float((hidden.float() - golden["last_hidden_state_5"]).abs().max())
    checks["rope_inv_freq"] = base.rotary_emb.inv_freq.tolist()
    checks["rope_parameters"] = dict(model.config.rope_parameters)


def reranker_pooling_checks(model, base, rows, golden, checks):
    """How far the logits would be from the goldens were the head fed the last token (a causal
    *ForSequenceClassification's choice) or the first instead of the mean: an engine pooling the
    wrong token fails."""
    for name, pick in (("last_token", lambda h: h[-1:]), ("first_token", lambda h: h[:1])):
        worst = 0.0
        for i, ids in enumerate(rows):
            with torch.no_grad():
                hidden = base(input_ids=ids[None]).last_hidden_state[0]
                logits = model.score(pick(hidden)) / getattr(model.config, "temperature", 1.0)
            worst = max(worst, float((logits.float() - golden[f"logits_{i}"]).abs().max()))
        checks[f"logits_max_abs_diff_if_{name}_pooled"] = worst


TOKENIZER_CORPUS = [
    "The capital of France is Paris.", "Berlin is the capital of Germany.", "What is the capital of France?",
    "A man is playing a guitar on stage.", "Nobody is playing music.", "Deep learning models rank documents.",
    "Émile a visité São Paulo en 2019, très bien!", "tokenizers split text into pieces", "hello world",
    "How many people live in Berlin?", "Paris has about two million inhabitants.", "The weather is nice today."]
SINGLE_TEXTS = ["What is the capital of France?", "hello  world\tand\nmore   spaces   ", "Ame\u0301lie",
                "zebra quokka ?!", ""]
PAIR_TEXTS = [("What is the capital of France?", "Paris is the capital of France."),
              ("What is the capital of France?", "Berlin is the capital of Germany."),
              ("How many people live in Berlin?", "About 3.7 million people live in Berlin.  "),
              ("A man is playing a guitar on stage.", "Nobody is playing music."),
              ("hello", "")]


def write_deberta_tokenizer(model, out):
    """A DeBERTa-v3-style tokenizer.json (transformers' DebertaV2Tokenizer over a tiny Unigram
    vocabulary trained here: [PAD] 0, [CLS] 1, [SEP] 2, [UNK] 3 as in deberta-v3's spm.model) and
    tokenizer_reference.json: its ids for single texts and text pairs (with token type ids) and
    the reranker's logits for each pair, from the float64 model.

    The normalizer is the one DebertaV2Converter writes when it converts spm.model (what the Hub's
    DeBERTa-v3 tokenizer.json files hold: Strip, the spm charsmap, Replace " {2,}"), without the
    charsmap, which this vocabulary has none of. transformers 5's DebertaV2Tokenizer built from a
    vocabulary uses Replace(\\s{2,}|[\\n\\r\\t]), NFC, Strip(right) instead, a regex stamen's
    tokenizer does not parse (it refuses the file by name)."""
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers, trainers
    trained = Tokenizer(models.Unigram())
    trained.normalizer = normalizers.NFC()
    trained.pre_tokenizer = pre_tokenizers.Metaspace()
    trained.train_from_iterator(TOKENIZER_CORPUS * 3, trainers.UnigramTrainer(
        vocab_size=400, special_tokens=["[PAD]", "[CLS]", "[SEP]", "[UNK]"], unk_token="[UNK]"))
    vocab = [tuple(piece) for piece in json.loads(trained.to_str())["model"]["vocab"]]
    tokenizer = transformers.DebertaV2Tokenizer(vocab=vocab, unk_id=3)
    assert (tokenizer.pad_token_id, tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.unk_token_id) == (0, 1, 2, 3)
    tokenizer.backend_tokenizer.normalizer = normalizers.Sequence(
        [normalizers.Strip(), normalizers.Replace(Regex(" {2,}"), " ")])
    tokenizer.save_pretrained(out)
    # The written file alone, through the tokenizers library, gives the same ids.
    from_file = Tokenizer.from_file(str(out / "tokenizer.json"))
    for text in SINGLE_TEXTS:
        assert from_file.encode(text).ids == tokenizer(text)["input_ids"], text
    reference = {"note": "singles: transformers DebertaV2Tokenizer ids (= tokenizers'); pairs: tokenizers' "
                         "Tokenizer.encode(first, second) (= transformers' for non-empty texts); logits of the float64 model",
                 "vocabulary_size": len(vocab), "singles": [], "pairs": []}
    for text in SINGLE_TEXTS:
        reference["singles"].append({"text": text, "ids": tokenizer(text)["input_ids"]})
    # Pairs through the tokenizers library (as TEI and the Hub's fast tokenizers encode them):
    # transformers' tokenizer(first, "") drops an empty second text, tokenizers keeps its [SEP].
    for first, second in PAIR_TEXTS:
        encoded = from_file.encode(first, second)
        if second:
            assert encoded.ids == tokenizer(first, second)["input_ids"], (first, second)
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([encoded.ids]), token_type_ids=torch.tensor([encoded.type_ids])).logits
        reference["pairs"].append({"first": first, "second": second, "ids": encoded.ids,
                                   "type_ids": encoded.type_ids, "logits": logits[0].tolist()})
    (out / "tokenizer_reference.json").write_text(json.dumps(reference, indent=1, ensure_ascii=False) + "\n")


def deberta_checks(model, base, longest, golden, checks):
    module = sys.modules[type(base).__module__]
    config = model.config
    buckets, maximum = config.position_buckets, base.encoder.max_relative_positions
    span = buckets if buckets > 0 else maximum
    distances = torch.arange(-140, 141)  # query minus key
    if buckets > 0:
        bucketed = module.make_log_bucket_position(distances, buckets, maximum).to(torch.long)
    else:
        bucketed = distances
    rows = torch.clamp(bucketed + span, 0, 2 * span - 1)
    checks["relative_position_rows"] = {
        "note": "row of encoder.rel_embeddings read for query i and key j: clamp(bucket(i - j) + span, 0, "
                "2 span - 1), bucket = make_log_bucket_position(i - j, position_buckets, max_relative_positions) "
                "with position buckets, else i - j",
        "span": span, "position_buckets": buckets, "max_relative_positions": maximum,
        "i_minus_j_to_row": {str(d): r for d, r in zip(distances.tolist(), rows.tolist())
                             if d in (-140, -129, -100, -64, -48, -47, -33, -17, -16, -15, -1, 0, 1, 15, 16, 17,
                                      33, 47, 48, 64, 100, 129, 140)},
        "rows_reached_at_length_130": len(set(rows[(distances.abs() < 130)].tolist())),
    }
    # How much the c2p / p2c terms move the outputs (the engine must get them right to pass).
    original = module.DisentangledSelfAttention.disentangled_attention_bias
    module.DisentangledSelfAttention.disentangled_attention_bias = lambda *args, **kwargs: 0
    try:
        with torch.no_grad():
            hidden = base(input_ids=longest[None]).last_hidden_state[0]
    finally:
        module.DisentangledSelfAttention.disentangled_attention_bias = original
    checks["max_abs_diff_without_position_terms_len_130"] = float((hidden.float() - golden["last_hidden_state_5"]).abs().max())
    checks["scale_factor"] = 1 + sum(t in (config.pos_att_type or []) for t in ("c2p", "p2c"))


def main():
    family, out = sys.argv[1], pathlib.Path(sys.argv[2])
    torch.set_num_threads(1)
    if family == "all":
        for name in FAMILIES:
            if name == "gemma2-costwise-reranker" and not transformers.__version__.startswith("4.46"):
                print(f"skipped {name}: it runs under PYTHONPATH={FLAGEMBEDDING_TRANSFORMERS} (make_costwise)")
                continue
            make(name, out / f"tiny-{name}")
    else:
        if family not in FAMILIES:
            sys.exit(f"unknown family {family!r}; one of: {', '.join(FAMILIES)}, all")
        make(family, out)


if __name__ == "__main__":
    main()
