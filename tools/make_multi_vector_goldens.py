#!/usr/bin/env python3
"""Tiny random PyLate (ColBERT) folders with PyLate's own multi-vector outputs and MaxSim scores.

    .venv-heavy/bin/python tools/make_multi_vector_goldens.py tests/engine/data [KIND…]   # bert modernbert stanford jina
    .venv-heavy/bin/python tools/make_multi_vector_goldens.py bench-model SENTENCE_TRANSFORMERS_DIR OUT   # for the bench

Writes, under OUT_DIR, folders that PyLate 1.6.0 itself saved (`ColBERT.save`: the backbone at the
root, `1_Dense/` projecting every token, `config_sentence_transformers.json` with the prefixes,
lengths, query expansion and skiplist, a `tokenizer.json` holding the added "[Q] " / "[D] " tokens):

  tiny-colbert-bert        BertModel backbone, PyLate's defaults: prefixes "[Q] " / "[D] ",
                           attend_to_expansion_tokens false (the [MASK] expansion tokens attend to
                           the query, the query never to them), the punctuation skiplist
  tiny-colbert-modernbert  ModernBertModel backbone (local attention 8, so the window matters),
                           attend_to_expansion_tokens true, a two-layer Dense chain with a bias
  tiny-colbert-stanford    a colbertv2.0-style checkpoint (HF_ColBERT: "bert."-prefixed BERT and
                           "linear.weight" in one file, artifact.metadata, [unused0] / [unused1]
                           prefixes), which PyLate loads through Dense.from_stanford_weights
  tiny-colbert-jina        a jina-colbert-v2-style checkpoint: HF_ColBERT over jina's XLM-RoBERTa
                           (config.json with the remote code's keys and auto_map to
                           jinaai/xlm-roberta-flash-implementation, its tensors under "roberta." by
                           their hub names, "linear.weight" beside them, artifact.metadata with the
                           "[QueryMarker]" / "[DocumentMarker]" prefixes and attended expansion
                           tokens, a Unigram tokenizer with <mask> and the two markers added). PyLate
                           cannot load the remote code, so its reference is the PyLate model the
                           folder was written from: transformers 5.25's own JinaEmbeddingsV3Model
                           (the same backbone, tools/make_jina_v3_goldens.py's name mapping) under
                           PyLate's ColBERT with the model card's settings

and in each `reference.json`: the texts, PyLate's `tokenize` ids for queries and documents, the
attention mask's count of attended keys per query, the positions `encode` keeps (skiplist and
padding dropped from documents; queries keep every token), the float64 vectors `encode` gives
(L2-normalised per token), and `colbert_scores` (MaxSim: the sum over query tokens of the largest
dot product with the document's tokens) of every query against every document.

PyLate's import chain wants `datasets` (its knowledge-distillation collator), which nothing here
uses: the tool stubs it instead of installing it (see requirements/reference-heavy.txt).
"""
import json
import pathlib
import string
import sys
import tempfile
import importlib.machinery
import types

# PyLate 1.6.0 pins sentence-transformers 5.3.0 (with 6.x it mistakes the backbone's folder for a
# pooled model); .venv-heavy keeps 6.2.0 for the other tools, so 5.3.0 lives in a folder of its own
# (requirements/reference-heavy.txt) that this tool alone puts first on the path.
sys.path.insert(0, str(pathlib.Path(sys.prefix) / "pylate-sentence-transformers"))

import tokenizers  # noqa: E402
from safetensors.torch import save_file  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402

# The stub has a spec (transformers probes find_spec) but no distribution metadata, so transformers
# still reports datasets as not installed.
_datasets = types.ModuleType("datasets")
_datasets.__spec__ = importlib.machinery.ModuleSpec("datasets", None)
sys.modules.setdefault("datasets", _datasets)
from pylate import models  # noqa: E402
from pylate.scores import colbert_scores  # noqa: E402

import make_jina_v3_goldens as jina  # noqa: E402  (tools/ is the script's folder)
from tiny_tokenizers import write_unigram_tokenizer  # noqa: E402

WORDS = ["the", "cat", "sat", "on", "mat", "paris", "is", "capital", "of", "france", "berlin", "germany", "what",
         "where", "who", "river", "city", "large", "small", "a", "an", "in", "and", "or", "to", "it", "was", "happy",
         "sun", "moon", "water", "fire", "stone", "tree", "house", "road", "book", "music", "red", "blue"]

QUERIES = ["what is the capital of france?", "where is berlin", "who sat on the mat",
           "the river of the large city in germany and the small road to the house"]
DOCUMENTS = ["paris is the capital of france.", "berlin, the capital of germany!", "the cat sat on the mat; it was happy.",
             "a river, a road, a tree... and a house?", "blue",
             "music and book and sun and moon and water and fire and stone and tree and house and road and city"]


def write_vocabulary(folder, extra=()):
    """A WordPiece vocabulary under 1000 entries: specials, punctuation, letters, words, ##letters, `extra`."""
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(string.punctuation) + list(string.ascii_lowercase)
    tokens += [word for word in WORDS if word not in tokens] + ["##" + letter for letter in string.ascii_lowercase]
    tokens += list(extra)
    vocabulary = {token: index for index, token in enumerate(tokens)}
    # BERT's pipeline, built with tokenizers directly (transformers 5's BertTokenizerFast ignores a
    # vocab_file argument): lowercasing normalizer, punctuation-splitting pre-tokenizer, WordPiece,
    # [CLS] A [SEP].
    backend = tokenizers.Tokenizer(tokenizers.models.WordPiece(vocabulary, unk_token="[UNK]"))
    backend.normalizer = tokenizers.normalizers.BertNormalizer(lowercase=True)
    backend.pre_tokenizer = tokenizers.pre_tokenizers.BertPreTokenizer()
    backend.post_processor = tokenizers.processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    backend.decoder = tokenizers.decoders.WordPiece()
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", cls_token="[CLS]",
                                                     sep_token="[SEP]", pad_token="[PAD]", mask_token="[MASK]",
                                                     model_max_length=128)
    tokenizer.save_pretrained(folder)
    return len(tokens)


def perturb(model, seed):
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            noise = torch.randn(parameter.shape, generator=generator, dtype=parameter.dtype)
            if "norm" in name.lower():
                parameter.copy_((1.0 + 0.1 * noise) if name.endswith("weight") else 0.1 * noise)
            elif name.endswith("bias"):
                parameter.copy_(0.05 * noise)
            elif parameter.dim() == 2 and "embeddings" not in name:
                parameter.mul_(5.0)


def backbone(kind, vocabulary):
    if kind == "bert":
        config = transformers.BertConfig(vocab_size=vocabulary, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                         intermediate_size=128, max_position_embeddings=128, type_vocab_size=2,
                                         hidden_act="gelu", attn_implementation="eager")
        torch.manual_seed(20261206)
        model = transformers.BertModel(config, add_pooling_layer=False)
    else:
        config = transformers.ModernBertConfig(vocab_size=vocabulary, hidden_size=64, num_hidden_layers=3,
                                               num_attention_heads=4, intermediate_size=128, max_position_embeddings=128,
                                               global_attn_every_n_layers=2, local_attention=8, pad_token_id=0,
                                               bos_token_id=2, eos_token_id=3, cls_token_id=2, sep_token_id=3,
                                               attn_implementation="eager")
        torch.manual_seed(20261207)
        model = transformers.ModernBertModel(config)
    perturb(model, 7)
    return model


def make_stanford(folder):
    """A colbertv2.0-style checkpoint as Stanford's ColBERT library saves it: config.json naming
    HF_ColBERT, BERT's tensors under "bert." and the projection "linear.weight" in one
    model.safetensors, artifact.metadata with the prefixes' tokens and lengths; [unused0] and
    [unused1] in the vocabulary."""
    folder.mkdir(parents=True, exist_ok=True)
    vocabulary = write_vocabulary(folder, extra=["[unused0]", "[unused1]"])
    model = backbone("bert", vocabulary)
    model.config.architectures = ["HF_ColBERT"]
    model.config.save_pretrained(folder)
    generator = torch.Generator().manual_seed(13)
    tensors = {"bert." + name: tensor.contiguous() for name, tensor in model.state_dict().items()}
    tensors["linear.weight"] = torch.randn(24, 64, generator=generator) * 0.5
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    (folder / "artifact.metadata").write_text(json.dumps({
        "query_token_id": "[unused0]", "doc_token_id": "[unused1]", "query_token": "[Q]", "doc_token": "[D]",
        "query_maxlen": 12, "doc_maxlen": 20, "attend_to_mask_tokens": False, "dim": 24, "similarity": "cosine",
        "mask_punctuation": True}, indent=2))


# jina-colbert-v2's config.json keys (the remote code's XLMRobertaFlashConfig), at the tiny shapes.
JINA_AUTO_MAP = {
    "AutoConfig": "jinaai/xlm-roberta-flash-implementation--configuration_xlm_roberta.XLMRobertaFlashConfig",
    "AutoModel": "jinaai/xlm-roberta-flash-implementation--modeling_xlm_roberta.XLMRobertaModel"}


def make_jina(folder):
    """A jina-colbert-v2-style checkpoint, written from a PyLate ColBERT over transformers 5.25's
    JinaEmbeddingsV3Model; returns that PyLate model (the reference)."""
    with tempfile.TemporaryDirectory() as temporary:
        base = pathlib.Path(temporary)
        vocabulary = write_unigram_tokenizer(base, WORDS, string.ascii_lowercase, ",.!?;", 128)
        config = transformers.JinaEmbeddingsV3Config(
            vocab_size=vocabulary, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
            max_position_embeddings=514, type_vocab_size=1, layer_norm_eps=1e-5, hidden_act="gelu", pad_token_id=1,
            bos_token_id=0, eos_token_id=2, rope_parameters={"rope_type": "default", "rope_theta": jina.THETA},
            attn_implementation="eager")
        torch.manual_seed(20261208)
        backbone_model = transformers.JinaEmbeddingsV3Model(config)
        perturb(backbone_model, 7)
        backbone_model.save_pretrained(base)
        # The model card's PyLate settings; PyLate adds the two markers to the tokenizer.
        model = models.ColBERT(model_name_or_path=str(base), device="cpu", embedding_size=24, query_length=12,
                               document_length=20, query_prefix="[QueryMarker]", document_prefix="[DocumentMarker]",
                               attend_to_expansion_tokens=True)
    with torch.no_grad():
        model[1].linear.weight.mul_(3.0)
    folder.mkdir(parents=True, exist_ok=True)
    model.tokenizer.save_pretrained(folder)
    state = model[0].auto_model.state_dict()
    tensors = jina.hub_tensors(state, None, cast=lambda tensor: tensor.float().contiguous(), layers=2)
    tensors["linear.weight"] = model[1].linear.weight.detach().float().contiguous()
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    hub_config = {
        "architectures": ["HF_ColBERT"], "attention_probs_dropout_prob": 0.1, "auto_map": JINA_AUTO_MAP,
        "bos_token_id": 0, "classifier_dropout": None, "emb_pooler": None, "eos_token_id": 2, "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1, "hidden_size": 64, "initializer_range": 0.02, "intermediate_size": 128,
        "layer_norm_eps": 1e-05, "load_trained_adapters": False, "lora_adaptations": None, "lora_alpha": 1,
        "lora_dropout_p": 0.0, "lora_main_params_trainable": False, "lora_rank": 4,
        "max_position_embeddings": 514, "model_type": "xlm-roberta", "num_attention_heads": 4, "num_hidden_layers": 2,
        "pad_token_id": 1, "position_embedding_type": "rotary", "rotary_emb_base": jina.THETA, "torch_dtype": "float32",
        "type_vocab_size": 1, "use_cache": False, "use_flash_attn": True,
        "vocab_size": state["embeddings.word_embeddings.weight"].shape[0]}
    (folder / "config.json").write_text(json.dumps(hub_config, indent=2))
    (folder / "artifact.metadata").write_text(json.dumps({
        "query_token_id": "[QueryMarker]", "doc_token_id": "[DocumentMarker]", "query_maxlen": 12, "doc_maxlen": 20,
        "attend_to_mask_tokens": True, "dim": 24, "similarity": "cosine", "mask_punctuation": True}, indent=2))
    return model


def make(kind, out_dir):
    name = f"tiny-colbert-{kind}"
    folder = out_dir / name
    if kind == "stanford":
        make_stanford(folder)
        write_reference(name, folder)
        return
    if kind == "jina":
        write_reference(name, folder, make_jina(folder))
        return
    with tempfile.TemporaryDirectory() as temporary:
        base = pathlib.Path(temporary)
        vocabulary = write_vocabulary(base)
        backbone(kind, vocabulary).save_pretrained(base)
        if kind == "bert":
            model = models.ColBERT(model_name_or_path=str(base), device="cpu", embedding_size=24, query_length=12,
                                   document_length=20)
        else:
            model = models.ColBERT(model_name_or_path=str(base), device="cpu", embedding_size=40, query_length=10,
                                   document_length=16, attend_to_expansion_tokens=True)
            # A second Dense (with a bias) after PyLate's projection: 40 -> 24.
            generator = torch.Generator().manual_seed(11)
            second = models.Dense(in_features=40, out_features=24, bias=True)
            with torch.no_grad():
                second.linear.weight.copy_(torch.randn(24, 40, generator=generator) * 0.3)
                second.linear.bias.copy_(torch.randn(24, generator=generator) * 0.1)
            model.append(second)
        with torch.no_grad():
            for dense in list(model)[1:]:
                dense.linear.weight.mul_(3.0)
        model.save(str(folder))
        (folder / "README.md").unlink()  # the generated model card: paths and dates, nothing the tests read
    write_reference(name, folder)


def write_reference(name, folder, model=None):
    # Reload from the saved folder, as a user would (unless `model` is given), and run in float64.
    if model is None:
        model = models.ColBERT(model_name_or_path=str(folder), device="cpu")
    model = model.to(torch.float64)
    queries = {"ids": [], "attended_keys": [], "kept": [], "vectors": []}
    documents = {"ids": [], "kept": [], "vectors": []}
    for texts, target, is_query in ((QUERIES, queries, True), (DOCUMENTS, documents, False)):
        for text in texts:
            features = model.tokenize([text], is_query=is_query)
            ids = features["input_ids"][0].tolist()
            mask = features["attention_mask"][0].tolist()
            target["ids"].append(ids)
            if is_query:
                # Keys a query's tokens attend to: the leading run of ones (expansion tokens last).
                target["attended_keys"].append(sum(mask))
                assert mask == [1] * sum(mask) + [0] * (len(mask) - sum(mask))
                target["kept"].append(list(range(len(ids))))
            else:
                skip = set(model.skiplist)
                target["kept"].append([i for i, token in enumerate(ids) if token not in skip and mask[i] == 1])
            vectors = model.encode([text], is_query=is_query, convert_to_numpy=False)[0]
            assert vectors.shape[0] == len(target["kept"][-1])
            target["vectors"].append(vectors.tolist())
    # One pair at a time: colbert_scores stacks its inputs, so unequal lengths would need padding.
    scores = [[colbert_scores(torch.tensor([q]), torch.tensor([d]), backend="torch")[0, 0].item()
               for d in documents["vectors"]] for q in queries["vectors"]]
    tokenizer = model.tokenizer
    reference = {
        "pylate": sys.modules["pylate"].__version__, "transformers": transformers.__version__, "torch": torch.__version__,
        "query_prefix_id": model.query_prefix_id, "document_prefix_id": model.document_prefix_id,
        "mask_id": tokenizer.mask_token_id, "skiplist_ids": sorted(set(model.skiplist)),
        "query_length": model.query_length, "document_length": model.document_length,
        "attend_to_expansion_tokens": model.attend_to_expansion_tokens,
        "queries": QUERIES, "documents": DOCUMENTS,
        "query_ids": queries["ids"], "query_attended_keys": queries["attended_keys"], "query_kept": queries["kept"],
        "query_vectors": queries["vectors"],
        "document_ids": documents["ids"], "document_kept": documents["kept"], "document_vectors": documents["vectors"],
        "scores": scores,
    }
    (folder / "reference.json").write_text(json.dumps(reference))
    print(name, "queries", [len(v) for v in queries["vectors"]], "documents", [len(v) for v in documents["vectors"]],
          "prefix ids", model.query_prefix_id, model.document_prefix_id, "attended", queries["attended_keys"])


def make_bench_model(source, folder):
    """A PyLate ColBERT folder on a real sentence-transformers model (bench/max_sim_rerank.py): its
    Transformer, a random Dense to 128 (PyLate's default size), query_length 32, document_length
    256, PyLate's other defaults."""
    torch.manual_seed(3)
    model = models.ColBERT(model_name_or_path=str(source), device="cpu", query_length=32, document_length=256)
    model.save(str(folder))
    (folder / "README.md").unlink()
    print(folder, [type(module).__name__ for module in model])


def main():
    if sys.argv[1] == "bench-model":
        make_bench_model(pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3]))
        return
    out_dir = pathlib.Path(sys.argv[1])
    for kind in sys.argv[2:] or ("bert", "modernbert", "stanford", "jina"):
        make(kind, out_dir)


if __name__ == "__main__":
    main()
