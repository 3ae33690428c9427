#!/usr/bin/env python3
"""Writes the small seed corpora of the fuzz targets into fuzz/corpus/<target>/.

The seeds are tiny but valid inputs, so the fuzzers start inside the parsers' happy paths:
hand-built SentencePiece ModelProto files (protobuf wire format), minimal Unigram
tokenizer.json files, a few texts, small safetensors files, model folder files, HTTP request
bodies of each route and stamen.v1 Embed/Score requests. Rerun after changing this file and commit the output:
    python3 fuzz/make_seeds.py
"""
import json
import pathlib
import struct

CORPUS = pathlib.Path(__file__).resolve().parent / "corpus"

# SentencePiece piece types (sentencepiece_model.proto).
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6


def varint(value):
    value &= (1 << 64) - 1  # proto int32 negatives are 10-byte two's complement varints
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def key(number, wire_type):
    return varint(number << 3 | wire_type)


def field_varint(number, value):
    return key(number, 0) + varint(value)


def field_bytes(number, payload):
    if isinstance(payload, str):
        payload = payload.encode("utf-8")
    return key(number, 2) + varint(len(payload)) + payload


def field_float(number, value):
    return key(number, 5) + struct.pack("<f", value)


def model_proto(pieces, trainer=(), normalizer=()):
    """pieces: (text, score, type); trainer/normalizer: lists of already-encoded fields."""
    out = bytearray()
    for text, score, piece_type in pieces:
        body = field_bytes(1, text) + field_float(2, score)
        if piece_type != NORMAL:
            body += field_varint(3, piece_type)
        out += field_bytes(1, body)
    out += field_bytes(2, field_varint(3, 1) + b"".join(trainer))  # model_type = UNIGRAM
    out += field_bytes(3, b"".join(normalizer))
    return bytes(out)


BASE_PIECES = [
    ("<unk>", 0.0, UNKNOWN), ("<s>", 0.0, CONTROL), ("</s>", 0.0, CONTROL),
    ("\u2581", -2.0, NORMAL), ("a", -3.0, NORMAL), ("b", -3.5, NORMAL), ("c", -4.0, NORMAL),
    ("\u2581a", -2.5, NORMAL), ("ab", -3.2, NORMAL), ("\u2581abc", -4.5, NORMAL),
    ("n", -3.0, NORMAL), ("nn", -4.0, NORMAL), ("\u00e9", -5.0, NORMAL), ("\u65e5", -5.0, NORMAL),
]
IDENTITY = [field_bytes(1, "identity"), field_varint(3, 1), field_varint(4, 1), field_varint(5, 1)]


def sentencepiece_seeds():
    seeds = {}
    seeds["unigram_identity.model"] = model_proto(BASE_PIECES, normalizer=IDENTITY)
    seeds["unigram_bos_eos.model"] = model_proto(
        BASE_PIECES,
        trainer=[field_varint(40, 0), field_varint(41, 1), field_varint(42, 2), field_varint(43, -1)],
        normalizer=IDENTITY)
    byte_pieces = [(f"<0x{i:02X}>", 0.0, BYTE) for i in range(256)]
    seeds["unigram_byte_fallback.model"] = model_proto(
        BASE_PIECES + byte_pieces, trainer=[field_varint(35, 1)], normalizer=IDENTITY)
    seeds["unigram_user_defined.model"] = model_proto(
        BASE_PIECES + [("<mask>", 0.0, USER_DEFINED), ("@@", 0.0, USER_DEFINED), ("old", 0.0, UNUSED)],
        normalizer=IDENTITY)
    seeds["unigram_suffix_no_prefix.model"] = model_proto(
        BASE_PIECES,
        trainer=[field_varint(24, 1), field_bytes(44, "[UNK]")],
        normalizer=[field_bytes(1, "identity"), field_varint(3, 0), field_varint(4, 0), field_varint(5, 1)])
    return seeds


def tokenizer_json(vocab, normalizer, pre_tokenizer, post_processor, added_tokens, byte_fallback=False):
    return json.dumps({
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added_tokens,
        "normalizer": normalizer,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": post_processor,
        "decoder": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
        "model": {"type": "Unigram", "unk_id": 3, "vocab": vocab, "byte_fallback": byte_fallback},
    }, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def added(id_, content, special=True):
    return {"id": id_, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": not special, "special": special}


# Ten pieces in the XLM-R layout: <s>=0 <pad>=1 </s>=2 <unk>=3, then normal pieces, <mask> last.
XLMR_VOCAB = [["<s>", 0.0], ["<pad>", 0.0], ["</s>", 0.0], ["<unk>", 0.0], ["\u2581", -2.0],
              ["a", -3.0], ["\u2581a", -2.5], ["b", -3.5], ["ab", -3.2], ["<mask>", 0.0]]
XLMR_ADDED = [added(0, "<s>"), added(1, "<pad>"), added(2, "</s>"), added(3, "<unk>"),
              {**added(9, "<mask>"), "lstrip": True}]
METASPACE = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True}
TEMPLATE = {
    "type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
               {"SpecialToken": {"id": "</s>", "type_id": 0}}],
    "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
             {"SpecialToken": {"id": "</s>", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}},
             {"Sequence": {"id": "B", "type_id": 1}}, {"SpecialToken": {"id": "</s>", "type_id": 1}}],
    "special_tokens": {"<s>": {"id": "<s>", "ids": [0], "tokens": ["<s>"]},
                       "</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]}},
}


def huggingface_seeds():
    seeds = {}
    seeds["xlmr_layout.json"] = tokenizer_json(
        XLMR_VOCAB,
        {"type": "Sequence", "normalizers": [
            {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]},
        METASPACE, TEMPLATE, XLMR_ADDED)
    seeds["roberta_processing.json"] = tokenizer_json(
        XLMR_VOCAB,
        {"type": "Sequence", "normalizers": [
            {"type": "Strip", "strip_left": True, "strip_right": True},
            {"type": "Replace", "pattern": {"String": "``"}, "content": "\""},
            {"type": "Prepend", "prepend": "\u2581"}]},
        {"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, METASPACE]},
        {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0], "trim_offsets": True,
         "add_prefix_space": True},
        XLMR_ADDED)
    byte_vocab = XLMR_VOCAB[:-1] + [[f"<0x{i:02X}>", 0.0] for i in range(256)] + [["<mask>", 0.0]]
    seeds["byte_fallback.json"] = tokenizer_json(
        byte_vocab, None, {**METASPACE, "prepend_scheme": "first"}, None,
        [added(0, "<s>"), added(2, "</s>"), added(3, "<unk>"), added(len(byte_vocab) - 1, "<mask>")],
        byte_fallback=True)
    return seeds


# fuzz_encode reads its first byte as option flags (see fuzz/fuzz_encode.cc), the rest as text.
TEXTS = [
    "Hello world, this is a test.",
    "  leading and   repeated   spaces  ",
    "Ceci n'est pas une pipe. \u00e9\u00e8\u00ea\u00eb \uff21\uff22\uff23 \u2460",
    "\u65e5\u672c\u8a9e\u306e\u6587\u7ae0\u3067\u3059\u3002\u30ab\u30bf\u30ab\u30ca",
    "\u0928\u092e\u0938\u094d\u0924\u0947 \u0645\u0631\u062d\u0628\u0627 \u05e9\u05dc\u05d5\u05dd \U0001f468\u200d\U0001f469\u200d\U0001f467",
    "<s> special <mask> tokens </s> inside text<pad>",
    "tab\tseparated\tpair of texts",
    "nnn aaaa ab abc \u2581\u2581 e\u0301",
]


def encode_seeds():
    seeds = {}
    flags = [0x01, 0x03, 0x00, 0x57, 0x0D, 0x03, 0x01, 0xFF]
    for index, (flag, text) in enumerate(zip(flags, TEXTS)):
        seeds[f"text_{index}"] = bytes([flag]) + text.encode("utf-8")
    seeds["invalid_utf8"] = b"\x03ab\xff\xfe\xc3(\xe2\x82 \xf0\x9f\x98 ok \xed\xa0\x80 \x00 nul"
    seeds["empty_text"] = b"\x01"
    return seeds


def safetensors_file(tensors, metadata=None):
    """A .safetensors file: {name: (dtype, shape, raw bytes)} packed in order."""
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def safetensors_seeds():
    floats = struct.pack("<6f", 0.5, -1.0, 2.0, 0.0, 1e-3, 3.5)
    return {
        "f32": safetensors_file({"embeddings.weight": ("F32", [2, 3], floats)}, {"format": "pt"}),
        "mixed": safetensors_file({
            "a.bf16": ("BF16", [4], struct.pack("<4H", 0x3F80, 0xBF80, 0x4000, 0)),
            "b.f16": ("F16", [2, 2], struct.pack("<4H", 0x3C00, 0xBC00, 0x4000, 0)),
            "c.i64": ("I64", [1], struct.pack("<q", 7)),
            "d.i32": ("I32", [2], struct.pack("<2i", 1, -1)),
            "e.f64": ("F64", [1], struct.pack("<d", 1.0)),
            "scalar": ("F32", [], struct.pack("<f", 1.0)),
            "empty": ("F32", [0, 3], b""),
        }),
        "empty_header": struct.pack("<Q", 2) + b"{}",
        "short": b"\x10\x00\x00",
    }


SEPARATOR = b"\n#file#\n"


def model_config_seeds():
    configs = pathlib.Path(__file__).resolve().parents[1] / ".." / "shared" / "models" / "configs"
    seeds = {}
    bert = {"architectures": ["BertModel"], "model_type": "bert", "hidden_size": 8, "num_hidden_layers": 1,
            "num_attention_heads": 2, "intermediate_size": 16, "hidden_act": "gelu", "layer_norm_eps": 1e-12,
            "max_position_embeddings": 32, "type_vocab_size": 2, "vocab_size": 50, "pad_token_id": 0}
    reranker = dict(bert, architectures=["XLMRobertaForSequenceClassification"], model_type="xlm-roberta",
                    id2label={"0": "LABEL_0"}, num_labels=1)
    qwen = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 8, "num_hidden_layers": 1,
            "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4, "intermediate_size": 16,
            "hidden_act": "silu", "rms_norm_eps": 1e-6, "max_position_embeddings": 64, "vocab_size": 50,
            "rope_theta": 1000000.0}
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
               {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]
    pooling_flags = {"word_embedding_dimension": 8, "pooling_mode_cls_token": False, "pooling_mode_mean_tokens": True}
    pooling_new = {"pooling_mode": "lasttoken", "include_prompt": False}
    prompts = {"prompts": {"query": "query: ", "passage": "passage: "}, "default_prompt_name": "query"}
    sentence = {"max_seq_length": 16, "do_lower_case": False}

    def folder(*parts):
        return SEPARATOR.join(json.dumps(part).encode() for part in parts)

    seeds["bert_only"] = folder(bert)
    seeds["bert_sentence_transformers"] = folder(bert, modules, pooling_flags, prompts, sentence)
    seeds["reranker"] = folder(reranker)
    seeds["qwen_lasttoken"] = folder(qwen, modules[:2], pooling_new, {"prompts": {}}, sentence)
    seeds["bad_module_path"] = folder(bert, [dict(modules[1], path="../x")])
    for name in ("all-MiniLM-L6-v2", "multilingual-e5-large"):
        config = configs / name / "config.json"
        if config.exists():
            seeds[f"real_{name}"] = config.read_bytes()
    return seeds


def http_body_seeds():
    # First byte: 0 OpenAI embeddings, 1 TEI embed, 2 TEI rerank, 3 Cohere rerank, 4 tokenize,
    # 5 TEI predict, 6 TEI similarity, 7 TEI decode.
    bodies = [
        (0, {"input": "Hello world", "model": "m"}),
        (0, {"input": ["a", "b"], "encoding_format": "base64", "dimensions": 8}),
        (0, {"input": [[101, 7592, 102], [1, 2]], "encoding_format": "float"}),
        (0, {"input": [1, 2, 3]}),
        (1, {"inputs": ["query text", "other"], "normalize": False, "truncate": True,
             "truncation_direction": "left", "prompt_name": "query"}),
        (1, {"inputs": "one"}),
        (2, {"query": "what", "texts": ["a", "b"], "raw_scores": True, "return_text": True, "truncate": False}),
        (3, {"query": "what", "documents": ["a", {"text": "b"}], "top_n": 1, "return_documents": True,
             "model": "r"}),
        (4, {"inputs": ["Hello", "world"], "add_special_tokens": False, "prompt_name": "query"}),
        (4, {"inputs": "Hello"}),
        (5, {"inputs": [["a premise", "a hypothesis"], "a text"], "raw_scores": True, "truncate": True}),
        (5, {"inputs": ["a", "b"], "parameters": {}}),
        (6, {"inputs": {"source_sentence": "a", "sentences": ["b", "c"]},
             "parameters": {"truncate": True, "truncation_direction": "left", "prompt_name": "query"}}),
        (7, {"ids": [[101, 7592, 102], [1]], "skip_special_tokens": False}),
        (7, {"ids": [101, 7592, 102]}),
    ]
    seeds = {f"body_{index}": bytes([route]) + json.dumps(body).encode() for index, (route, body) in enumerate(bodies)}
    seeds["not_json"] = b"\x00{\"input\": "
    seeds["not_object"] = b"\x01[1, 2]"
    return seeds


def grpc_request_seeds():
    def ints(values):
        return struct.pack(f"<{len(values)}i", *values)

    def sequences(ids, lengths, types=b""):
        return field_bytes(1, ints(ids)) + field_bytes(2, ints(lengths)) + (field_bytes(3, types) if types else b"")

    embed = field_bytes(1, sequences([101, 7592, 102, 5, 6], [3, 2]))
    embed_options = embed + field_bytes(15, b"mean") + field_varint(3, 0) + field_varint(4, 64)
    score = field_bytes(1, sequences([0, 5, 2, 2, 7, 2], [6], ints([0, 0, 0, 1, 1, 1])))
    # First byte: bit 0 Score, other bits pick the model limits (see fuzz_grpc_request.cc).
    return {
        "embed": b"\x00" + embed,
        "embed_options": b"\x00" + embed_options,
        # A client from before pooling_name: the retired Pooling enum (field 2), refused.
        "embed_retired_pooling": b"\x00" + embed + field_varint(2, 2),
        "embed_small_vocab": b"\x02" + embed,
        "score": b"\x11" + score,
        "bad_lengths": b"\x00" + field_bytes(1, field_bytes(1, ints([1, 2])) + field_bytes(2, ints([5]))),
        "empty": b"\x00",
    }


def torch_file_seeds():
    """The torch.save files of the engine's tests (tools/make_bge_m3_goldens.py), those it reads and
    those it refuses."""
    folder = pathlib.Path(__file__).resolve().parent.parent / "tests" / "engine" / "data" / "torch-files"
    seeds = {path.stem: path.read_bytes() for path in sorted(folder.glob("*.pt"))}
    # Found by the fuzzer: a zip64 locator in a file shorter than a zip64 end record.
    seeds["zip64_locator_in_short_file"] = bytes.fromhex(
        "504b030400000000000050 4b060700000000f905002c00000000010000 00504b050600000000070007 00c1010000 3904f7ff0000"
        .replace(" ", ""))
    return seeds


def write(target, seeds):
    folder = CORPUS / target
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in seeds.items():
        (folder / name).write_bytes(data)


def main():
    write("fuzz_sentencepiece_model", sentencepiece_seeds())
    write("fuzz_tokenizer_json", huggingface_seeds())
    write("fuzz_encode", encode_seeds())
    write("fuzz_safetensors", safetensors_seeds())
    write("fuzz_torch_file", torch_file_seeds())
    write("fuzz_model_config", model_config_seeds())
    write("fuzz_http_bodies", http_body_seeds())
    write("fuzz_grpc_request", grpc_request_seeds())


if __name__ == "__main__":
    main()
