#!/usr/bin/env python3
"""bge-m3 goldens (issue 44): a tiny random bge-m3 folder with FlagEmbedding's own three outputs,
and small torch.save files for the engine's reader of PyTorch's format.

    .venv-heavy/bin/python tools/make_bge_m3_goldens.py tests/engine/data

Writes under the given directory:

  tiny-bge-m3/   BAAI/bge-m3's layout at tiny shapes: an XLMRobertaModel (save_pretrained, F32),
                 a Unigram tokenizer.json (<s> 0, <pad> 1, </s> 2, <unk> 3, Metaspace, "<s> A </s>",
                 <mask> last), modules.json / 1_Pooling (cls) / Normalize as the hub's folder has
                 them, and beside them `colbert_linear.pt` (Linear hidden -> hidden) and
                 `sparse_linear.pt` (Linear hidden -> 1), each a state dict written by torch.save.
                 reference.json: FlagEmbedding 1.4.2's BGEM3FlagModel.encode(return_dense,
                 return_sparse, return_colbert_vecs) of TEXTS in float32 on the CPU (its own
                 tokenization: "input_ids"), with "dense" [texts][hidden], "sparse" [texts] as
                 [[token id, weight]] (its lexical_weights, in id order) and "colbert"
                 [texts][tokens - 1][hidden]; "special_ids", the ids its sparse output drops.
  torch-files/   torch.save files and what they hold (reference.json: each tensor's shape and
                 values): `linear.pt` (a Linear's state dict, F32), `half.pt` (F16 and BF16),
                 `views.pt` (a transposed view and a row of one shared storage: strides and a
                 storage offset), and files the reader must refuse: `int_value.pt` (a state dict
                 holding an int), `module.pt` (a whole torch.nn.Linear: a class global),
                 `deflated.pt` (linear.pt rewritten with compressed entries), `legacy.pt`
                 (torch.save's pre-1.6 format, not a zip), and two hand-made pickles in torch.save's
                 layout: `cycle.pt` (a dict inside itself), `nested_change.pt` (a dict changed
                 after being put in a tuple).

FlagEmbedding is installed with --no-deps (requirements/reference-heavy.txt): its import chain wants
`datasets` (its fine-tuning datasets), which encode never uses, so this tool stubs it.
"""
import importlib.machinery
import json
import pathlib
import sys
import tempfile
import types
import zipfile

import torch
import transformers

from tiny_tokenizers import write_unigram_tokenizer

_datasets = types.ModuleType("datasets")
_datasets.__spec__ = importlib.machinery.ModuleSpec("datasets", None)
# Named in type annotations of its training datasets, evaluated at import; never called here.
_datasets.Dataset = type("Dataset", (), {})
_datasets.DatasetDict = type("DatasetDict", (), {})
sys.modules.setdefault("datasets", _datasets)


def _import_m3_embedder():
    """FlagEmbedding's M3Embedder (BGEM3FlagModel) without the package's __init__ files, which import
    every model kind it has (its LLM rerankers want peft): the packages above m3.py are registered
    empty, with their folders as __path__, so that only m3.py and what it imports are run."""
    import flagembedding_packages
    flagembedding_packages.enter("FlagEmbedding", "FlagEmbedding.inference", "FlagEmbedding.inference.embedder",
                                 "FlagEmbedding.inference.embedder.encoder_only")
    from FlagEmbedding.inference.embedder.encoder_only.m3 import M3Embedder
    return M3Embedder


BGEM3FlagModel = _import_m3_embedder()

HIDDEN, LAYERS, HEADS, INTERMEDIATE = 32, 2, 4, 64
WORDS = ["the", "cat", "sat", "on", "mat", "paris", "is", "capital", "of", "france", "berlin", "germany", "what",
         "where", "who", "river", "city", "large", "small", "a", "in", "and", "to", "it", "was", "happy"]
TEXTS = ["what is the capital of france?", "the cat sat on the mat", "berlin", "the the the cat cat",
         "a small river in a large city, and it was happy!", "zzz qqq"]


def write_tokenizer(folder):
    """An XLM-R-style Unigram tokenizer: SentencePiece specials first, whole words, then letters."""
    return write_unigram_tokenizer(folder, WORDS, "abcdefghijklmnopqrstuvwxy", ",.!?", 512)


def write_sentence_transformers_files(folder):
    """BAAI/bge-m3's own modules: Transformer, Pooling (cls), Normalize."""
    (folder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}], indent=2))
    (folder / "1_Pooling").mkdir(exist_ok=True)
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({
        "word_embedding_dimension": HIDDEN, "pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False,
        "pooling_mode_max_tokens": False, "pooling_mode_mean_sqrt_len_tokens": False}, indent=2))
    (folder / "2_Normalize").mkdir(exist_ok=True)
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 512, "do_lower_case": False}))


def make_bge_m3(out_dir):
    folder = out_dir / "tiny-bge-m3"
    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(44)
    vocabulary = write_tokenizer(folder)
    config = transformers.XLMRobertaConfig(
        vocab_size=vocabulary, hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
        intermediate_size=INTERMEDIATE, max_position_embeddings=514, type_vocab_size=1, pad_token_id=1,
        bos_token_id=0, eos_token_id=2, layer_norm_eps=1e-5)
    model = transformers.XLMRobertaModel(config, add_pooling_layer=False)
    with torch.no_grad():  # random weights of a trained model's scale, not the initialiser's 0.02
        for parameter in model.parameters():
            if parameter.dim() > 1:
                parameter.normal_(0.0, 0.2)
    model.save_pretrained(folder)
    write_sentence_transformers_files(folder)
    colbert = torch.nn.Linear(HIDDEN, HIDDEN)
    sparse = torch.nn.Linear(HIDDEN, 1)
    with torch.no_grad():
        sparse.bias.fill_(0.05)  # some tokens above zero, some below: relu and "w > 0" both matter
    torch.save(colbert.state_dict(), folder / "colbert_linear.pt")
    torch.save(sparse.state_dict(), folder / "sparse_linear.pt")

    flag = BGEM3FlagModel(str(folder), use_fp16=False, devices="cpu")
    output = flag.encode(TEXTS, batch_size=2, max_length=512, return_dense=True, return_sparse=True,
                         return_colbert_vecs=True)
    tokenizer = flag.tokenizer
    special = sorted({tokenizer.convert_tokens_to_ids(tokenizer.special_tokens_map[name])
                      for name in ("cls_token", "eos_token", "pad_token", "unk_token")})
    reference = {
        "texts": TEXTS,
        "input_ids": [tokenizer(text)["input_ids"] for text in TEXTS],
        "special_ids": special,
        "dense": [[float(x) for x in row] for row in output["dense_vecs"]],
        "sparse": [sorted([[int(key), float(value)] for key, value in weights.items()])
                   for weights in output["lexical_weights"]],
        "colbert": [[[float(x) for x in row] for row in vectors] for vectors in output["colbert_vecs"]],
        "versions": {"FlagEmbedding": "1.4.2", "torch": torch.__version__, "transformers": transformers.__version__},
    }
    (folder / "reference.json").write_text(json.dumps(reference))
    print(folder, "sparse entries:", [len(w) for w in reference["sparse"]])


def values(tensor):
    return {"shape": list(tensor.shape), "values": tensor.float().flatten().tolist()}


def write_hand_made_pickles(folder):
    """Zip archives laid out as torch.save's, with pickles no torch.save writes, which the reader
    must refuse: a dict that holds itself (`cycle.pt`) and one that is changed after being put
    inside another (`nested_change.pt`)."""
    pickles = {
        # {} memo 0, 'a', get 0, SETITEM: d['a'] = d.
        "cycle": b"\x80\x02}q\x00X\x01\x00\x00\x00ah\x00s.",
        # {} memo 0, then ( get 0 ) as a tuple (the dict inside it), then d['a'] = 1 via get 0.
        "nested_change": b"\x80\x02}q\x00h\x00\x85q\x01h\x00X\x01\x00\x00\x00aK\x01s0.",
    }
    for name, pickle in pickles.items():
        with zipfile.ZipFile(folder / (name + ".pt"), "w", compression=zipfile.ZIP_STORED) as archive:
            archive.writestr(name + "/data.pkl", pickle)
            archive.writestr(name + "/byteorder", "little")


def make_torch_files(out_dir):
    folder = out_dir / "torch-files"
    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(7)
    linear = torch.nn.Linear(3, 2)
    torch.save(linear.state_dict(), folder / "linear.pt")
    half = {"half": torch.randn(2, 3).half(), "bfloat16": torch.randn(4).bfloat16()}
    torch.save(half, folder / "half.pt")
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    views = {"transposed": base.t(), "row": base[1]}
    torch.save(views, folder / "views.pt")
    torch.save({"weight": torch.ones(2), "step": 3}, folder / "int_value.pt")
    torch.save({"module": torch.nn.Linear(2, 2)}, folder / "module.pt")
    torch.save(linear.state_dict(), folder / "legacy.pt", _use_new_zipfile_serialization=False)
    with zipfile.ZipFile(folder / "linear.pt") as source, \
            zipfile.ZipFile(folder / "deflated.pt", "w", compression=zipfile.ZIP_DEFLATED) as target:
        for item in source.infolist():
            target.writestr(item.filename, source.read(item.filename))
    write_hand_made_pickles(folder)
    reference = {"linear.pt": {name: values(t) for name, t in linear.state_dict().items()},
                 "half.pt": {name: values(t) for name, t in half.items()},
                 "views.pt": {name: values(t) for name, t in views.items()}}
    (folder / "reference.json").write_text(json.dumps(reference, indent=1))
    print(folder)


def main():
    out_dir = pathlib.Path(sys.argv[1])
    make_torch_files(out_dir)
    make_bge_m3(out_dir)


if __name__ == "__main__":
    main()
